"""LoCoMo conv-30 (real data), as a new user's trial found it: "I also lost my job at Door Dash this month" (20 Jan
2023) was not read at all, and "Since I lost my job at Door Dash, things have been tough" (16 March) was read as the
job ending on 16 March. "I also X" reads as "I X"; a since-clause refers to an earlier change and dates none at the
time it is said. Real DuckDB, no LLM."""

from __future__ import annotations

from trial_support import fixtures, say_lines

embedder, eng = fixtures()


def _items(eng, attribute: str):
    return [i for i in eng.memory_items("mia", status=None) if i.attribute == attribute]


def test_the_job_ends_when_it_was_lost_not_when_it_was_looked_back_on(eng):
    times = say_lines(eng, ["I work at Door Dash as a driver.", "I also lost my job at Door Dash.",
                            "Since I lost my job at Door Dash, things have been tough."])
    (employer,) = _items(eng, "employer")
    assert employer.value == "Door Dash" and employer.valid_to == times[1]


def test_a_since_clause_with_nothing_recorded_dates_no_end(eng):
    say_lines(eng, ["I love jazz.", "Since I lost my job at Door Dash, things have been tough."])
    assert _items(eng, "employer") == []  # no end made up on the day it was looked back on


def test_a_since_clause_ends_what_is_still_recorded_as_holding_at_the_latest(eng):
    times = say_lines(eng, ["I work at Door Dash as a driver.", "I love jazz.",
                            "Since I lost my job at Door Dash, things have been tough."])
    (employer,) = _items(eng, "employer")
    assert employer.valid_to == times[2]  # over by then, whenever it ended


def test_a_since_clause_starts_nothing_and_restates_what_is_known(eng):
    times = say_lines(eng, ["I moved to Porto.", "Ever since I moved to Porto, I feel great."])
    (home,) = _items(eng, "home city")
    assert (home.value, home.valid_from, home.is_open) == ("Porto", times[0], True)
    assert len(home.source_ids) == 2  # the since-clause is a further source of the same move


def test_a_since_clause_alone_starts_no_home_city(eng):
    say_lines(eng, ["Ever since I moved to Porto, I feel great."])
    assert _items(eng, "home city") == []
