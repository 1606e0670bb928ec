"""A value that ended with nothing after it is still given to a question about the present, with its end (a new-user
trial: after "I got fired from Microsoft yesterday", "Where do I work?" got no employer line and the embedded model
answered "Microsoft" from the excerpt "Sorry, I meant I work at Microsoft.")."""

from __future__ import annotations

from datetime import timedelta

from trial_support import T0, fixtures

EXCHANGES = [
    ("I'm a software engineer at Google.", "Nice!"),
    ("Sorry, I meant I work at Microsoft.", "Noted: Microsoft."),
    ("I live in Dublin.", "Lovely city."),
    ("I got fired from Microsoft yesterday.", "I'm sorry to hear that."),
]

embedder, eng = fixtures(EXCHANGES)


def test_an_employer_that_ended_is_given_with_its_end(eng):
    res = eng.recall("mia", "Where do I work?", T0 + timedelta(days=10))
    first = res.context.splitlines()[0]
    assert "employer: Microsoft" in first and "ended 2024-05-03, nothing since" in first, res.context
    assert "– now] Mia's employer" not in res.context


def test_asked_before_the_end_the_employer_holds(eng):
    res = eng.recall("mia", "Where do I work?", T0 + timedelta(days=1, hours=1))  # the end: "yesterday" = 3 May
    assert "[fact, valid 2024-05-01 – now] Mia's employer: Microsoft" in res.context, res.context
    assert "ended" not in res.context


def test_an_open_value_is_given_alone(eng):
    res = eng.recall("mia", "Where do I live?", T0 + timedelta(days=10))
    assert res.context.splitlines()[0].startswith("[fact, valid 2024-05-03 – now] Mia's home city: Dublin")
    assert "ended" not in res.context
