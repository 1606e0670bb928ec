"""Found by trying it: "I work as a nurse at St James's", then "I just started at Google": Google was not read, and when
the employer did change ("I started a new job at Google") the job title "nurse" stayed open beside it. A change of
employer ends the old job title, unless the turn states a job again. Real DuckDB file, the rules, no LLM."""

from __future__ import annotations

from datetime import timedelta

import pytest
from trial_support import T0, fixtures, say_lines

embedder, eng = fixtures()


def _held(eng) -> dict[str, str]:
    return {i.attribute: i.value for i in eng.memory_items("mia") if i.is_open and i.attribute in ("job", "employer")}


@pytest.mark.parametrize("change", ["I just started at Google", "I started a new job at Google.", "I joined Google",
                                    "I joined Google.", "I've just joined Google!", "I joined Google's cloud team."])
def test_a_new_employer_ends_the_old_job_title(eng, change):
    say_lines(eng, ["I work as a nurse at St James's", change])
    assert _held(eng) == {"employer": "Google"}
    items = {i.value: i for i in eng.memory_items("mia")}
    nurse, google = items["nurse"], items["Google"]
    assert nurse.valid_to == google.valid_from == T0 + timedelta(days=1) and nurse.superseded_by == google.id
    assert items["St James's"].superseded_by == google.id


@pytest.mark.parametrize(("change", "held"), [
    ("I work at Google as a nurse now", {"employer": "Google", "job": "nurse"}),  # the title said again: it stays
    ("I work at Google as a software engineer", {"employer": "Google", "job": "software engineer"}),
])
def test_a_new_employer_with_a_job_leaves_the_job_to_that_statement(eng, change, held):
    say_lines(eng, ["I work as a nurse at St James's", change])
    assert _held(eng) == held
    (nurse, *_) = [i for i in eng.memory_items("mia") if i.value == "nurse"]
    if held["job"] == "nurse":  # one nurse item, open since it was first said
        assert nurse.valid_from == T0 and nurse.is_open and len([i for i in eng.memory_items("mia")
                                                                 if i.attribute == "job"]) == 1


def test_a_first_employer_or_a_quit_leaves_the_job(eng):
    """Naming an employer for the first time says where the job is done; "I quit Google" ends the employer only."""
    say_lines(eng, ["I'm a nurse.", "I work at St James's hospital.", "I quit St James's hospital."])
    assert _held(eng) == {"job": "nurse"}


def test_forgetting_the_new_employer_brings_the_job_back(eng):
    say_lines(eng, ["I work as a nurse at St James's", "I just started at Google"])
    eng.forget("mia", "I just started at Google", confirm=True)
    assert _held(eng) == {"employer": "St James's", "job": "nurse"}


def test_forgetting_the_employer_between_two_changes_ends_the_job_at_the_next_one(eng):
    """Forgetting Google brought the nurse job back "now", beside Meta, whose change would have ended it."""
    say_lines(eng, ["I work as a nurse at St James's", "I just started at Google", "I started a new job at Meta."])
    plan = eng.forget("mia", "I just started at Google", confirm=True)
    assert {i.label() for i in plan.reopened} == {"Mia's employer: St James's", "Mia's job: nurse"}
    assert _held(eng) == {"employer": "Meta"}
    meta = next(i for i in eng.memory_items("mia") if i.value == "Meta")
    nurse = next(i for i in eng.memory_items("mia") if i.value == "nurse")
    assert nurse.valid_to == meta.valid_from == T0 + timedelta(days=2) and nurse.superseded_by == meta.id
