"""A new user's trial: Mia lives in Lisbon and works as a nurse at Santa Maria hospital, moves to Porto, starts
working as a teacher, corrects Porto to Braga, then forgets the teacher job and Braga. What the forgotten values had
ended holds again: in the month's L5 profile ("Facts as of …", which listed neither Porto nor nurse), and for the
employer the new job had ended (Santa Maria hospital stayed ended at the teacher statement). Real DuckDB, no LLM."""

from __future__ import annotations

from trial_support import fixtures, say_lines

LINES = ["I live in Lisbon and I work as a nurse at Santa Maria hospital", "I moved to Porto last week",
         "I started working as a teacher", "Actually, I moved to Braga, not Porto"]

embedder, eng = fixtures()


def _current(eng) -> set[str]:
    return {i.label() for i in eng.memory_items("mia") if i.is_open}


def test_the_profile_lists_what_holds_again_after_a_forget(eng):
    say_lines(eng, LINES)
    eng.forget("mia", "I work as a teacher", confirm=True)
    eng.forget("mia", "I live in Braga", confirm=True)
    eng.consolidate("mia", flush=True)
    (may,) = [n for n in eng.nodes("mia", 5) if n.window_key == "month:2024-05"]
    facts = may.content.split("Facts as of ", 1)[-1]
    # "I moved to Porto last week" (2 May) dates the move: the week of 22 April, before Lisbon was said (1 May)
    assert "- Mia's home city: Porto (since 2024-04-22)" in facts, may.content
    assert "- Mia's job: nurse (since 2024-05-01)" in facts, may.content
    assert "teacher" not in facts and "Braga" not in facts, may.content


def test_forgetting_the_new_job_brings_back_the_employer_it_ended(eng):
    say_lines(eng, LINES)
    employer = next(i for i in eng.memory_items("mia") if i.attribute == "employer")
    assert not employer.is_open  # the teacher job ended it
    plan = eng.forget("mia", "I work as a teacher")
    assert {i.label() for i in plan.reopened} == {"Mia's job: nurse", "Mia's employer: Santa Maria hospital"}
    eng.forget("mia", "I work as a teacher", confirm=True)
    assert {"Mia's job: nurse", "Mia's employer: Santa Maria hospital"} <= _current(eng)
    eng.consolidate("mia", flush=True)
    (may,) = [n for n in eng.nodes("mia", 5) if n.window_key == "month:2024-05"]
    assert "- Mia's employer: Santa Maria hospital (since 2024-05-01)" in may.content, may.content


def test_a_later_employer_still_ends_the_one_that_holds_again(eng):
    say_lines(eng, [*LINES[:3], "I work at Kruste bakery as a baker"])
    eng.forget("mia", "I work as a teacher", confirm=True)
    held = {i.value: i for i in eng.memory_items("mia") if i.attribute == "employer"}
    assert held["Kruste bakery"].is_open and not held["Santa Maria hospital"].is_open
