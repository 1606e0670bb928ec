"""Found by trying it: "I work as a nurse at St James's", then "I joined Google" (or "I joined Google last month"):
the rules read nothing, while "I just started at Google" was read as a new employer that ends the old one and its job
title. "I joined X" is now read as "I just started at X" is, but not when X is a club, a gym, a choir, a party or a
service one signs up to ("I joined a gym / the choir / the Sierra Club / Strava"), nor a person one joins ("I joined
Sarah for lunch"). Real DuckDB file, the rules, no LLM."""

from __future__ import annotations

import pytest
from trial_support import fixtures, say_lines

from timem.memory.rules import extract_statements

embedder, eng = fixtures()


def _held(eng) -> dict[str, str]:
    return {i.attribute: i.value for i in eng.memory_items("mia") if i.is_open and i.attribute in ("job", "employer")}


def _items(eng) -> list[tuple]:
    """Every job and employer item without its id: what a phrasing made of the history."""
    return sorted((i.attribute, i.value, i.valid_from, i.valid_to, i.superseded_by is not None, i.status)
                  for i in eng.memory_items("mia", status=None) if i.attribute in ("job", "employer"))


# joining a company ends the old employer and job as starting at it does: the phrasings are cases of
# tests/test_employer_change_ends_job.py::test_a_new_employer_ends_the_old_job_title


@pytest.mark.parametrize("when", ["", " last month", " two weeks ago", " in March"])
def test_joined_is_read_as_just_started(tmp_path, store, embedder, when):
    """The same items, validity and supersession as "I just started at Google", with a time or without."""
    from trial_support import engine

    eng_a = engine(tmp_path, store, embedder)
    say_lines(eng_a, ["I work as a nurse at St James's", f"I joined Google{when}."])
    joined = _items(eng_a)
    eng_a.erase_user("mia")
    say_lines(eng_b := engine(tmp_path, store, embedder),
              ["I work as a nurse at St James's", f"I just started at Google{when}."])
    assert joined == _items(eng_b) and ("employer", "Google") in {(a, v) for a, v, *_ in joined}


def test_joined_with_a_job_gives_both(eng):
    say_lines(eng, ["I work as a nurse at St James's", "I've just joined Acme as a designer."])
    assert _held(eng) == {"employer": "Acme", "job": "designer"}


@pytest.mark.parametrize("line", [
    "I joined a gym", "I joined a gym last month.", "I joined the choir.", "I joined a book club last week.",
    "I joined the Sierra Club.", "I joined Gold's Gym last week.", "I joined Planet Fitness.", "I joined Chelsea FC.",
    "I joined the Green Party.", "I joined Strava.", "I joined Facebook last year.", "I joined Weight Watchers.",
    "I joined Sarah for lunch.", "I joined Mike at the pub.", "I joined Anna and Tom on a hike.", "I joined in.",
    "I joined them for dinner.",
])
def test_joining_what_is_no_employer_changes_nothing(eng, line):
    say_lines(eng, ["I work as a nurse at St James's", line])
    assert _held(eng) == {"employer": "St James's", "job": "nurse"}


def test_a_platform_with_a_job_is_an_employer():
    """"I joined Facebook" signs up; "as an engineer" says it is a workplace."""
    assert [(s.attribute, s.value) for s in extract_statements("I joined Facebook as an engineer.")] == \
        [("employer", "Facebook"), ("job", "engineer")]
    assert extract_statements("I joined Facebook.") == []
