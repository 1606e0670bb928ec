"""Pure parts of recall: score fusion by hand arithmetic, keywords, time windows, context layout."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from timem.models import Level, MemoryNode
from timem.recall.context import date_label, render_context
from timem.recall.keywords import clean_keywords, extract_keywords
from timem.recall.leaves import fuse
from timem.recall.time_window import resolve_time_window
from timem.tokens import count_tokens


def test_fusion_matches_hand_arithmetic():
    # cosine: a 0.8, b 0.4, c -0.2 (clipped to 0); bm25: b 6.0, d 3.0
    # normalised semantic: a 1.0, b 0.5, c 0.0, d 0 (missing); bm25: b 1.0, d 0.5, a 0, c 0
    # lambda 0.9 -> a 0.9; b 0.45 + 0.1 = 0.55; d 0.05; c 0.0
    out = fuse({"a": 0.8, "b": 0.4, "c": -0.2}, {"b": 6.0, "d": 3.0}, lam=0.9, top_k=2)
    assert [c.node_id for c in out] == ["a", "b", "d", "c"]
    assert [c.rank for c in out] == [1, 2, 3, 4]
    assert [c.fused for c in out] == pytest.approx([0.9, 0.55, 0.05, 0.0])
    a, b, d, c = out
    assert (a.semantic, a.bm25, a.cosine, a.bm25_raw) == (1.0, 0.0, 0.8, None)
    assert (b.semantic, b.bm25) == (0.5, 1.0)
    assert (d.semantic, d.bm25, d.cosine, d.bm25_raw) == (0.0, 0.5, None, 3.0)
    assert c.semantic == 0.0
    assert [x.kept for x in out] == [True, True, False, False]


def test_fusion_lambda_extremes_and_ties():
    only_bm25 = fuse({"a": 0.9, "b": 0.1}, {"b": 2.0}, lam=0.0)
    assert only_bm25[0].node_id == "b" and only_bm25[0].fused == 1.0
    # equal fused score: higher semantic first, then id
    tie = fuse({"x": 0.5, "y": 0.5}, {}, lam=1.0)
    assert [c.node_id for c in tie] == ["x", "y"]
    assert fuse({}, {}, lam=0.9) == []
    # all-zero or negative components do not divide by zero
    assert fuse({"a": -0.3}, {}, lam=0.9)[0].fused == 0.0


def test_keywords_drop_names_stopwords_and_time_words():
    assert extract_keywords("When did Caroline go to the LGBTQ support group?") == ["lgbtq", "support", "group"]
    assert extract_keywords("What did Melanie's kids make in May 2023 at Anna's party?") == ["kids", "party"]
    assert extract_keywords("Who is Anna?") == []
    # known participants win over the heuristic, also at the start of a sentence
    assert extract_keywords("Caroline and Sweden: what happened two weeks ago?", ["Caroline Smith"]) == ["sweden"]
    assert clean_keywords(["Caroline", "support group", "the", "Support Group", "pets"], "Caroline?",
                          ["Caroline"]) == ["support group", "pets"]
    assert len(extract_keywords("apples bananas cherries dates elderberries figs grapes")) == 5


@pytest.mark.parametrize("question,phrase,start,end", [
    ("What did Anna do last week?", "last week", "2023-05-15", "2023-05-22"),
    ("What happened on 8 May 2023?", "8 May 2023", "2023-05-08", "2023-05-09"),
    ("What did Bob buy in March?", "in March", "2023-03-01", "2023-04-01"),
    ("What did Bob buy in August?", "in August", "2022-08-01", "2022-09-01"),  # no year: the latest past August
    ("What did Bob do in May 2022?", "in May 2022", "2022-05-01", "2022-06-01"),
    ("Where was Tom two weeks ago?", "two weeks ago", "2023-05-08", "2023-05-15"),
    ("Where was Tom yesterday?", "yesterday", "2023-05-24", "2023-05-25"),
])
def test_time_window_resolution(question, phrase, start, end):
    tz = ZoneInfo("Europe/Berlin")
    found = resolve_time_window(question, datetime(2023, 5, 25, 15, 0, tzinfo=UTC), tz)
    assert found is not None
    got, span = found
    assert got == phrase
    assert span.start.astimezone(tz).date().isoformat() == start
    assert span.end.astimezone(tz).date().isoformat() == end
    assert span.start.tzinfo is UTC or span.start.utcoffset().total_seconds() == 0


def test_time_window_rolling_and_absent():
    qt = datetime(2023, 5, 25, 15, 0, tzinfo=UTC)
    phrase, span = resolve_time_window("What did Eve read in the past 3 days?", qt, ZoneInfo("UTC"))
    assert phrase == "in the past 3 days" and span.end == qt and span.start == datetime(2023, 5, 22, tzinfo=UTC)
    assert resolve_time_window("When did Caroline go to the LGBTQ support group?", qt, ZoneInfo("UTC")) is None


def _node(nid: str, level: int, key: str, start: datetime, end: datetime, text: str) -> MemoryNode:
    return MemoryNode(id=nid, user_id="u", level=Level(level), window_key=key, span_start=start, span_end=end,
                      content=text, model_id="verbatim", prompt_version="t")


def test_context_grouped_by_level_dated_and_time_ordered():
    tz = ZoneInfo("America/New_York")
    late = _node("l1b", 1, "segment:b", datetime(2023, 5, 9, 1, 0, tzinfo=UTC), datetime(2023, 5, 9, 1, 0, tzinfo=UTC),
                 "Anna: second\nline")
    early = _node("l1a", 1, "segment:a", datetime(2023, 5, 8, 14, 0, tzinfo=UTC),
                  datetime(2023, 5, 8, 14, 5, tzinfo=UTC), "Anna: first")
    day = _node("d", 3, "day:2023-05-08", datetime(2023, 5, 8, 4, tzinfo=UTC), datetime(2023, 5, 9, 4, tzinfo=UTC),
                "Day.")
    week = _node("w", 4, "week:2023-05-08..2023-05-14", datetime(2023, 5, 8, 4, tzinfo=UTC),
                 datetime(2023, 5, 15, 4, tzinfo=UTC), "Week.")
    month = _node("m", 5, "month:2023-05", datetime(2023, 5, 1, 4, tzinfo=UTC), datetime(2023, 6, 1, 4, tzinfo=UTC),
                  "Month.")
    text = render_context([month, late, day, week, early], tz, layout="lines")
    assert text.splitlines() == [
        "L1 segments:",
        "- [Mon 8 May 2023, 10:00-10:05] Anna: first",
        "- [Mon 8 May 2023, 21:00] Anna: second line",  # 01:00 UTC is the evening before in New York
        "L3 days:",
        "- [Mon 8 May 2023] Day.",
        "L4 weeks:",
        "- [8-14 May 2023] Week.",
        "L5 profile:",
        "- [May 2023] Month.",
    ]
    assert date_label(day, tz) == "Mon 8 May 2023"
    assert count_tokens(text) > 20 and count_tokens("") == 0


def _turn_node(nid: str, session: str, seq: int, when: datetime, text: str) -> MemoryNode:
    return MemoryNode(id=nid, user_id="u", level=Level(1), window_key=f"segment:u:{session}:{seq}",
                      session_id=session, span_start=when, span_end=when, source_turn_ids=[f"u:{session}:{seq}"],
                      content=f"On 8 May 2023 (Monday) 13:56:\n{text}", model_id="verbatim", prompt_version="v")


def test_grouped_context_one_header_per_session_in_turn_order():
    tz = ZoneInfo("UTC")
    t1, t2 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC), datetime(2023, 5, 25, 13, 14, tzinfo=UTC)
    # equal timestamps within a session: the node ids sort against the turn order ("z" < "a" is false)
    nodes = [_turn_node("a", "S1", 12, t1, "Mel: twelfth"), _turn_node("z", "S1", 2, t1, "Caro: second"),
             _turn_node("m", "S1", 10, t1, "Caro: tenth"), _turn_node("b", "S2", 0, t2, "Mel: later")]
    text = render_context(nodes, tz)
    assert text.splitlines() == [
        "Conversation excerpts:",
        "[Mon 8 May 2023, 13:56]",
        "Caro: second",
        "Caro: tenth",
        "Mel: twelfth",
        "[Thu 25 May 2023, 13:14]",
        "Mel: later",
    ]
    lines = render_context(nodes, tz, layout="lines")
    assert count_tokens(text) < count_tokens(lines)  # one date per session instead of one per memory
    with pytest.raises(ValueError, match="layout"):
        render_context(nodes, tz, layout="wide")  # type: ignore[arg-type]


def test_grouped_context_in_a_chat_has_one_header_per_segment_and_the_docs_say_so():
    """A new-user trial: docs/recall.md and the README said "one dated header per session", and a chat (turns a minute
    apart, one session) showed one header per L1 segment. The rendering stays (recall numbers depend on it); a header
    opens when the session or the start minute changes, and the docs say that."""
    from pathlib import Path

    tz = ZoneInfo("UTC")
    nodes = [_turn_node(f"n{k}", "chat", k, datetime(2024, 3, 18, 19, k, tzinfo=UTC), f"User: line {k}")
             for k in range(3)]
    assert [ln for ln in render_context(nodes, tz).splitlines() if ln.startswith("[")] == [
        "[Mon 18 March 2024, 19:00]", "[Mon 18 March 2024, 19:01]", "[Mon 18 March 2024, 19:02]"]
    root = Path(__file__).resolve().parents[1]
    for doc in ("README.md", "docs/recall.md", "docs/configuration.md"):
        text = " ".join((root / doc).read_text(encoding="utf-8").split())
        assert "one dated header per session" not in text, doc
    assert "a chat, whose L1 segments start minutes apart, gets one per segment" in " ".join(
        (root / "docs/recall.md").read_text(encoding="utf-8").split())


def test_fused_scores_and_rerank_updates_match_the_candidate_forms():
    from timem.recall.leaves import fused_scores, rerank

    sem, lex = {"a": 0.8, "b": 0.4, "c": -0.2, "e": 0.4}, {"b": 6.0, "d": 3.0, "e": 6.0}
    cands = fuse(sem, lex, lam=0.3, top_k=3)
    assert fused_scores(sem, lex, 0.3) == {c.node_id: c.fused for c in cands}
    assert list(fused_scores(sem, lex, 0.3)) == [c.node_id for c in cands]
    updates = [{"fused": 0.5, "time_bonus": 0.1}, None, {"duplicate_of": "a"}, {"duplicate_of": None}, {}]
    want = rerank([c.model_copy(update=u) if u else c for c, u in zip(cands, updates, strict=True)], 2)
    got = rerank(cands, 2, updates)
    assert [c.model_dump() for c in got] == [c.model_dump() for c in want]
    # fused order b, e (tie), d, a, c: b drops to 0.5 behind e, d is a duplicate and takes no slot
    assert [c.node_id for c in got if c.kept] == ["e", "b"] and got[1].time_bonus == 0.1


def test_candidate_updated_is_model_copy():
    from timem.recall.leaves import Candidate

    c = Candidate(node_id="n1", semantic=0.5, bm25=0.25, fused=0.4, rank=3, cosine=0.7)
    for update in ({}, {"rank": 1, "kept": True}, {"fused": 0.9, "duplicate_of": "n0", "channel": "aspect: x"}):
        new, ref = c.updated(update), c.model_copy(update=update)
        assert new == ref and new.model_fields_set == ref.model_fields_set and new is not c
        assert new.model_dump() == ref.model_dump() and new.model_dump(exclude_unset=True) == \
            ref.model_dump(exclude_unset=True)
    assert c.rank == 3 and not c.kept  # the original is unchanged


def test_keywords_keep_accented_words_whole():
    """A new-user trial: "Zürich" gave the keyword "rich" (and recalled "The cake was very rich."), "café" gave
    "caf", "señora" gave "se" and "ora": the keyword tokens were ASCII only."""
    assert extract_keywords("Where did I drink the café crème?") == ["drink", "café", "crème"]
    assert extract_keywords("Who was the señora who sold bread?") == ["señora", "sold", "bread"]
    assert extract_keywords("was the cake in zürich naïve?") == ["cake", "zürich", "naïve"]
    assert "rich" not in extract_keywords("What did I buy in Zürich?")
    assert extract_keywords("What is 3 × 4?") == []  # × is no letter
    assert extract_keywords("Where is München?", ["München"]) == []  # a participant's name, accents and all
