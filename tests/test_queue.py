"""The durable consolidation queue (issue 26 part 1): a chat write stores its turns and a job in one transaction
and returns; a worker consolidates later. Real DuckDB files, the hashing embedder, no LLM; the kill -9 test runs
a real subprocess; the service test serves on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import numpy as np
import pytest
from service_support import engine_factory, serving

from timem.config import load_config
from timem.engine import MemoryEngine
from timem.errors import ConfigError, StoreError
from timem.models import Level
from timem.service import KeyFile, create_app
from timem.store import Store
from timem.store.check import check_store

REPO = Path(__file__).resolve().parents[1]
BASE = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def embedder(fake_embedder):
    return fake_embedder


def _engine(db: Path, embedder, **cfg) -> MemoryEngine:
    config = load_config(env={}, db_path=db, llm_backend="none", cache_dir=db.parent / "cache",
                         consolidation_mode="extractive", memory_extractor="rules", **cfg)
    return MemoryEngine(config, Store(db, embedder.model_id, embedder.dim), embedder, None)


def _write_days(eng: MemoryEngine, user: str, days: int) -> None:
    for d in range(days):
        at = BASE + timedelta(days=d)
        eng.add_exchange(user, f"s{d}", f"Day {d}: I baked bread number {d} with rye.", "Sounds tasty!", at)


def _assert_consolidated_once(store: Store, user: str, n_turns: int) -> None:
    """Every turn is in exactly one active L1 segment, every window has one active node, every job is done."""
    l1 = store.nodes(user, 1)
    covered = Counter(t for n in l1 for t in n.source_turn_ids)
    assert len(covered) == n_turns and set(covered.values()) == {1}, covered
    for level in (2, 3, 4):
        keys = Counter(n.window_key for n in store.nodes(user, level))
        assert keys and set(keys.values()) == {1}, (level, keys)
    counts = store.queue_counts()
    assert counts["pending"] == counts["running"] == counts["failed"] == 0 and counts["done"] > 0, counts


_CRASH = textwrap.dedent("""
    import os, signal, sys
    from datetime import UTC, datetime, timedelta
    sys.path.insert(0, {tests!r})
    from test_queue import _engine, _write_days
    from timem.embed.fake import HashingEmbedder
    from timem.embed.minilm import MiniLMEmbedder
    from pathlib import Path

    import threading
    eng = _engine(Path({db!r}), {embedder}(), online_queue=True)
    lock = threading.RLock()
    lock.acquire()                       # the worker waits for it: the writes stay queued
    eng.start_queue_worker(lock)
    _write_days(eng, "amy", 4)
    assert eng.store.queue_counts()["pending"] == 4, eng.store.queue_counts()
    calls = []
    real = eng.writes.consolidate_online
    def dying(user_id, **kw):
        calls.append(user_id)
        if len(calls) == 1:
            out = real(user_id, **kw)    # consolidated, but the job is not yet marked done ...
            os.kill(os.getpid(), signal.SIGKILL)   # ... when the process dies
        return real(user_id, **kw)
    eng.writes.consolidate_online = dying
    eng.drain_queue("amy")
""")


def _crash(db: Path, embedder: str) -> None:
    """Four days of chat queued in ``db``, then a process killed with SIGKILL while it consolidates them."""
    script = db.parent / "crash.py"
    script.write_text(_CRASH.format(tests=str(REPO / "tests"), db=str(db), embedder=embedder))
    proc = subprocess.run([sys.executable, str(script)], env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr[-3000:]


def test_a_job_survives_kill9_and_is_consolidated_exactly_once(tmp_path, embedder):
    db = tmp_path / "timem.duckdb"
    _crash(db, "HashingEmbedder")
    with _engine(db, embedder) as eng:  # the restart: the stale running jobs are pending again
        assert eng.store.stale_jobs_released == 4
        assert eng.store.queue_counts()["pending"] == 4 and eng.store.queue_counts()["done"] == 0
        eng.drain_queue()
        _assert_consolidated_once(eng.store, "amy", 8)
        assert {j.attempts for j in eng.store.jobs()} == {2}
        assert check_store(eng.store, eng.config) == []


def test_queued_write_returns_at_once_and_a_recall_reads_it(tmp_path, embedder):
    lock = threading.RLock()  # held by the test: the worker cannot run a job meanwhile
    with _engine(tmp_path / "timem.duckdb", embedder) as eng:
        eng.start_queue_worker(lock)
        with lock:
            _write_days(eng, "amy", 2)
            written = eng.add_exchange("amy", "s9", "I visited Zanzibarqx with my sister.", "Lovely!",
                                       BASE + timedelta(days=9))
            assert written == [] and eng.queues_writes
            assert eng.store.queue_counts()["pending"] == 3 and eng.store.nodes("amy", 1) == []
            res = eng.recall("amy", "Where did I go with my sister? Zanzibarqx", BASE + timedelta(days=10),
                             persist=False)
            assert "Zanzibarqx" in res.context
            assert all(j.l1_done and j.state == "pending" for j in eng.store.jobs())  # L1 only: the rest is queued
            assert eng.store.nodes("amy", 2) == []
        assert eng.queue.worker.wait_idle(60)
        eng.queue.worker.stop()  # the store's one connection is ours again
        _assert_consolidated_once(eng.store, "amy", 6)
        assert check_store(eng.store, eng.config) == []


def test_a_recall_after_a_queued_write_leaves_the_segment_tree_to_the_worker(tmp_path, embedder):
    """Issue 26: the recall right after an acknowledged write writes its L1 segment (read-your-writes) but does not
    sync the segment tree (tens of ms at 10k leaves): it propagates over the stored tree, says so in the trace, and
    the queued job syncs the tree."""
    lock = threading.RLock()
    with _engine(tmp_path / "timem.duckdb", embedder) as eng:
        rc = eng.config.recall
        eng.start_queue_worker(lock)
        _write_days(eng, "amy", 3)
        assert eng.queue.worker.wait_idle(60)
        stored = eng.store.segment_tree.stored_version("amy", rc.segtree_threshold, rc.segtree_max_children)
        assert stored is not None and stored[1] == 0  # the worker synced it
        with lock:  # the worker cannot run meanwhile
            eng.add_exchange("amy", "s9", "I visited Zanzibarqx with my sister.", "Lovely!", BASE + timedelta(days=9))
            res = eng.recall("amy", "Where did I go with my sister? Zanzibarqx", BASE + timedelta(days=10),
                             persist=False)
            assert "Zanzibarqx" in res.context  # read-your-writes: the new segment is a candidate
            now = eng.store.segment_tree.stored_version("amy", rc.segtree_threshold, rc.segtree_max_children)
            assert now is not None and now[0] == stored[0] and now[1] == 2  # not synced: two new L1 segments
            assert any("2 leaves behind" in n for n in res.trace.notes), res.trace.notes
        assert eng.queue.worker.wait_idle(60)
        assert eng.store.segment_tree.version("amy", rc.segtree_threshold, rc.segtree_max_children) is not None
        eng.queue.worker.stop()
        res = eng.recall("amy", "Where did I go with my sister? Zanzibarqx", BASE + timedelta(days=10),
                         persist=False)
        assert "Zanzibarqx" in res.context and not any("leaves behind" in n for n in res.trace.notes)


def test_a_waiting_read_does_not_poll_the_queue_and_wakes_when_the_worker_ends_a_batch(tmp_path, embedder,
                                                                                        monkeypatch):
    """``GET .../memories`` waits (bounded) for the user's queued jobs. The wait counted open jobs every 20 ms, a
    third of the service's CPU under bench/service_load.py; it now reads the queue when a batch ends (and at least
    every IDLE_RECHECK_SECONDS), and still returns as soon as the worker is done."""
    import timem.engine_queue as engine_queue

    lock = threading.RLock()  # held by the test: the worker cannot run a job meanwhile
    with _engine(tmp_path / "timem.duckdb", embedder) as eng:
        eng.start_queue_worker(lock)
        reads = Counter()
        real = eng.store.open_jobs
        monkeypatch.setattr(eng.store, "open_jobs", lambda user, up_to=None: reads.update([user]) or real(user, up_to))
        with lock:
            _write_days(eng, "amy", 2)
            assert eng.queue.worker.wait_idle(1.2, user_id="amy") is False  # the worker is held: times out
        assert reads["amy"] <= 1.2 / engine_queue.IDLE_RECHECK_SECONDS + 2, reads  # was ~60 reads in 1.2 s
        assert eng.queue.worker.wait_idle(60, user_id="amy")  # released: the batch's end wakes the wait
        eng.queue.worker.stop()
        assert eng.store.queue_counts()["pending"] == 0


def _waiting(worker, user: str, timeout: float = 60) -> tuple[threading.Thread, list[bool]]:
    """A thread waiting (``wait_idle``) for ``user``'s queued jobs, started once the worker knows of the wait."""
    out: list[bool] = []
    th = threading.Thread(target=lambda: out.append(worker.wait_idle(timeout, user_id=user)), daemon=True)
    th.start()
    for _ in range(500):
        with worker._ended:
            if worker._wanted[user]:
                break
        threading.Event().wait(0.01)
    else:
        raise AssertionError("the wait never registered")
    return th, out


def test_a_read_waits_only_for_the_jobs_queued_before_it(tmp_path, embedder):
    """Under a steady stream of writes a user's queue is rarely empty: ``GET .../memories`` waited its whole
    ``queue_read_wait_seconds`` (10 s) under bench/service_load.py. It now waits for the jobs queued when it began."""
    lock = threading.RLock()  # held by the test: the worker cannot claim anything meanwhile
    with _engine(tmp_path / "timem.duckdb", embedder) as eng:
        worker = eng.start_queue_worker(lock)
        with lock:
            _write_days(eng, "amy", 1)
            (first,) = [j.id for j in eng.store.jobs()]
            th, out = _waiting(worker, "amy")
            eng.add_exchange("amy", "s7", "A later message, written while the read waits.", "Noted.",
                             BASE + timedelta(days=7))
            assert eng.store.open_jobs("amy") == 2 and eng.store.open_jobs("amy", first) == 1
            eng.store.finish_jobs([first])  # as if consolidated: the later job is still pending
            th.join(5)
            assert out == [True] and eng.store.open_jobs("amy") == 1
        worker.stop()


def test_the_worker_takes_a_waited_for_user_first(tmp_path, embedder, monkeypatch):
    lock = threading.RLock()
    with _engine(tmp_path / "timem.duckdb", embedder) as eng:
        worker = eng.start_queue_worker(lock)
        order: list[str] = []
        real = eng.queue.run_jobs
        monkeypatch.setattr(eng.queue, "run_jobs", lambda jobs, lk=None: order.append(jobs[0].user_id)
                            or real(jobs, lk))
        with lock:
            for user in ("bob", "cat", "amy"):  # amy's job is the newest: without a wait it would run last
                _write_days(eng, user, 1)
            th, out = _waiting(worker, "amy")
        th.join(60)
        assert out == [True] and order[0] == "amy", order
        assert worker.wait_idle(60)
        assert sorted(order) == ["amy", "bob", "cat"]
        worker.stop()


def test_sync_path_when_the_queue_is_off(tmp_path, embedder):
    with _engine(tmp_path / "timem.duckdb", embedder, online_queue=False) as eng:
        with pytest.raises(ConfigError, match="online_queue"):
            eng.start_queue_worker()
        written = eng.add_exchange("amy", "s1", "I baked rye bread.", "Nice!", BASE)
        assert {n.level for n in written} == {Level.SEGMENT} and not eng.queues_writes
        assert eng.store.queue_counts()["done"] == 1


def test_a_failed_job_records_its_error_and_can_be_retried(tmp_path, embedder):
    with _engine(tmp_path / "timem.duckdb", embedder) as eng:
        worker = eng.start_queue_worker()
        real, calls = eng.writes.consolidate_online, []

        def failing(user_id, **kw):
            calls.append(user_id)
            if len(calls) == 1:
                raise StoreError("disk full; free space and retry the job")
            return real(user_id, **kw)

        eng.writes.consolidate_online = failing
        with worker.lock:
            eng.add_exchange("amy", "s1", "I baked rye bread.", "Nice!", BASE)
        assert worker.wait_idle(60)
        with worker.lock:
            status = eng.queue_status()
            assert status["failed"] == 1 and "disk full" in status["failed_jobs"][0]["error"]
            assert "disk full" in (worker.last_error or "")
            assert eng.retry_failed_jobs() == 1
        assert worker.wait_idle(60)
        worker.stop()
        assert eng.queue_status()["failed"] == 0 and eng.store.queue_counts()["done"] == 1
        assert len(eng.store.nodes("amy", 1)) == 2  # l1_unit "turn": the message and the reply


def test_service_acks_queued_writes_and_shows_the_queue(tmp_path, embedder):
    db = tmp_path / "timem.duckdb"
    kf = KeyFile(tmp_path / "keys.json")
    key = kf.add("acme")
    app = create_app(engine_factory(db, embedder, memory_extractor="rules", online_queue=True), kf)
    with serving(app) as (base, _), httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"},
                                                 timeout=60) as http:
        for d in range(3):
            r = http.post("/v1/users/mia/turns", json={
                "session_id": f"s{d}", "message": f"Day {d}: I met Quentorix at the market.", "reply": "Nice!",
                "event_time": (BASE + timedelta(days=d)).isoformat()})
            assert r.status_code == 200 and r.json()["queued"] is True and r.json()["written"] == []
        r = http.post("/v1/users/mia/recall", json={"query": "Who did I meet? Quentorix", "persist": False})
        assert r.status_code == 200 and "Quentorix" in r.json()["context"]
        levels = {m["level"] for m in http.get("/v1/users/mia/memories").json()["memories"]}  # waits for the queue
        assert {1, 2} <= levels
        about = http.get("/v1/about").json()
        assert about["online_queue"] is True and about["queue"]["done"] == 3 and about["queue"]["pending"] == 0
        q = http.get("/v1/queue").json()
        assert q["failed"] == 0 and q["worker"] is True
    with Store(db, embedder.model_id, embedder.dim) as store:
        assert store.queue_counts()["running"] == 0
        assert check_store(store, load_config(env={}, db_path=db)) == []


def test_a_list_of_l1_memories_writes_the_queued_segments_instead_of_waiting_for_the_worker(tmp_path, embedder):
    """Under bench/service_load.py every ``GET .../memories`` took its whole ``queue_read_wait_seconds``: the worker
    ran behind the writes. A list of L1 memories now writes the queued L1 segments itself (as a recall does) and
    answers at once; other lists still wait, at most the bound."""
    import time

    db = tmp_path / "timem.duckdb"
    kf = KeyFile(tmp_path / "keys.json")
    key = kf.add("acme")
    app = create_app(engine_factory(db, embedder, memory_extractor="rules", online_queue=True,
                                    queue_read_wait_seconds=3.0), kf)
    with serving(app) as (base, _), httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"},
                                                 timeout=60) as http:
        queue = app.state.service.engine.queue
        held, real = threading.Event(), queue.run_jobs
        queue.run_jobs = lambda jobs, lock=None: held.wait(60) and real(jobs, lock)  # the worker waits for the test
        try:
            r = http.post("/v1/users/mia/turns", json={"session_id": "s1", "message": "I met Zalbrecht.",
                                                      "reply": "Who?", "event_time": BASE.isoformat()})
            assert r.status_code == 200 and r.json()["queued"] is True
            t0 = time.monotonic()
            l1 = http.get("/v1/users/mia/memories", params={"level": 1}).json()["memories"]
            assert time.monotonic() - t0 < 2.5 and any("Zalbrecht" in m["content"] for m in l1)
            t0 = time.monotonic()
            http.get("/v1/users/mia/memories")  # every level: waits for the worker, at most the bound
            assert time.monotonic() - t0 >= 2.9
        finally:
            held.set()
        assert queue.settle("mia", 60)


def test_timem_check_shows_a_queue_left_by_a_crash_and_timem_consolidate_drains_it(tmp_path, monkeypatch):
    from test_cli import run

    for var in [v for v in os.environ if v.startswith(("TIMEM_", "OPENAI_"))]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("TIMEM_CACHE_DIR", str(tmp_path / "cache"))
    db = tmp_path / "timem.duckdb"
    _crash(db, "MiniLMEmbedder")  # the CLI opens files with MiniLM
    code, out = run("check", "--db", str(db))
    assert code == 0 and out.startswith("ok") and "consolidation queue: 4 pending, 0 running" in out, out
    assert "timem consolidate" in out
    code, out = run("consolidate", "--db", str(db), "--llm", "none")
    assert code == 0 and "queue: ran 4 job(s), 0 failed" in out, out
    code, out = run("check", "--db", str(db))
    assert code == 0 and "consolidation queue: 0 pending, 0 running, 0 failed, 4 done" in out, out
    code, out = run("stats", "--json", "--db", str(db))
    assert json.loads(out[out.index("{"):])["consolidation_queue"]["done"] == 4
    with _open_minilm(db) as store:
        _assert_consolidated_once(store, "amy", 8)


def _open_minilm(db: Path) -> Store:
    from timem.embed.minilm import MiniLMEmbedder

    emb = MiniLMEmbedder()
    return Store(db, emb.model_id, emb.dim)


def test_l1_segments_are_embedded_before_the_write_transaction_not_inside_it(tmp_path, embedder):
    """Issue 26: read-your-writes and the worker's L1 step embed before they take the store's writer (a write
    transaction that waits for the embedder holds up every other write)."""
    calls: list[tuple[int, bool]] = []

    class Watched:
        model_id, dim = embedder.model_id, embedder.dim

        def embed(self, texts):
            calls.append((len(texts), eng.store.writer._is_owned()))  # held by this thread: inside a transaction
            return embedder.embed(texts)

    db = tmp_path / "timem.duckdb"
    config = load_config(env={}, db_path=db, llm_backend="none", cache_dir=tmp_path / "cache",
                         consolidation_mode="extractive", memory_extractor="rules", online_queue=True)
    with MemoryEngine(config, Store(db, embedder.model_id, embedder.dim), Watched(), None) as eng:
        lock = threading.RLock()
        eng.start_queue_worker(lock)
        with lock:  # the worker waits: the recall's read-your-writes writes the segments
            _write_days(eng, "amy", 2)
            assert eng.store.nodes("amy", 1) == []
            eng.recall("amy", "What did I bake?", BASE + timedelta(days=3), persist=False)
            assert len(eng.store.nodes("amy", 1)) == 4  # a segment per turn
        _write_days(eng, "bob", 2)  # the worker's own L1 step
        assert eng.queue.worker.wait_idle(60)
        eng.queue.worker.stop()
        assert len(eng.store.nodes("bob", 1)) == 4
    assert calls and not [c for c in calls if c[1]], calls


def test_a_segment_is_written_with_the_vector_of_its_own_text_whatever_was_embedded_before(tmp_path, embedder):
    with _engine(tmp_path / "timem.duckdb", embedder) as eng:
        lock = threading.RLock()
        eng.start_queue_worker(lock)
        with lock:  # the worker waits: the test writes the segments
            _write_days(eng, "amy", 2)
            early = eng.consolidator.embed_l1("amy", ["s0", "s1"])
            assert len(early) == 4 and eng.store.nodes("amy", 1) == []  # a segment per turn; reads only
            stale, *kept = early
            with eng.store.transaction():  # as if the first segment's text changed after it was embedded
                written = eng.consolidator.write_l1("amy", ["s0", "s1"], {"no such text": early[stale],
                                                                          **{k: early[k] for k in kept}})
            stored = eng.store.embeddings([n.id for n in written])
            assert sorted(n.content for n in written) == sorted(early)
            for node in written:
                assert np.allclose(stored[node.id], embedder.embed([node.content])[0])  # never another text's


def test_jobs_of_a_user_erased_between_two_steps_write_nothing_more(tmp_path, embedder):
    with _engine(tmp_path / "timem.duckdb", embedder) as eng:
        lock = threading.RLock()
        eng.start_queue_worker(lock)
        with lock:
            _write_days(eng, "amy", 2)
            jobs = eng.store.claim_jobs("amy")
            real = eng.consolidator.write_l1

            def then_erase(user_id, session_ids, vectors=None):
                out = real(user_id, session_ids, vectors)
                eng.store.erase_user(user_id)  # as DELETE /v1/users/amy between the worker's steps
                return out

            eng.consolidator.write_l1 = then_erase
            eng.run_jobs(jobs)
            eng.consolidator.write_l1 = real
            tables = [r[0] for r in eng.store.con.execute(
                "SELECT table_name FROM information_schema.columns WHERE column_name = 'user_id'").fetchall()]
            left = {t: n for t in tables
                    if (n := eng.store.con.execute(f"SELECT count(*) FROM {t} WHERE user_id = 'amy'").fetchone()[0])}
            assert left == {}, left  # e.g. a segment-tree state or an audit row naming the erased user
            assert eng.store.queue_counts() == {"pending": 0, "running": 0, "done": 0, "failed": 0}


def test_a_later_successful_job_resolves_the_users_failed_ones(tmp_path, embedder):
    with _engine(tmp_path / "timem.duckdb", embedder, online_queue=False) as eng:
        real, calls = eng.writes.consolidate_online, []

        def failing_once(user_id, **kw):
            calls.append(user_id)
            if len(calls) == 1:
                raise StoreError("disk full; free space and retry the job")
            return real(user_id, **kw)

        eng.writes.consolidate_online = failing_once
        with pytest.raises(StoreError, match="disk full"):  # no worker: the write runs its job and says so
            eng.add_exchange("amy", "s1", "I baked rye bread.", "Nice!", BASE)
        assert eng.store.queue_counts()["failed"] == 1
        eng.add_exchange("amy", "s2", "I baked spelt bread.", "Nice!", BASE + timedelta(days=1))
        assert eng.store.queue_counts() == {"pending": 0, "running": 0, "done": 2, "failed": 0}
        assert {n.session_id for n in eng.store.nodes("amy", 2)} == {"s1"}  # the failed job's session, written now


def test_a_chat_message_is_not_recalled_as_its_own_memory(tmp_path, embedder):
    """A new-user trial over the service: "What is my job?" was answered from a context that held only the question
    itself (stored before it is answered, its segment was written by read-your-writes with the session's pending
    job) and got "You are a software developer."."""
    with _engine(tmp_path / "timem.duckdb", embedder) as eng:
        lock = threading.RLock()
        eng.start_queue_worker(lock)
        with lock:  # the worker waits: the first exchange's job is pending when the question comes
            eng.chat_turn("amy", "s1", "My dog is called Rex.", BASE)
            turn = eng.chat_turn("amy", "s1", "What is my zorblax job?", BASE + timedelta(minutes=1))
            assert "zorblax" not in turn.trace.context, turn.trace.context
            assert any("zorblax" in n.content for n in eng.store.nodes("amy", 1))  # it is a memory, for later
            later = eng.recall("amy", "zorblax", BASE + timedelta(minutes=2), persist=False)
            assert "zorblax" in later.context
        eng.queue.worker.stop()


def test_a_reply_that_only_says_dont_know_is_not_recalled(tmp_path, embedder):
    """A new-user trial: after a restore, "My cat's name is Mochi." was in the context next to the earlier
    "What is my cat's name? / Assistant: You don't know." and the answer stayed "You don't know."."""
    with _engine(tmp_path / "timem.duckdb", embedder, online_queue=False) as eng:
        eng.add_exchange("amy", "s1", "My cat's name is Mochi.", "Lovely name!", BASE)
        eng.add_exchange("amy", "s1", "What is my cat's name?", "You don't know.", BASE + timedelta(minutes=1))
        eng.add_exchange("amy", "s1", "I don't know if I should adopt a second cat.", "Take your time.",
                         BASE + timedelta(minutes=2))
        res = eng.recall("amy", "What is my cat's name?", BASE + timedelta(minutes=3), persist=False)
        assert "Mochi" in res.context and "You don't know" not in res.context, res.context
        assert "second cat" in eng.recall("amy", "Should I adopt a second cat?", BASE + timedelta(minutes=3),
                                          persist=False).context  # "I don't know if …" says something
