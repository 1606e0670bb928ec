"""Tree-aware recall: SegTreeMem propagation by hand, TIDER's localiser and distance factor, neighbour
turns, the question-time cut and user isolation in every new channel (real DuckDB, real MiniLM)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from timem.config import Config
from timem.datasets.base import ImportedSession, ImportedUser, turn_id
from timem.engine import MemoryEngine
from timem.models import Role, Turn
from timem.recall import recall
from timem.recall.options import RecallOptions
from timem.recall.propagation import propagate_relevance
from timem.recall.time_channel import TimeLocalisation, distance_days, distance_factor, localise, tider_score

UTC_ZONE = ZoneInfo("UTC")

# d (L3) -> s1 (L2) -> a, b ; d -> s2 (L2) -> c
PARENT = {"a": "s1", "b": "s1", "c": "s2", "s1": "d", "s2": "d", "d": None}
KIDS = {"d": 2, "s1": 2, "s2": 1, "a": 0, "b": 0, "c": 0}
LOCAL = {"s1": 1.0, "a": 0.5, "c": 1.0}


def test_propagation_top_down_by_hand():
    # hop 1: a = b = s(s1) = 1, c = s(s2) = 0, s1 = s2 = s(d) = 0; hop 2: everything 0
    out = propagate_relevance(LOCAL, PARENT, KIDS, "top-down", hops=2, alpha=0.5)
    assert out == pytest.approx({"a": 1.0, "b": 0.5, "c": 1.0, "s1": 1.0, "s2": 0.0, "d": 0.0})


def test_propagation_bottom_up_by_hand_counts_missing_children_as_zero():
    out = propagate_relevance(LOCAL, PARENT, KIDS, "bottom-up", hops=1, alpha=0.5)
    # s1 = (0.5 + 0) / 2, s2 = 1 / 1, d = (1 + 0) / 2, leaves have no children
    assert out == pytest.approx({"a": 0.5, "b": 0.0, "c": 1.0, "s1": 1.125, "s2": 0.5, "d": 0.25})
    wider = propagate_relevance(LOCAL, PARENT, {**KIDS, "s1": 4}, "bottom-up", hops=1, alpha=1.0)
    assert wider["s1"] == pytest.approx(1.0 + 0.5 / 4)  # two more children in the tree, outside the candidates


def test_propagation_both_directions_and_collapsed():
    out = propagate_relevance(LOCAL, PARENT, KIDS, "both", hops=1, alpha=1.0)
    # a: its parent s1 (1.0) over 1 edge; s1: parent d (0) + children a, b (0.5) over 3 edges; d: (1 + 0) / 2
    assert out["a"] == pytest.approx(1.5) and out["s1"] == pytest.approx(1.0 + 0.5 / 3)
    assert out["d"] == pytest.approx(0.5) and out["s2"] == pytest.approx(0.5) and out["c"] == pytest.approx(1.0)
    flat = propagate_relevance(LOCAL, PARENT, KIDS, "top-down", hops=0, alpha=0.5)
    assert flat == pytest.approx({"a": 0.5, "b": 0.0, "c": 1.0, "s1": 1.0, "s2": 0.0, "d": 0.0})
    with pytest.raises(ValueError, match="direction"):
        propagate_relevance(LOCAL, PARENT, KIDS, "sideways", hops=1, alpha=0.5)  # type: ignore[arg-type]


@pytest.mark.parametrize(("days", "factor"), [(0, 1.0), (14, 1.0), (15, 0.95), (28, 0.3), (100, 0.3)])
def test_distance_factor_edges(days, factor):
    assert distance_factor(days) == pytest.approx(factor)


def test_localiser_two_windows_and_scoring():
    qt = datetime(2023, 10, 20, 12, tzinfo=UTC)
    loc = localise("Did she go camping in June or in August 2023?", qt, UTC_ZONE)
    assert loc.detect and len(loc.windows) == 2
    june, august = loc.windows
    assert (june.start, june.end) == (datetime(2023, 6, 1, tzinfo=UTC), datetime(2023, 7, 1, tzinfo=UTC))
    assert (august.start, august.end) == (datetime(2023, 8, 1, tzinfo=UTC), datetime(2023, 9, 1, tzinfo=UTC))
    inside = datetime(2023, 6, 10, tzinfo=UTC)
    assert distance_days(inside, inside, loc.windows) == 0
    assert tider_score(0.5, inside, inside, loc) == (pytest.approx(0.8), 0.3, 1.0)
    late = datetime(2023, 9, 16, tzinfo=UTC)  # 15 days after the August window ends
    assert tider_score(0.5, late, late, loc) == (pytest.approx(0.475), 0.0, pytest.approx(0.95))
    assert tider_score(0.5, late, late, loc, decay=False) == (0.5, 0.0, 1.0)
    assert not localise("What does Caroline like to paint?", qt, UTC_ZONE).detect
    assert tider_score(0.5, late, late, TimeLocalisation(detect=False)) == (0.5, 0.0, 1.0)


def _user(uid: str, secret: str) -> ImportedUser:
    sessions = []
    start = datetime(2024, 3, 1, 9, tzinfo=UTC)
    lines = [[("Ann", "Where should we have lunch tomorrow?"), ("Bo", f"Let's try {secret} on Elm Street.")],
             [("Ann", "How was lunch yesterday?"), ("Bo", f"The soup at {secret} was great.")],
             [("Ann", "Any plans for April?"), ("Bo", "I will visit my sister in Lisbon.")]]
    for i, sess in enumerate(lines):
        when = start + timedelta(days=20 * i)
        sid = f"S{i + 1}"
        turns = [Turn(id=turn_id(uid, sid, j), user_id=uid, session_id=sid, seq=j, speaker=sp,
                      role=Role.USER if sp == "Ann" else Role.ASSISTANT, text=t, event_time=when)
                 for j, (sp, t) in enumerate(sess)]
        sessions.append(ImportedSession(session_id=sid, turns=turns, date_label=when.isoformat()))
    return ImportedUser(user_id=uid, participants=["Ann", "Bo"], sessions=sessions)


@pytest.fixture()
def turn_engine(store, embedder):
    cfg = Config(db_path=store.path, llm_backend="none", gate="score", l1_unit="turn", recall_neighbours="next",
                 time_channel="decay", gate_threshold=0.0)
    eng = MemoryEngine(cfg, store, embedder, None)
    eng.ingest([_user("u1", "Noodle Bar"), _user("u2", "Taco Hut")])
    return eng


def test_neighbour_reply_time_channel_and_isolation(turn_engine):
    eng = turn_engine
    qt = datetime(2024, 3, 25, 9, tzinfo=UTC)
    one = eng.config.with_overrides(recall_top_k=1)  # one leaf: the question; its reply comes as a neighbour
    res = recall(eng.store, eng.embedder, None, one, "u1", "Where should we have lunch tomorrow?", qt,
                 options=RecallOptions(persist=False))
    assert "Noodle Bar" in res.context and "Taco Hut" not in res.context
    pulled = [d for d in res.trace.gate.decisions if d.reason.startswith("next turn after leaf")]
    assert pulled and pulled[0].kept, "the reply to the matching question is pulled in as a neighbour"
    lines = res.context.splitlines()
    assert lines[2].startswith("Ann: ") and lines[3].startswith("Bo: ") and "Noodle Bar" in lines[3]
    assert all(n.user_id == "u1" for n in res.nodes)
    # the time channel: "in March" windows the first two sessions; candidates carry their factors
    res = recall(eng.store, eng.embedder, None, eng.config, "u2", "What did Bo say about food in March 2024?", qt,
                 options=RecallOptions(persist=False))
    assert any("time channel" in n for n in res.trace.notes)
    assert {c.time_bonus for c in res.trace.candidates} >= {0.3}
    assert "Noodle Bar" not in res.context and all(n.user_id == "u2" for n in res.nodes)


def test_nothing_after_the_question_time(turn_engine):
    eng = turn_engine
    early = datetime(2024, 3, 2, 9, tzinfo=UTC)  # only the first session had happened
    res = recall(eng.store, eng.embedder, None, eng.config, "u1", "What about lunch and April plans?", early,
                 options=RecallOptions(persist=False))
    assert res.nodes and all(n.span_start <= early for n in res.nodes)
    assert "Lisbon" not in res.context and "soup" not in res.context
    assert any("after the question time" in n for n in res.trace.notes)


def test_an_over_long_memory_contributes_its_best_passage():
    from timem.models import Level, MemoryNode
    from timem.recall.context import best_passage
    from timem.tokens import count_tokens

    filler = " ".join(f"Sentence {i} is about nothing in particular and goes on." for i in range(600))
    content = ("On 8 May 2023 (Monday) 13:56:\nNell: " + filler
               + " My flight to Oslo departs at 07:40 from gate B12. " + filler)
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    node = MemoryNode(id="x", user_id="u", level=1, window_key="segment:u:S:0", span_start=when, span_end=when,
                      content=content, model_id="verbatim", prompt_version="v")
    cut = best_passage(node, "When does my flight to Oslo depart?", 250)
    assert count_tokens(cut.content) <= 250 < count_tokens(content)
    assert "departs at 07:40 from gate B12" in cut.content
    assert cut.content.startswith("On 8 May 2023 (Monday) 13:56:\nNell: … ") and cut.content.endswith(" …")
    assert cut.level == Level.SEGMENT and cut.id == node.id
    short = node.model_copy(update={"content": "Nell: a short memory."})
    assert best_passage(short, "flight", 250) is short


def test_line_cached_count_equals_the_whole_count_on_real_and_tricky_contexts(locomo_dev):
    from timem.recall.context import count_context_tokens
    from timem.tokens import count_tokens

    data = json.loads(Path(locomo_dev).read_text())
    lines = [f"{t['speaker']}: {t['text']}" for conv in data for k, v in conv["conversation"].items()
             if k.startswith("session_") and isinstance(v, list) for t in v]
    tricky = ["Ann: what?!)", "[Mon 8 May 2023, 13:56]", "'s fine", "- [May 2023] ok...", "张三：我昨天去了北京。",
              "日本語のテキスト。", "x" * 300, "Bob: 12345678 🙂🙂", "L2 sessions:", "Conversation excerpts:"]
    chunks = [lines[i:i + 37] for i in range(0, len(lines), 37)] + [tricky, tricky[::-1], ["one"]]
    for chunk in chunks:
        text = "\n".join(chunk)
        assert count_context_tokens(text) == count_tokens(text)
    assert count_context_tokens("a\n\n b") == count_tokens("a\n\n b")  # falls back on empty/indented lines


def _one_speaker_user(uid: str, texts: list[str]) -> ImportedUser:
    start = datetime(2024, 1, 1, 12, tzinfo=UTC)
    sessions = []
    for i, text in enumerate(texts):
        sid = f"d{i:02d}"
        turns = [Turn(id=turn_id(uid, sid, 0), user_id=uid, session_id=sid, seq=0, speaker="Rio", role=Role.USER,
                      text=text, event_time=start + timedelta(days=i))]
        sessions.append(ImportedSession(session_id=sid, turns=turns, date_label=turns[0].event_time.isoformat()))
    return ImportedUser(user_id=uid, participants=["Rio"], sessions=sessions)


def test_near_duplicates_do_not_crowd_out_a_distinct_fact(store, embedder):
    from timem.recall.duplicates import near_duplicates
    from timem.recall.render import candidate_reasons

    texts = ["Reminder: I am allergic to peanuts."] * 40 + ["My doctor found out I am also allergic to penicillin."]
    cfg = Config(db_path=store.path, llm_backend="none", gate="score", l1_unit="turn", recall_top_k=20,
                 recall_candidates=60, recall_neighbours="none")
    eng = MemoryEngine(cfg, store, embedder, None)
    eng.ingest([_one_speaker_user("rio", texts)])
    qt = datetime(2024, 3, 1, tzinfo=UTC)
    res = recall(eng.store, eng.embedder, None, cfg, "rio", "What am I allergic to?", qt,
                 options=RecallOptions(persist=False))
    assert "penicillin" in res.context and res.context.count("peanuts") == 1
    dups = [c for c in res.trace.candidates if c.duplicate_of]
    assert len(dups) == 39 and not any(c.kept for c in dups)
    reasons = candidate_reasons(res.trace)
    assert reasons[dups[0].node_id] == f"dropped: near-duplicate of {dups[0].duplicate_of}"
    keep = recall(eng.store, eng.embedder, None, cfg.with_overrides(near_duplicates="keep"), "rio",
                  "What am I allergic to?", qt, options=RecallOptions(persist=False))
    assert "penicillin" not in keep.context and keep.context.count("peanuts") == 20  # what the collapse prevents
    # the Jaccard rule: one word changed in ten is a near-duplicate at 0.8, not at 0.9; short texts only exactly
    n = res.nodes[0]
    a, b = (n.model_copy(update={"id": i, "content": t}) for i, t in (
        ("a", "Rio: we booked the small cabin by the lake for the long weekend"),
        ("b", "Rio: we booked the small cabin by the river for the long weekend")))
    short = a.model_copy(update={"id": "s", "content": "Rio: ok"})
    nodes = {"a": a, "b": b, "s": short, "t": short.model_copy(update={"id": "t", "content": "Rio: OK!"})}
    assert near_duplicates(["a", "b", "s", "t"], nodes, 0.8) == {"b": "a", "t": "s"}
    assert near_duplicates(["a", "b"], nodes, 0.9) == {}


def test_an_over_long_turn_reaches_the_context_as_its_best_passage(store, embedder):
    filler = " ".join(f"Item {i} of the packing list is a pair of socks." for i in range(500))
    text = f"{filler} My flight to Oslo departs at 07:40 from gate B12. {filler}"
    cfg = Config(db_path=store.path, llm_backend="none", gate="score", l1_unit="turn", token_budget=1000)
    eng = MemoryEngine(cfg, store, embedder, None)
    eng.ingest([_one_speaker_user("nell", [text, "I like tea."])])
    res = recall(eng.store, eng.embedder, None, cfg, "nell", "When does my flight to Oslo depart?",
                 datetime(2024, 2, 1, tzinfo=UTC), options=RecallOptions(persist=False))
    assert "departs at 07:40 from gate B12" in res.context and "[1 January 2024]" in res.context
    assert res.trace.context_tokens <= 1000


def _llm_localiser(eng, answers):
    from timem.llm.client import LLM
    from timem.llm.fake import ScriptedBackend

    backend = ScriptedBackend(answers)
    return backend, LLM(backend, eng.store), eng.config.with_overrides(time_localiser="llm")


def test_llm_localiser_places_an_event_window_with_dated_summaries(turn_engine):
    eng = turn_engine
    qt = datetime(2024, 4, 25, 9, tzinfo=UTC)
    q = "What did Bo say about the food the time after they planned lunch?"  # no time expression the rules know
    backend, llm, cfg = _llm_localiser(eng, ['{"detect": true, "windows": [{"start": "2024-03-21", '
                                             '"end": "2024-03-21"}]}'])
    res = recall(eng.store, eng.embedder, llm, cfg, "u1", q, qt, options=RecallOptions(persist=False))
    prompt = backend.calls[0].messages[-1].content
    assert "[2024-03-01]" in prompt and "[2024-03-21]" in prompt and "Today is 2024-04-25." in prompt
    assert "Taco Hut" not in prompt  # the summaries are the asking user's only
    assert any("LLM: 2024-03-21 to 2024-03-21" in n for n in res.trace.notes), res.trace.notes
    by_day = {eng.store.node(c.node_id).span_start.date(): c.time_bonus for c in res.trace.candidates}
    assert by_day[datetime(2024, 3, 21).date()] == 0.3 and by_day[datetime(2024, 3, 1).date()] == 0.0
    assert [c.purpose for c in res.trace.llm_calls] == ["time-localiser"]
    # a window the rules can resolve needs no LLM call
    backend, llm, cfg = _llm_localiser(eng, [])
    res = recall(eng.store, eng.embedder, llm, cfg, "u1", "What did Bo say about food in March 2024?", qt,
                 options=RecallOptions(persist=False))
    assert backend.calls == [] and any("'in March 2024'" in n for n in res.trace.notes)


@pytest.mark.parametrize(("answer", "note"), [
    ('{"detect": true, "windows": [{"start": "2024-03-22", "end": "2024-03-21"}]}', "impossible window"),
    ('{"detect": true, "windows": [{"start": "2024-05-01", "end": "2024-05-02"}]}', "impossible window"),
    ("not json at all", "LLM time localiser failed"),
])
def test_llm_localiser_falls_back_to_the_rules_and_says_why(turn_engine, answer, note):
    eng = turn_engine
    _, llm, cfg = _llm_localiser(eng, [answer] * 3)
    res = recall(eng.store, eng.embedder, llm, cfg, "u1", "What did Bo say after the lunch plan?",
                 datetime(2024, 4, 25, 9, tzinfo=UTC), options=RecallOptions(persist=False))
    assert any(note in n for n in res.trace.notes), res.trace.notes
    assert {c.time_bonus for c in res.trace.candidates} == {0.0}
    res = recall(eng.store, eng.embedder, None, cfg, "u1", "What did Bo say after the lunch plan?",
                 datetime(2024, 4, 25, 9, tzinfo=UTC), options=RecallOptions(persist=False))
    assert any("no LLM available; rule-based localiser used" in n for n in res.trace.notes)


def _unit(*xs):
    import numpy as np

    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_event_pool_merges_within_7_days_and_cosine_085_at_most_40_per_event():
    from timem.recall.events import build_events

    d = datetime(2024, 3, 1, tzinfo=UTC)
    a, near, far = _unit(1, 0), _unit(1, 0.45), _unit(1, 1.5)  # cosines with a: 1, 0.912, 0.555
    leaves = [("a", d, d, a), ("b", d + timedelta(days=3), d + timedelta(days=3), near),  # joins a
              ("c", d + timedelta(days=4), d + timedelta(days=4), far),  # cosine < 0.85 with the event: new
              ("e", d + timedelta(days=12), d + timedelta(days=12), a)]  # 8 days after b: new
    events = build_events(leaves)
    assert [e.members for e in events] == [["a", "b"], ["c"], ["e"]]
    assert events[0].end == d + timedelta(days=3)
    edge = build_events([("a", d, d, a), ("b", d + timedelta(days=7), d + timedelta(days=7), a)])
    assert [e.members for e in edge] == [["a", "b"]]  # exactly 7 days apart still merges
    many = build_events([(f"x{i:02d}", d, d, a) for i in range(41)])
    assert [len(e.members) for e in many] == [40, 1]


def test_event_channel_brings_the_best_events_members_for_this_user_only(turn_engine):
    eng = turn_engine
    cfg = eng.config.with_overrides(event_pool=1, time_channel="off")
    qt = datetime(2024, 4, 25, 9, tzinfo=UTC)
    res = recall(eng.store, eng.embedder, None, cfg, "u2", "Where should we have lunch?", qt,
                 options=RecallOptions(persist=False))
    note = next(n for n in res.trace.notes if n.startswith("event pool:"))
    assert "the best 1" in note and all(n.user_id == "u2" for n in res.nodes)
    assert {eng.store.node(c.node_id).user_id for c in res.trace.candidates} == {"u2"}
    early = datetime(2024, 3, 2, tzinfo=UTC)  # events that start after the question time are skipped
    res = recall(eng.store, eng.embedder, None, cfg, "u2", "Any plans for April?", early,
                 options=RecallOptions(persist=False))
    assert all(eng.store.node(c.node_id).span_start <= early for c in res.trace.candidates)


def test_pseudo_relevance_feedback_adds_words_of_the_best_leaves_not_names(turn_engine):
    eng = turn_engine
    cfg = eng.config.with_overrides(prf_terms=3)
    res = recall(eng.store, eng.embedder, None, cfg, "u1", "Where should we have lunch tomorrow?",
                 datetime(2024, 4, 25, 9, tzinfo=UTC),
                 options=RecallOptions(participants=("Ann", "Bo"), persist=False))
    note = next(n for n in res.trace.notes if n.startswith("pseudo-relevance feedback"))
    added = note.split("+ ")[1].split(" (")[0].split(", ")
    assert 1 <= len(added) <= 3 and "lunch" not in added and "ann" not in added and "bo" not in added, note
    assert res.trace.bm25_query.endswith(" ".join(added)), res.trace.bm25_query
    assert all(n.user_id == "u1" for n in res.nodes)
