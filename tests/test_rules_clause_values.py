"""What a new user's trial found the rules read wrong in one sentence (:func:`timem.memory.rules.extract_statements`):
a value that ran on into the next clause ("Google I"), a "my X is Y" value that ran on or was not read, a birthday
stored "on 3 March", a hobby said with "I play", and "I also …" read as nothing. No store, no LLM."""

from __future__ import annotations

import pytest

from timem.memory.rules import extract_statements


def _read(text: str) -> list[tuple[str | None, str]]:
    return [(s.attribute, s.value) for s in extract_statements(text)]


@pytest.mark.parametrize(("text", "expected"), [
    ("After I quit my job at Google I travelled.", [("employer", "Google")]),
    ("After I quit my job at Google I'm travelling more.", [("employer", "Google")]),
    ("I work at Google Ireland as a designer.", [("employer", "Google Ireland"), ("job", "designer")]),
    ("I live in Porto I think.", [("home city", "Porto")]),
])
def test_a_value_stops_at_the_next_clauses_subject(text, expected):
    assert _read(text) == expected
