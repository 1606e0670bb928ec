"""The segment tree in DuckDB (timem.store.segtree_tables) and recall over it (recall_index="segtree"): built online
at ingest and chat, equal to the tree built in memory, rebuilt after an erase, gone with its user, and never
crossing users (real DuckDB file, real MiniLM, no LLM)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from timem.config import Config
from timem.datasets.base import ImportedSession, ImportedUser, turn_id
from timem.engine import MemoryEngine
from timem.models import Level, Role, Turn
from timem.recall import recall
from timem.recall.options import RecallOptions
from timem.recall.segtree import propagate_segtree
from timem.store import segtree_tables as segstore
from timem.tree.segtree import SegTree


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    """Logic tests: the deterministic hashing embedder instead of MiniLM (tests/conftest.py)."""
    return fake_embedder

TOPICS = [
    ["I adopted a puppy called Biscuit last week.", "Biscuit chews every shoe in the house.",
     "The vet said Biscuit needs his second vaccine soon.", "We walk Biscuit by the river every morning."],
    ["My sister is getting married in Lisbon in June.", "The wedding dinner will be at a seafood place.",
     "I still need a suit for the wedding.", "We booked flights to Lisbon for the ceremony."],
    ["I started learning the cello in January.", "My cello teacher makes me practise scales daily.",
     "The cello recital is next Friday evening.", "I am nervous about playing Bach at the recital."],
]


def _user(uid: str, secret: str | None = None) -> ImportedUser:
    """Four weekly sessions of TOPICS between Ann and Bo; with ``secret``, a code-word line ends the first."""
    sessions = []
    for i, lines in enumerate(TOPICS):
        when = datetime(2024, 3, 1, 9, tzinfo=UTC) + timedelta(days=7 * i)
        sid = f"S{i + 1}"
        texts = [*lines, f"The code word for {uid} is {secret}."] if i == 0 and secret else lines
        turns = [Turn(id=turn_id(uid, sid, j), user_id=uid, session_id=sid, seq=j,
                      speaker="Ann" if j % 2 == 0 else "Bo", role=Role.USER if j % 2 == 0 else Role.ASSISTANT,
                      text=t, event_time=when + timedelta(minutes=j))
                 for j, t in enumerate(texts)]
        sessions.append(ImportedSession(session_id=sid, turns=turns, date_label=when.isoformat()))
    return ImportedUser(user_id=uid, participants=["Ann", "Bo"], sessions=sessions)


@pytest.fixture()
def seg_engine(store, embedder):
    cfg = Config(db_path=store.path, llm_backend="none", gate="score", gate_threshold=0.0, recall_index="segtree",
                 segtree_threshold=0.3, segtree_max_children=3)
    eng = MemoryEngine(cfg, store, embedder, None)
    eng.ingest([_user("u1", "PELICAN"), _user("u2", "WALRUS")])
    return eng


def _in_memory(eng: MemoryEngine, user: str) -> SegTree:
    tree = SegTree(user, eng.config.recall.segtree_threshold, eng.config.recall.segtree_max_children)
    leaves = segstore.l1_leaves(eng.store, user)
    vecs = eng.store.embeddings([i for i, _, _ in leaves])
    for nid, start, end in leaves:
        tree.insert(nid, vecs[nid], start, end)
    return tree


def _same(stored: list, tree: SegTree) -> None:
    assert {n.id for n in stored} == set(tree.nodes)
    for n in stored:
        m = tree.nodes[n.id]
        assert (n.parent_id, n.height, n.first_seq, n.last_seq, n.n_leaves, n.n_children, n.span_start, n.span_end) == \
            (m.parent_id, m.height, m.first_seq, m.last_seq, m.n_leaves, m.n_children, m.span_start, m.span_end)
        if not n.is_leaf:
            assert np.allclose(n.centroid, m.centroid, atol=1e-5)


def test_built_at_ingest_extended_online_and_equal_to_the_tree_in_memory(seg_engine):
    eng = seg_engine
    for user in ("u1", "u2"):
        stored = segstore.load(eng.store, user)
        l1 = [n.id for n in eng.store.nodes(user, int(Level.SEGMENT))]
        assert sorted(n.id for n in stored if n.is_leaf) == sorted(l1)  # leaves are the L1 ids, no copies
        assert max(n.height for n in stored) >= 2
        _same(stored, _in_memory(eng, user))
    # a chat exchange later: the stored frontier is extended (not rebuilt), still equal to a fresh build
    eng.add_exchange("u1", "chat", "Biscuit learned to sit today!", "Good boy, Biscuit.",
                     datetime(2024, 4, 1, 9, tzinfo=UTC))
    report = segstore.sync(eng.store, "u1", 0.3, 3)
    assert report.added == 0 and not report.rebuilt  # add_exchange already synced
    assert segstore.is_current(eng.store, "u1", 0.3, 3)
    _same(segstore.load(eng.store, "u1"), _in_memory(eng, "u1"))
    assert segstore.sync(eng.store, "u1", 0.4, 3).rebuilt  # other settings: rebuilt
    # the file reopens with the tree (and _v5 is idempotent)
    from timem.store.migrations import _v5

    _v5(eng.store.con, eng.store.dim)
    assert segstore.load(eng.store, "u2")


def test_a_user_without_l1_memories_has_an_empty_tree(store):
    report = segstore.sync(store, "nobody", 0.55, 8)
    assert (report.rebuilt, report.added, report.rows) == (True, 0, 0)
    assert segstore.load(store, "nobody") == [] and segstore.is_current(store, "nobody", 0.55, 8)
    assert segstore.sync(store, "nobody", 0.55, 8).rows == 0


def test_recall_over_the_segment_tree_stays_with_its_user(seg_engine):
    eng = seg_engine
    qt = datetime(2024, 5, 1, tzinfo=UTC)
    res = recall(eng.store, eng.embedder, None, eng.config, "u1", "When is the cello recital?", qt,
                 options=RecallOptions(persist=False))
    note = next(n for n in res.trace.notes if "segment tree" in n)
    assert "top-down" in note and "seg:u1:" in note and "seg:u2:" not in note
    assert res.trace.settings["recall_index"] == "segtree"
    assert all(c.local is not None and c.propagated is not None for c in res.trace.candidates)
    assert any(c.propagated > 0 for c in res.trace.candidates)
    assert "recital" in res.context and all(n.user_id == "u1" for n in res.nodes)
    assert "WALRUS" not in res.context
    flat = eng.config.with_overrides(propagation_hops=0)  # H = 0: no internal node can reach a leaf
    res = recall(eng.store, eng.embedder, None, flat, "u1", "When is the cello recital?", qt,
                 options=RecallOptions(persist=False))
    assert any("no relevance propagation" in n for n in res.trace.notes)
    # the internal nodes scored are the user's own
    from timem.recall.leaves import select_leaves
    from timem.recall.planner import make_plan
    from timem.recall.state import RecallState

    plan = make_plan("simple", "code word", qt, eng.config, "override")
    qv = eng.embedder.embed(["What is the code word?"])[0]
    state = RecallState(eng.store, eng.embedder, None, eng.config, "u2", "code word", qt, query_vec=qv)
    sel = select_leaves(state, plan)
    out, upper = propagate_segtree(state, sel, 5)
    mine = {n.id for n in segstore.load(eng.store, "u2")}
    assert upper and set(upper) <= mine and {c.node_id for c in out.candidates} <= mine


def test_erase_rebuilds_and_erase_user_drops_the_tree(seg_engine):
    eng = seg_engine
    victim = segstore.l1_leaves(eng.store, "u1")[2][0]
    u2_before = segstore.load(eng.store, "u2")
    eng.delete_memories([victim], hard=True)
    stored = segstore.load(eng.store, "u1")
    assert victim not in {n.id for n in stored} and stored
    _same(stored, _in_memory(eng, "u1"))  # rebuilt from the remaining memories
    _same(segstore.load(eng.store, "u2"), _in_memory(eng, "u2"))
    assert [n.id for n in segstore.load(eng.store, "u2")] == [n.id for n in u2_before]
    eng.erase_user("u1")
    assert segstore.load(eng.store, "u1") == []
    assert eng.store.con.execute("SELECT count(*) FROM segtree_state WHERE user_id = 'u1'").fetchone()[0] == 0
    assert segstore.load(eng.store, "u2")


def _topic_answer(request) -> str:
    """A grounded topic: the first four words of the node's first utterance (an invented one for 'Bach')."""
    lines = request.messages[-1].content.split("Lines of the conversation:\n")[1].split("\n\n")[0].splitlines()
    if any("Bach" in x for x in lines):
        return json.dumps({"title": "Quantum chromodynamics lecture notes"})  # not in the lines: dropped
    words = lines[0].split(": ", 1)[-1].split()[:4]
    return json.dumps({"title": " ".join(words)})


def test_llm_topics_for_closed_nodes_grounded_resumable_and_erased_with_the_tree(seg_engine):
    from timem.consolidation.segment_topics import summarise
    from timem.llm.client import LLM
    from timem.llm.fake import ScriptedBackend

    eng = seg_engine
    llm = LLM(ScriptedBackend(_topic_answer), eng.store)
    nodes = segstore.load(eng.store, "u1")
    last = max(x.last_seq for x in nodes)
    closed = [x for x in nodes if x.height >= 1 and x.last_seq < last]
    assert closed, "the fixture must have closed internal nodes"
    report = summarise(eng.store, llm, "u1", min_height=1)
    topics = segstore.summaries(eng.store, "u1")
    assert report.written == len(topics) > 0 and set(topics) <= {x.id for x in closed}
    assert all(x.id not in topics for x in nodes if x.last_seq == last)  # the right frontier may still grow
    leaves = [x for x in nodes if x.is_leaf]
    content = {n.id: n.content for n in eng.store.nodes("u1", 1)}
    for node_id, line in topics.items():
        node = next(x for x in nodes if x.id == node_id)
        assert line.split()[0] in content[leaves[node.first_seq].id]
    assert all("Quantum" not in t for t in topics.values())
    assert all(reason == "not supported by the node's utterances" for _, reason in report.failed)
    assert segstore.summaries(eng.store, "u2") == {}  # per user
    def logged() -> int:
        return eng.store.con.execute("SELECT count(*) FROM llm_calls WHERE purpose = 'segtree-topic'").fetchone()[0]

    calls = logged()
    again = summarise(eng.store, llm, "u1", min_height=1)
    assert again.written == 0 and logged() - calls == len(report.failed)  # only the failed nodes are asked again
    # an erased memory drops the tree and its topics
    eng.delete_memories([leaves[0].id], hard=True)
    assert segstore.summaries(eng.store, "u1") == {}
    rows = eng.store.con.execute("SELECT count(*) FROM segtree_summaries WHERE user_id = 'u1'").fetchone()
    assert rows == (0,)


def test_summarise_needs_an_llm(seg_engine):
    from timem.errors import LLMError

    with pytest.raises(LLMError, match="need an LLM"):
        seg_engine.summarise_segment_tree("u1")


def test_a_leaf_older_than_the_tree_rebuilds_it_and_a_newer_one_is_appended(seg_engine):
    """sync resumes only when the stored leaves are exactly the first ones in conversation order
    (segstore.appended_leaves): an L1 memory written later but dated before the last leaf rebuilds the tree."""
    eng = seg_engine
    n = len(segstore.l1_leaves(eng.store, "u1"))
    assert [x[0] for x in segstore.appended_leaves(eng.store, "u1", n)] == []
    assert segstore.appended_leaves(eng.store, "u1", n - 1) is None  # the state says fewer leaves than stored
    eng.add_exchange("u1", "late", "Biscuit learned to sit today!", "Good boy.", datetime(2024, 5, 1, 9, tzinfo=UTC))
    report = segstore.sync(eng.store, "u1", 0.3, 3)
    assert report.added == 0 and not report.rebuilt  # add_exchange appended it already
    _same(segstore.load(eng.store, "u1"), _in_memory(eng, "u1"))
    eng.add_exchange("u1", "early", "The cello came from a shop in Porto.", "Nice.",
                     datetime(2024, 3, 2, 9, tzinfo=UTC))  # dated inside the first weeks: not after the last leaf
    assert segstore.is_current(eng.store, "u1", 0.3, 3)  # add_exchange synced it: a rebuild
    stored = segstore.load(eng.store, "u1")
    _same(stored, _in_memory(eng, "u1"))
    early = {m.id for m in eng.store.nodes("u1", int(Level.SEGMENT)) if "Porto" in m.content}
    assert early and all(x.first_seq < n for x in stored if x.id in early)  # among the old leaves, not after
