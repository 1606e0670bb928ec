"""A new-user trial: Mia said (in Chinese) what she did at the weekend, 这个周末我去爬山了。, then asked
我周末做了什么？ ("What did I do at the weekend?") and got an empty context.

Why: 周末 is a time word, so it was a stop word of the question (:data:`timem.recall.cjk.CJK_STOPWORDS`), and the
bare 周末 names no window the time channel resolves; the only keyword left was 做 ("do"), which no memory holds, and
the score gate keeps a leaf of a Chinese question only on a keyword match or a cosine of at least ``gate_floor_cjk``
(0.7; MiniLM gave the memory 0.57). A time noun of a Chinese question that names no resolved window (周末, 晚上 ...)
is now a keyword (:func:`timem.recall.planner.make_plan`); English questions are planned as before."""

from __future__ import annotations

from datetime import timedelta

from trial_support import T0, fixtures

from timem.recall import cjk
from timem.recall.keywords import extract_keywords
from timem.recall.planner import make_plan

EXCHANGES = [("这个周末我去爬山了。", "听起来很棒！"), ("我下周要去北京出差。", "祝你顺利。")]
embedder, eng = fixtures(EXCHANGES)


def test_what_i_did_at_the_weekend_finds_the_weekend_line(eng):
    got = eng.recall("mia", "我周末做了什么？", T0 + timedelta(days=2))
    assert "我去爬山了" in got.context, (got.trace.plan.keywords, got.trace.gate.decisions)
    assert "北京出差" not in got.context, got.context  # a line that does not say 周末 stays out
    assert got.trace.plan.keywords == ["做", "周末"] and got.trace.plan.time_window is None


def test_a_time_noun_is_a_keyword_only_when_it_names_no_resolved_window(eng):
    cfg, at = eng.config, T0 + timedelta(days=2)
    assert make_plan("simple", "我晚上一般做什么？", at, cfg, "override").keywords == ["一般", "做", "晚上"]
    planned = make_plan("simple", "我上个月的周末做了什么？", at, cfg, "override")  # 上个月: a window; 周末 no keyword
    assert planned.time_window is not None and "周末" not in planned.keywords, planned
    assert cjk.time_nouns("这个周末我去爬山了。") == ["周末"] and cjk.time_nouns("What about the weekend?") == []


def test_english_questions_are_planned_as_before(eng):
    """The English twin keeps its keywords (weekend stays a stop word; its cosine passes the English floor)."""
    cfg, at = eng.config, T0 + timedelta(days=2)
    for question in ("What did I do on the weekend?", "What do I do in the evening?", "Where do I hike?"):
        assert make_plan("simple", question, at, cfg, "override").keywords == extract_keywords(question), question
