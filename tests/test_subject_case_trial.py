"""A new user's trial: the same person got two current home cities when the subject's case differed. A chat turn as
"Leo" said "I live in Dublin", then a turn of user id ``leo`` without a name "I moved to Galway": "Leo's home city:
Dublin" and "leo's home city: Galway" both held. Subjects match case-insensitively; the spelling first stored stays
(:func:`timem.memory.history.stored_subject`). Real DuckDB, no LLM."""

from __future__ import annotations

from datetime import timedelta

from trial_support import T0, fixtures

embedder, eng = fixtures()


def _homes(eng, user_id: str) -> list[tuple[str, str, bool]]:
    return [(i.subject, i.value, i.is_open) for i in eng.memory_items(user_id) if i.attribute == "home city"]


def test_the_user_named_and_unnamed_is_one_subject(eng):
    eng.remember("leo", "s0", "I live in Dublin", T0, reply="Noted.", user_name="Leo")
    eng.remember("leo", "s1", "I moved to Galway", T0 + timedelta(days=1), reply="Noted.")
    eng.extract_items(["leo"])
    assert _homes(eng, "leo") == [("Leo", "Dublin", False), ("Leo", "Galway", True)]


def test_the_first_spelling_stays_when_the_name_comes_later(eng):
    eng.remember("leo", "s0", "I live in Dublin", T0, reply="Noted.")
    eng.remember("leo", "s1", "I moved to Galway", T0 + timedelta(days=1), reply="Noted.", user_name="LEO")
    eng.extract_items(["leo"])
    assert _homes(eng, "leo") == [("leo", "Dublin", False), ("leo", "Galway", True)]
