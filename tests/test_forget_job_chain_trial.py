"""Jobs A -> B -> C, then the middle one forgotten: what is left is read again as a chain. Acme held "now" again
beside the job that had come after it when the job change that had ended it (a new job with no employer named,
:func:`timem.memory.history.end_old_employer`) was forgotten; and a statement made after a forget did not see the
value that held again ("I quit my job at Acme" left Acme the employer "now"; "I work at Acme" wrote a second Acme).
Real DuckDB file, the rules, no LLM."""

from __future__ import annotations

from trial_support import fixtures, say_lines

embedder, eng = fixtures()


def _employers(eng) -> list[tuple[str, object]]:
    items = sorted((i for i in eng.memory_items("mia") if i.attribute == "employer"), key=lambda i: i.valid_from)
    return [(i.value, i.valid_to) for i in items]


def test_forgetting_the_middle_employer_ends_the_first_where_the_third_begins(eng):
    days = say_lines(eng, ["I work at Acme", "I now work at Brightly", "I started a new job at Corvid"])
    eng.forget("mia", "forget that I worked at Brightly", confirm=True)
    assert _employers(eng) == [("Acme", days[2]), ("Corvid", None)]
    context = eng.recall("mia", "Where do I work now?", question_time=days[2]).context
    assert [line for line in context.splitlines() if "employer" in line and "– now]" in line] == [
        line for line in context.splitlines() if "employer: Corvid" in line], context


def test_forgetting_the_second_of_two_employers_brings_the_first_back(eng):
    say_lines(eng, ["I work at Acme", "I now work at Brightly"])
    eng.forget("mia", "forget that I worked at Brightly", confirm=True)
    assert _employers(eng) == [("Acme", None)]


def test_a_job_change_after_the_forgotten_one_ends_the_employer(eng):
    days = say_lines(eng, ["I work as a nurse at Acme", "I started working as a teacher",
                           "I started working as a baker"])
    eng.forget("mia", "I work as a teacher", confirm=True)
    assert _employers(eng) == [("Acme", days[2])]  # the baker job ends it, as it would have with no teacher
    jobs = [(i.value, i.valid_to) for i in eng.memory_items("mia") if i.attribute == "job"]
    assert jobs == [("nurse", days[2]), ("baker", None)]
    plan = eng.forget("mia", "I work as a baker")  # the preview says the same
    assert [(i.value, i.valid_to) for i in plan.reopened if i.attribute == "employer"] == [("Acme", None)]


def test_a_promotion_after_the_forgotten_job_keeps_the_employer(eng):
    say_lines(eng, ["I work as a designer at Acme", "I started working as a teacher",
                    "I started working as a senior designer"])
    eng.forget("mia", "I work as a teacher", confirm=True)
    assert _employers(eng) == [("Acme", None)]


def test_quitting_the_employer_that_holds_again_ends_it(eng):
    days = say_lines(eng, ["I work at Acme", "I now work at Brightly"])
    eng.forget("mia", "forget that I worked at Brightly", confirm=True)
    eng.remember("mia", "s-quit", "I quit my job at Acme", days[1].replace(day=days[1].day + 3), reply="Ok.",
                 user_name="Mia")
    eng.extract_items(["mia"])
    (acme,) = [i for i in eng.memory_items("mia") if i.attribute == "employer"]
    assert acme.valid_to is not None and acme.valid_to > days[1], acme


def test_restating_the_employer_that_holds_again_merges_into_it(eng):
    days = say_lines(eng, ["I work at Acme", "I now work at Brightly"])
    eng.forget("mia", "forget that I worked at Brightly", confirm=True)
    eng.remember("mia", "s-again", "I work at Acme", days[1].replace(day=days[1].day + 3), reply="Ok.",
                 user_name="Mia")
    eng.extract_items(["mia"])
    assert _employers(eng) == [("Acme", None)]
    (acme,) = [i for i in eng.memory_items("mia") if i.attribute == "employer"]
    assert len(acme.source_ids) == 2
