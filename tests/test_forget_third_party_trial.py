"""A new-user trial with no LLM: ``timem forget "I work as a nurse"`` also took "My brother is a nurse at the
hospital". A request in the user's own voice leaves a line where the word it matched belongs to someone else
(:mod:`timem.memory.forget_scope`). Real DuckDB file, no LLM."""

from __future__ import annotations

import pytest
from trial_support import fixtures, going

EXCHANGES = [
    ("I work as a nurse.", "That must be demanding."),
    ("My brother is a nurse at the hospital.", "A family of carers!"),
    ("My sister Ana said she is a nurse too.", "Three of you!"),
    ("Honestly, my friend is a teacher and I am a nurse.", "Great team."),
]


embedder, eng = fixtures(EXCHANGES)


def test_a_first_person_request_leaves_a_third_partys_line(eng):
    plan = eng.forget("mia", "I work as a nurse")
    took = going(plan)
    assert "I work as a nurse" in took and "I am a nurse" in took, took  # the user's own clauses
    assert "My brother is a nurse" not in took and "she is a nurse" not in took, took
    assert [i.value for i in plan.items] == ["nurse"]


@pytest.mark.parametrize("text", ["my brother is a nurse", "that my brother is a nurse at the hospital", "nurse"])
def test_a_request_about_someone_else_or_nobody_still_takes_their_line(eng, text):
    assert "My brother is a nurse" in going(eng.forget("mia", text)), text
