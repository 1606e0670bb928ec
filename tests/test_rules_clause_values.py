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


@pytest.mark.parametrize(("text", "expected"), [
    ("I also lost my job at Door Dash this month.", [("employer", "Door Dash", True, False)]),
    ("I also moved to Porto.", [("home city", "Porto", False, False)]),
    ("I also love jazz.", [("likes", "jazz", False, False)]),
    ("We also settled in Braga.", [("home city", "Braga", False, False)]),
    ("I've also started working as a nurse.", [("job", "nurse", False, False)]),
    # a since-clause refers to an earlier change: read, but as background (it dates nothing)
    ("Since I lost my job at Door Dash, things have been tough.", [("employer", "Door Dash", False, True)]),
    ("Ever since I moved to Porto, I feel great.", [("home city", "Porto", False, True)]),
    ("I've been happier ever since I moved to Porto.", [("home city", "Porto", False, True)]),
    ("Since I moved to Porto, I work as a nurse.",
     [("home city", "Porto", False, True), ("job", "nurse", False, False)]),
    ("I've been working as a nurse since May.", [("job", "nurse", False, False)]),
    ("Since I moved here I love jazz.", [("likes", "jazz", False, False)]),  # the main clause is news
])
def test_i_also_and_since_clauses(text, expected):
    assert [(s.attribute, s.value, s.held, s.background) for s in extract_statements(text)] == expected
