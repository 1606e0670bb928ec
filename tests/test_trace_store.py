"""Bounded recall traces (issue 26 part 5): the compact form on a real store (LoCoMo conv-26, real MiniLM,
extractive L2-L5), its rebuild (the same views as the recalled trace), retention by count and by age, the
erase of traces that name or quote an erased memory, and old whole traces after the migration."""

from __future__ import annotations

import json
import shutil
import statistics
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from timem import editing
from timem.config import load_config
from timem.datasets.locomo import load_locomo
from timem.engine import MemoryEngine
from timem.recall.render import render_trace
from timem.recall.trace import RecallTrace
from timem.recall.trace_store import load_traces
from timem.settings import StoreSettings
from timem.store import Store
from timem.store.traces import decode_trace
from timem.viz import trace_tables as tt

SESSIONS = 8  #: conv-26's first sessions: ~180 L1 turns, more than the 2 x 80 candidate lists hold
QUESTIONS = 12


@pytest.fixture(scope="module")
def conv26(tmp_path_factory, embedder, locomo_dev):
    """A real store of conv-26's first sessions (extractive, no LLM): ``(template file, user, questions)``."""
    path = tmp_path_factory.mktemp("conv26") / "conv26.duckdb"
    cfg = load_config(env={}, db_path=path, llm_backend="none", consolidation_mode="extractive")
    (user,) = load_locomo(locomo_dev, ["conv-26"], cfg.time.tz)
    part = user.model_copy(update={"sessions": user.sessions[:SESSIONS], "questions": []})
    eng = MemoryEngine(cfg, Store(path, embedder.model_id, embedder.dim), embedder, None)
    eng.ingest([part])
    eng.close()
    last = part.sessions[-1].turns[-1].event_time
    return path, user, [q for q in user.questions if q.question_time is None or q.question_time >= last][:QUESTIONS]


def _engine(conv26, tmp_path, embedder, **overrides) -> MemoryEngine:
    path = tmp_path / "t.duckdb"
    shutil.copy(conv26[0], path)
    cfg = load_config(env={}, db_path=path, llm_backend="none", consolidation_mode="extractive", **overrides)
    return MemoryEngine(cfg, Store(path, embedder.model_id, embedder.dim), embedder, None)


def _recall_all(eng: MemoryEngine, conv26) -> list[RecallTrace]:
    _, user, questions = conv26
    return [eng.recall(user.user_id, q.question, q.question_time, participants=user.participants).trace
            for q in questions]


def _as_loaded(trace: RecallTrace) -> RecallTrace:
    """What a whole trace was after the JSON round trip it was stored with before (settings keys as strings)."""
    return RecallTrace.model_validate(json.loads(json.dumps(trace.model_dump(mode="json"))))


def _views(trace: RecallTrace, eng: MemoryEngine) -> list[object]:
    """Everything `timem ask --trace` and the Recall inspector show of a trace."""
    ids = [c.node_id for c in trace.candidates] + [a.node_id for a in trace.ancestors] + trace.node_ids
    nodes = {n.id: n for n in eng.nodes(ids=ids, status=None)}
    tables: list[pd.DataFrame] = [tt.plan_table(trace), tt.candidate_table(trace, nodes),
                                  tt.ancestor_table(trace, nodes), tt.gate_table(trace, nodes),
                                  tt.latency_table(trace), tt.llm_call_table(trace)]
    return [render_trace(trace, nodes=nodes, tz=eng.config.time.tz), tt.plan_facts(trace), tt.summary(trace),
            trace.context, trace.notes, *(t.to_json(orient="split") for t in tables)]  # NaN-safe


def test_a_trace_is_small_on_a_real_store_and_quotes_no_memory(conv26, tmp_path, embedder):
    eng = _engine(conv26, tmp_path, embedder)
    traces = _recall_all(eng, conv26)
    rows = eng.store.con.execute("SELECT body FROM recall_traces").fetchall()
    sizes = [len(r[0]) for r in rows]
    assert len(sizes) == len(traces) == QUESTIONS
    assert max(len(t.candidates) for t in traces) >= 100  # full candidate lists: the size is the real one
    assert statistics.median(sizes) <= 10_000 and max(sizes) <= 16_000, sizes
    whole = [len(zlib.compress(json.dumps(t.model_dump(mode="json")).encode(), 6)) for t in traces]
    assert statistics.median(sizes) < statistics.median(whole) / 1.4  # less than the whole trace compressed
    texts = [ln.strip() for n in eng.nodes(conv26[1].user_id, status=None) for ln in n.content.splitlines()
             if len(ln.strip()) >= 20]
    for (body,) in rows:
        raw = zlib.decompress(body).decode()
        assert "text" not in decode_trace(body)["context"]  # the context is kept as a recipe, not as text
        assert not [t for t in texts if json.dumps(t)[1:-1] in raw]  # no memory's text is copied in
    eng.close()


def test_a_loaded_trace_shows_the_same_as_the_recalled_one(conv26, tmp_path, embedder):
    eng = _engine(conv26, tmp_path, embedder)
    recalled = {t.trace_id: _as_loaded(t) for t in _recall_all(eng, conv26)}
    loaded = load_traces(eng.store, conv26[1].user_id)
    assert {t.trace_id for t in loaded} == set(recalled)
    for t in loaded:
        assert t == recalled[t.trace_id]  # every field, every float, the context text
        assert _views(t, eng) == _views(recalled[t.trace_id], eng)
    eng.close()


def test_a_memory_erased_or_edited_since_shows_as_such(conv26, tmp_path, embedder):
    eng = _engine(conv26, tmp_path, embedder)
    _, user, questions = conv26
    trace = eng.recall(user.user_id, questions[0].question, questions[0].question_time).trace
    gone, edited = trace.node_ids[0], trace.node_ids[1]
    editing.edit_memory(eng.store, eng.consolidator, edited, "Caroline: I adopted a parrot called Quill.")
    (shown,) = load_traces(eng.store, user.user_id)
    assert "I adopted a parrot called Quill." in shown.context and "edited" in shown.notes[-1]
    eng.store.con.execute("DELETE FROM nodes WHERE id = ?", [gone])  # removed by a path that left the trace
    eng.store.mark_nodes_written()  # as every writer must (the in-memory working set follows that version)
    (shown,) = load_traces(eng.store, user.user_id)
    assert "erased" in shown.notes[-1] and gone in shown.notes[-1]
    assert "I adopted a parrot called Quill." in shown.context
    nodes = {n.id: n for n in eng.nodes(ids=shown.node_ids, status=None)}
    gate = tt.gate_table(shown, nodes)
    assert gate.loc[gate.node_id == gone, "preview"].item() == tt.MISSING
    assert "(memory no longer exists)" in render_trace(shown, nodes=nodes)
    eng.store.con.execute("DELETE FROM nodes WHERE id = ?", [edited])
    eng.store.mark_nodes_written()
    (shown,) = load_traces(eng.store, user.user_id)
    assert "Quill" not in shown.context and "2 of" in shown.notes[-1]
    eng.close()


def _doc(trace_id: str, user: str, text: str = "") -> dict[str, object]:
    return {"trace_id": trace_id, "user_id": user, "answer": text, "ids": [f"L1-{trace_id}"]}


def test_retention_keeps_the_newest_traces_per_user(tmp_path, embedder):
    store = Store(tmp_path / "r.duckdb", embedder.model_id, embedder.dim)
    t0 = datetime(2024, 5, 1, tzinfo=UTC)
    for i in range(5):
        store.save_trace(f"a{i}", "ann", "q", _doc(f"a{i}", "ann"), keep_per_user=3, now=t0 + timedelta(minutes=i))
    store.save_trace("b0", "bo", "q", _doc("b0", "bo"), keep_per_user=3, now=t0)
    assert store.save_trace("b1", "bo", "q", _doc("b1", "bo"), keep_per_user=3, now=t0) == 0
    assert [d["trace_id"] for d in store.traces("ann")] == ["a4", "a3", "a2"]  # the newest 3, newest first
    assert {d["trace_id"] for d in store.traces("bo")} == {"b0", "b1"}  # another user's are not counted
    assert store.save_trace("a5", "ann", "q", _doc("a5", "ann"), keep_per_user=3, now=t0 + timedelta(hours=1)) == 1
    assert store.trace_bytes("ann")[0] == 3 and store.trace_bytes()[0] == 5 == store.stats()["recall_traces"]
    with pytest.raises(Exception, match="at least 1"):
        store.save_trace("a6", "ann", "q", {}, keep_per_user=0)
    assert store.trace_bytes()[0] == 5  # refused before anything was written
    store.close()


def test_retention_drops_traces_older_than_the_age_limit(tmp_path, embedder):
    store = Store(tmp_path / "r.duckdb", embedder.model_id, embedder.dim)
    now = datetime(2024, 6, 1, tzinfo=UTC)
    store.save_trace("old-ann", "ann", "q", _doc("old-ann", "ann"), now=now - timedelta(days=31))
    store.save_trace("old-bo", "bo", "q", _doc("old-bo", "bo"), now=now - timedelta(days=40))
    store.save_trace("recent", "bo", "q", _doc("recent", "bo"), now=now - timedelta(days=29))
    assert store.trace_bytes()[0] == 3  # no limit given: nothing pruned
    assert store.save_trace("new", "ann", "q", _doc("new", "ann"), max_age_days=30, now=now) == 2
    assert sorted(d["trace_id"] for d in store.traces()) == ["new", "recent"]  # every user's old ones go
    store.close()


def test_recall_applies_the_configured_retention(conv26, tmp_path, embedder):
    eng = _engine(conv26, tmp_path, embedder, trace_keep_per_user=4)
    assert eng.config.store.trace_keep_per_user == 4 and StoreSettings().trace_keep_per_user == 500
    traces = _recall_all(eng, conv26)
    kept = load_traces(eng.store, conv26[1].user_id)
    assert [t.trace_id for t in kept] == [t.trace_id for t in traces[::-1][:4]]  # the newest 4
    assert StoreSettings().trace_max_age_days == 30.0
    eng.close()


def test_erase_removes_the_traces_that_name_or_quote_the_memory(tmp_path, embedder):
    store = Store(tmp_path / "e.duckdb", embedder.model_id, embedder.dim)
    store.save_trace("names", "ann", "q", _doc("names", "ann"))  # names the memory L1-names
    store.save_trace("quotes", "ann", "q", _doc("quotes", "ann", "She said: my locker code is 8842 at the gym"))
    store.save_trace("other", "ann", "q", _doc("other", "ann", "nothing about it"))
    store.save_trace("bo", "bo", "q", _doc("bo", "bo"))
    out = store.forget_text(["L1-names"], ["my locker code is 8842 at the gym"])
    assert out["recall_traces"] == 2
    assert sorted(d["trace_id"] for d in store.traces()) == ["bo", "other"]
    assert store.forget_text([], [], user_id="ann")["recall_traces"] == 1  # erase-user: all of the user's
    assert [d["trace_id"] for d in store.traces()] == ["bo"]
    store.close()


def test_old_whole_traces_load_and_erase_after_the_migration(conv26, tmp_path, embedder):
    eng = _engine(conv26, tmp_path, embedder)
    traces = _recall_all(eng, conv26)[:3]
    path = Path(eng.config.store.db_path)
    con = eng.store.con  # turn the file back into schema 8: whole traces as JSON text
    con.execute("DROP TABLE recall_traces")
    con.execute("CREATE TABLE recall_traces (id VARCHAR PRIMARY KEY, user_id VARCHAR NOT NULL, query VARCHAR NOT "
                "NULL, created_at TIMESTAMP NOT NULL, trace VARCHAR NOT NULL)")
    for i, t in enumerate(traces):
        con.execute("INSERT INTO recall_traces VALUES (?,?,?,?,?)",
                    [t.trace_id, t.user_id, t.query, datetime(2024, 1, 1, 0, i), json.dumps(t.model_dump(mode="json"))])
    con.execute("DELETE FROM schema_version WHERE version >= 9")
    eng.close()
    store = Store(path, embedder.model_id, embedder.dim)  # migrates
    assert store.schema_version >= 9
    loaded = load_traces(store, traces[0].user_id)
    assert [t.trace_id for t in loaded] == [t.trace_id for t in traces[::-1]]
    assert loaded == [_as_loaded(t) for t in traces[::-1]]  # whole, context text included
    assert store.forget_text([traces[0].node_ids[0]], [])["recall_traces"] >= 1  # names are still found
    store.close()


def test_an_over_long_memory_is_rebuilt_as_the_same_passage(tmp_path, embedder):
    from timem.datasets.base import ImportedSession, ImportedUser, turn_id
    from timem.models import Role, Turn

    texts = [" ".join(f"Day {i} of the walk was about the weather in Porto and the river." for i in range(300))
             + " My locker code at the Westbrook gym is 8842.", "I like green tea in the morning."]
    start = datetime(2024, 1, 1, 12, tzinfo=UTC)
    sessions = [ImportedSession(session_id=f"d{i}", date_label="", turns=[Turn(
        id=turn_id("rio", f"d{i}", 0), user_id="rio", session_id=f"d{i}", seq=0, speaker="Rio", role=Role.USER,
        text=text, event_time=start + timedelta(days=i))]) for i, text in enumerate(texts)]
    cfg = load_config(env={}, db_path=tmp_path / "long.duckdb", llm_backend="none")
    eng = MemoryEngine(cfg, Store(cfg.store.db_path, embedder.model_id, embedder.dim), embedder, None)
    eng.ingest([ImportedUser(user_id="rio", participants=["Rio"], sessions=sessions)], upper_levels=False)
    res = eng.recall("rio", "What is my locker code at the gym?", start + timedelta(days=5))
    assert "8842" in res.context and "…" in res.context  # the memory was cut to its passage
    (doc,) = eng.store.traces("rio")
    # the passage is kept as ids, not text: its sentence is nowhere in the stored trace (the second hop's query, a
    # few words of the best leaf such as the code "8842", is a query like the question, and kept in its note)
    assert doc["context"]["passages"] and "Westbrook gym is 8842" not in json.dumps(doc)
    assert "weather in Porto and the river" not in json.dumps(doc)
    (loaded,) = load_traces(eng.store, "rio")
    assert loaded.context == res.context and loaded.notes == res.trace.notes
    eng.close()


def test_a_long_chat_does_not_grow_the_file_past_what_retention_keeps(tmp_path, embedder):
    """DuckDB reuses no block of a deleted row while its table lives: deletes alone grew the file by ~14 KB per
    write for ever. The store rewrites the trace table once enough rows were deleted, so the space is reused."""
    import os
    import random

    path = tmp_path / "chat.duckdb"
    store = Store(path, embedder.model_id, embedder.dim)
    rng = random.Random(7)

    def size() -> int:
        store.checkpoint()
        return os.path.getsize(path)

    start = size()
    for i in range(3000):  # bodies of ~5 KB that zlib cannot shrink, like real ones
        doc = {"trace_id": f"t{i}", "user_id": "ann", "noise": "".join(rng.choices("0123456789abcdef", k=9000))}
        store.save_trace(f"t{i}", "ann", "q", doc, keep_per_user=100)
    live_bytes = store.trace_bytes("ann")[1]
    assert store.trace_bytes()[0] == 100 and 400_000 < live_bytes < 600_000
    assert size() - start < 8 * live_bytes  # ~15 MB (30x) without the rewrite
    assert [d["trace_id"] for d in store.traces("ann", limit=2)] == ["t2999", "t2998"]  # rows survive rewrites
    with pytest.raises(Exception, match="(?i)primary key"):  # the constraint survives the rewrite too
        store.con.execute("INSERT INTO recall_traces SELECT * FROM recall_traces WHERE id = 't2999'")
    store.close()
