"""A new-user trial with no LLM: ``timem forget "我是护士"`` took "我姐姐是护士。". A Chinese request in the user's own
voice leaves a line whose clause holding its words is about a relative, a friend, 他 or 她, as the English one does
(:mod:`timem.memory.forget_scope`). Real DuckDB file, no LLM."""

from __future__ import annotations

import pytest
from trial_support import fixtures, going

EXCHANGES = [
    ("我喜欢爵士乐。", "不错。"),
    ("我姐姐是护士。", "很辛苦。"),
    ("我是老师。", "好职业。"),
    ("她是护士。", "好的。"),
]


embedder, eng = fixtures(EXCHANGES)


def test_a_chinese_first_person_request_leaves_the_sisters_line(eng):
    plan = eng.forget("mia", "我是护士")
    assert plan.empty, going(plan)


@pytest.mark.parametrize("text", ["我姐姐是护士", "护士"])
def test_a_chinese_request_about_the_sister_or_nobody_takes_her_line(eng, text):
    took = going(eng.forget("mia", text))
    assert "我姐姐是护士" in took and "我是老师" not in took and "爵士乐" not in took, (text, took)


@pytest.mark.parametrize(("line", "theirs"), [
    ("我姐姐是护士。", True),
    ("她是护士。", True),
    ("也许吧，他们都是护士。", True),
    ("我姐姐说她是护士。", True),  # reported speech of someone else about someone else
    ("你姐姐也是护士吗？", True),  # the assistant speaking of the user's sister
    ("我是护士。", False),
    ("我姐姐和我都是护士。", False),  # the user is in it, as in "My brother and I are nurses"
    ("她说我是护士。", False),  # as "Tom said I'm a nurse"
    ("我和她都是护士。", False),
    ("护士这份工作很辛苦。", False),  # no one else in it
])
def test_a_chinese_line_is_someone_elses_when_its_clause_is_about_another_and_not_the_user(line, theirs):
    from timem.memory.forget_scope import someone_elses

    assert someone_elses(f"On 2 May 2024 (Thursday) 09:00:\nMia: {line}", ["护士"]) is theirs


@pytest.mark.parametrize(("text", "own", "other"), [
    ("我是护士", True, False), ("我们都是护士", True, False), ("我姐姐是护士", False, True),
    ("她是护士", False, True), ("我和我姐姐都是护士", False, False), ("护士", False, False),
])
def test_a_chinese_request_is_read_as_the_users_own_or_someone_elses(text, own, other):
    from timem.memory.forget_scope import about_someone_else, in_own_voice

    assert (in_own_voice(text), about_someone_else(text)) == (own, other)
