"""A new-user trial with no LLM: ``timem forget "my brother is a nurse"`` took the item ``job: nurse``, "I work as a
nurse.", the sister's line and every reply. A request about someone else ("my brother …", "my sister Ana …", a name,
"我姐姐 …") reaches only lines whose matched clause is about that party, never the user's own lines or items
(:mod:`timem.memory.forget_scope`). Real DuckDB file, no LLM."""

from __future__ import annotations

import pytest
from trial_support import fixtures, going

EXCHANGES = [
    ("I work as a nurse.", "That must be demanding."),
    ("My brother is a nurse at the hospital.", "A family of carers!"),
    ("My sister Ana said she is a nurse too.", "Three of you!"),
    ("Tom is a nurse in Leeds.", "Nice."),
]


embedder, eng = fixtures(EXCHANGES)


def test_a_request_about_the_brother_takes_his_line_and_its_reply_only(eng):
    plan = eng.forget("mia", "my brother is a nurse")
    took = going(plan)
    assert "My brother is a nurse" in took and "A family of carers" in took, took
    for kept in ("I work as a nurse", "she is a nurse", "That must be demanding", "Three of you", "Tom"):
        assert kept not in took, (kept, took)
    assert plan.items == [], [i.label() for i in plan.items]


@pytest.mark.parametrize(("text", "reached"), [
    ("my sister Ana is a nurse", "she is a nurse"),
    ("Tom is a nurse", "Tom is a nurse"),
])
def test_a_request_about_someone_else_reaches_only_their_line(eng, text, reached):
    plan = eng.forget("mia", text)
    took = going(plan)
    assert reached in took, (text, took)
    assert "I work as a nurse" not in took and plan.items == [], (text, took)
    assert sum(x in took for x in ("My brother", "she is a nurse", "Tom is")) == 1, (text, took)


def test_the_user_own_request_still_takes_the_item(eng):
    plan = eng.forget("mia", "I work as a nurse")
    assert [i.value for i in plan.items] == ["nurse"] and "I work as a nurse" in going(plan)
