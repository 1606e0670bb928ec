"""A new-user trial of the memory layer with no LLM: "My job is boring" stored ``job: boring`` and "My hometown is
nice" ``hometown: nice``. "My job is X" now needs an occupation as the other job rules do, and "My hometown is X" a
place under the rules of "I'm from X". Real DuckDB file, the rules, no LLM."""

from __future__ import annotations

import pytest
from trial_support import fixtures, say

embedder, eng = fixtures()


def _items(eng, line: str) -> list[tuple[str, str]]:
    say(eng, [(line, "Noted.")])
    return sorted((i.attribute, i.value) for i in eng.memory_items("mia") if i.attribute in ("job", "hometown"))


@pytest.mark.parametrize("line", ["My job is boring.", "My job is stressful these days.", "My job is killing me.",
                                  "My job is in Lisbon.", "My hometown is nice.", "My hometown is boring.",
                                  "My hometown is really small.", "My hometown is far away.", "My hometown is cork."])
def test_my_job_or_hometown_is_no_occupation_or_place(eng, line):
    assert _items(eng, line) == []


@pytest.mark.parametrize(("line", "item"), [("My job is nurse.", ("job", "nurse")),
                                            ("My job title is senior analyst now.", ("job", "senior analyst")),
                                            ("My hometown is Cork, but I live in Dublin.", ("hometown", "Cork")),
                                            ("My hometown is Cork in Ireland.", ("hometown", "Cork")),
                                            ("My hometown is berlin.", ("hometown", "Berlin")),
                                            ("My hometown is Lisbon.", ("hometown", "Lisbon"))])
def test_my_job_or_hometown_is_an_occupation_or_place(eng, line, item):
    assert _items(eng, line) == [item]
