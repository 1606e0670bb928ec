"""A new-user trial of the memory layer with no LLM: "I work as a nurse at Santa Maria hospital." then "I quit my job
as a nurse. I'm a teacher now." left ``employer: Santa Maria`` open beside ``job: teacher``. Quitting the job now ends
the employer stated with it, as a new job does; and the employer keeps its whole name, "Santa Maria hospital".
Real DuckDB file, the rules, no LLM."""

from __future__ import annotations

from trial_support import fixtures, say

embedder, eng = fixtures()


def test_quitting_the_job_ends_its_employer(eng):
    say(eng, [("I work as a nurse at Santa Maria hospital.", "Noted."),
              ("I quit my job as a nurse. I'm a teacher now.", "Good luck!")])
    items = {(i.attribute, i.value): i for i in eng.memory_items("mia") if i.attribute in ("job", "employer")}
    assert set(items) == {("job", "nurse"), ("job", "teacher"), ("employer", "Santa Maria hospital")}, items
    assert [k for k, i in items.items() if i.is_open] == [("job", "teacher")]


def test_quitting_alone_ends_the_employer(eng):
    say(eng, [("I work as a nurse at Santa Maria hospital.", "Noted."), ("I quit my job as a nurse.", "Oh!")])
    assert not [i for i in eng.memory_items("mia") if i.is_open and i.attribute in ("job", "employer")]
