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


@pytest.mark.parametrize(("text", "expected"), [
    ("My morning drink is espresso.", [("morning drink", "espresso")]),
    ("My drink of choice is a double espresso.", [("drink", "espresso")]),
    ("My favourite drink is matcha.", [("favourite drink", "matcha"), ("likes", "matcha")]),  # no current drink
    ("My name is Leo and I'm a software engineer at Google.",
     [("employer", "Google"), ("job", "software engineer"), ("name", "Leo")]),
    ("My name is Leo.", [("name", "Leo")]),
    ("My hometown is Cork and I miss it.", [("hometown", "Cork")]),
])
def test_my_x_is_y(text, expected):
    assert _read(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("My birthday is on 3 March.", [("birthday", "3 March")]),
    ("My birthday is 3 March.", [("birthday", "3 March")]),
    ("I play chess on weekends.", [("hobby", "chess")]),
    ("I play the piano.", [("hobby", "piano")]),
    ("I play chess and tennis.", [("hobby", "chess"), ("hobby", "tennis")]),
    ("I play with my kids on weekends.", []),
    ("I play a role in the team.", []),
    ("I used to play chess.", []),
])
def test_a_birthday_date_and_a_hobby_played(text, expected):
    assert _read(text) == expected
