"""A new-user trial with no LLM: ``timem forget "I work as a nurse"`` also took "Tom said he's a nurse" and the
assistant's "So your brother is a nurse now!": reported speech of a third party and the assistant's line about the
user's brother are someone else's (:func:`timem.memory.forget_scope.someone_elses`), while "I told Tom I'm a nurse"
is the user's own. Real DuckDB file, no LLM."""

from __future__ import annotations

from trial_support import fixtures, going

EXCHANGES = [
    ("I work as a nurse.", "That must be demanding."),
    ("Tom said he's a nurse at St Mary's.", "Small world."),
    ("My sister told me she works as a nurse now.", "Good for her."),
    ("Lena says she is a nurse too.", "So many carers."),
    ("My brother just qualified at the hospital.", "So your brother is a nurse now!"),
    ("Then I told Tom I'm a nurse as well.", "He must have been surprised."),
]


embedder, eng = fixtures(EXCHANGES)


def test_a_first_person_request_leaves_reported_speech_and_the_assistants_third_party_line(eng):
    took = going(eng.forget("mia", "I work as a nurse"))
    assert "I work as a nurse" in took and "I told Tom I'm a nurse" in took, took  # the user's own
    for other in ("Tom said he's a nurse", "My sister told me she works as a nurse", "Lena says she is a nurse",
                  "your brother is a nurse"):
        assert other not in took, (other, took)


def test_a_request_about_nobody_still_takes_them(eng):
    took = going(eng.forget("mia", "nurse"))
    assert "Tom said he's a nurse" in took and "your brother is a nurse" in took, took


def test_a_request_about_tom_takes_only_the_line_about_tom(eng):
    took = going(eng.forget("mia", "Tom is a nurse"))  # not the user's "I told Tom I'm a nurse", nor the brother
    assert "Tom said he's a nurse" in took, took
    assert "I told Tom I'm a nurse" not in took and "your brother is a nurse" not in took, took
