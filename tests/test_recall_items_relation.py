"""A question about a relation of the asker gets none of the asker's own items unless it names the value (a new-user
trial: "Where does my sister live?" put "Zoe's home city: Lisbon" first; the sister's line was only an excerpt)."""

from __future__ import annotations

from datetime import timedelta

from trial_support import T0, fixtures

EXCHANGES = [
    ("I live in Lisbon.", "Lovely city."),
    ("My sister lives in Paris and works at a bakery.", "Nice!"),
]

embedder, eng = fixtures(EXCHANGES)
ASKED = T0 + timedelta(days=5)


def test_a_question_about_my_sister_gets_not_my_own_city(eng):
    res = eng.recall("mia", "Where does my sister live?", ASKED)
    assert "home city" not in res.context, res.context
    assert "My sister lives in Paris" in res.context, res.context
    assert res.trace.items == []


def test_a_question_in_my_own_voice_still_gets_my_city(eng):
    for q in ("Where do I live?", "Do I live near my sister?", "我住在哪里？"):
        res = eng.recall("mia", q, ASKED)
        assert "Mia's home city: Lisbon" in res.context, (q, res.context)


def test_a_question_about_my_sister_that_names_the_value_gets_it(eng):
    res = eng.recall("mia", "Does my sister also live in Lisbon?", ASKED)
    assert "Mia's home city: Lisbon" in res.context, res.context


def test_a_question_naming_a_participant_with_no_items_gets_none(eng):
    """LoCoMo conv-30: "When Jon has lost his job as a banker?" got "Gina's employer: Door Dash" first (Jon has no
    items; the question names him)."""
    res = eng.recall("mia", "Where does Tom live?", ASKED, participants=["Mia", "Tom"])
    assert "home city" not in res.context, res.context
    res = eng.recall("mia", "Where does Mia live?", ASKED, participants=["Mia", "Tom"])
    assert "Mia's home city: Lisbon" in res.context, res.context
