"""Write latency benchmark (issue 26): what one chat write costs, and when it becomes recallable.

Two stores, each in a fresh DuckDB file:

* ``conv-26``: the LoCoMo conversation conv-26 (``tests/data/locomo-dev.json``) ingested with
  :meth:`MemoryEngine.ingest` (no LLM: verbatim L1, extractive L2-L5);
* ``synthetic-N`` (``--sizes``, default 20,000): N synthetic L1 segments of one user (the texts of
  ``bench/recall_latency.py``'s generator, random unit vectors: vectors only cost, never rank here),
  inserted with :meth:`Store.add_nodes` in batches of 1,000. ``--store-only``: no engine on these (its first
  chat write reads memory items from every segment, minutes at 20k), only :meth:`Store.add_nodes` of one node,
  the first BM25 search after it and a second one (``bm25_alone``).

With the queue (the default; :func:`measure_queued`), ``--writes`` chat exchanges are acknowledged once their turns
and job are stored, and the ack, the time until the write is recallable and until the worker consolidated it are
reported. ``--sync`` measures the path without the queue instead:

Then ``--writes`` chat exchanges (a new session each time, each message holding a word that is nowhere else
in the file), and after each one:

* ``write_ack`` -- :meth:`MemoryEngine.add_exchange` until it returns (with the code of this branch before
  the write queue: turns, L1 segment, consolidation, memory items, segment tree, then the index upkeep);
* ``store_add_l1`` -- :meth:`Store.add_nodes` of one L1 node alone (the node row and its index upkeep);
* ``first_bm25_after_write`` -- the first :meth:`Store.search_bm25` after the write (before issue 26 §2 it
  rebuilt the whole fts index first);
* ``recallable`` -- from the start of the write until a BM25 search for the message's unique word finds the
  write's L1 segment (``write_ack`` + that search);
* ``recall_after_write`` / ``recall_alone`` -- :meth:`MemoryEngine.recall` (no LLM, not persisted) right after
  a write, and again with no write in between.

Run it with the code to measure on ``PYTHONPATH`` (e.g. an export of the commit before the change, then this
branch); results as JSON on stdout and in ``--out``. Not a test: nothing here asserts a speed.

    nice -n 19 .venv/bin/python bench/write_latency.py --sizes 20000 --writes 20 --out /tmp/wl.json
    nice -n 19 .venv/bin/python bench/write_latency.py --sync --sizes '' --writes 10   # without the queue
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from recall_latency import T0, _node, build_user, questions, turn_pool  # noqa: E402

from timem.config import Config  # noqa: E402
from timem.datasets.locomo import load_locomo  # noqa: E402
from timem.embed.minilm import MiniLMEmbedder  # noqa: E402
from timem.engine import MemoryEngine  # noqa: E402
from timem.store.duckdb_store import Store  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
QUEUE = True  #: chat writes through the consolidation queue (``--sync``: consolidated in the write)
ACK_ONLY = False  #: ``--ack-only``: only the queued write's ack (:func:`measure_ack_only`)


def _ms(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t) * 1000


def _summary(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"p50": round(statistics.median(xs), 1), "p95": round(xs[min(len(xs) - 1, int(0.95 * len(xs)))], 1),
            "max": round(xs[-1], 1), "n": len(xs)}


def _word(rng: random.Random) -> str:
    return "zq" + "".join(rng.choice(string.ascii_lowercase) for _ in range(10))


def measure_queued(engine: MemoryEngine, user: str, start: datetime, writes: int, rng: random.Random,
                   question: str) -> dict[str, Any]:
    """Chat writes with the consolidation queue's worker running (``online_queue``, as the memory service runs
    them; every engine call under the worker's lock, as the service's requests):

    * ``queued_ack`` -- :meth:`MemoryEngine.add_exchange` until it returns (turns + job stored);
    * ``queued_recallable`` -- from the write's start until a recall's read-your-writes step (the L1 segments of
      the user's queued jobs, :meth:`MemoryEngine.read_your_writes`) and a BM25 search find the write's segment;
    * ``queued_consolidated`` -- from the write's start until the worker has finished the job (memory items,
      closed windows, segment tree);
    * ``recall_right_after_write`` -- a :meth:`MemoryEngine.recall` (no LLM, not persisted) right after the ack.
    """
    store = engine.store
    lock = threading.Lock()
    worker = engine.start_queue_worker(lock, poll_seconds=0.05)
    rows: dict[str, list[float]] = {k: [] for k in ("queued_ack", "queued_recallable", "queued_consolidated",
                                                    "recall_right_after_write")}
    with lock:
        engine.recall(user, question, start, persist=False)  # warm
    for i in range(writes):
        at = start + timedelta(days=i + 1, minutes=30)
        word = _word(rng)
        t0 = time.perf_counter()
        with lock:
            engine.add_exchange(user, f"bench-q{i}", f"I finally visited {word} with my sister.", "How nice!", at)
        t1 = time.perf_counter()
        with lock:
            engine.read_your_writes(user)
            found = store.search_bm25(user, word, 1, 5)
        t2 = time.perf_counter()
        if not found:
            raise SystemExit(f"the queued write's L1 segment is not found by its word {word}")
        if not worker.wait_idle(600):
            raise SystemExit("the queue worker did not finish within 600 s")
        t3 = time.perf_counter()
        rows["queued_ack"].append((t1 - t0) * 1000)
        rows["queued_recallable"].append((t2 - t0) * 1000)
        rows["queued_consolidated"].append((t3 - t0) * 1000)
        with lock:
            engine.add_exchange(user, f"bench-r{i}", f"We talked about {_word(rng)} again.", "Nice.",
                                at + timedelta(hours=1))
        t0 = time.perf_counter()
        with lock:
            engine.recall(user, question, at + timedelta(hours=2), persist=False)
        rows["recall_right_after_write"].append((time.perf_counter() - t0) * 1000)
        worker.wait_idle(600)
    worker.stop()
    engine.queue.worker = None
    return {k: _summary(v) for k, v in rows.items()}


def measure_ack_only(engine: MemoryEngine, user: str, start: datetime, writes: int, rng: random.Random,
                     question: str) -> dict[str, Any]:
    """``--ack-only``: the queued write's ack alone (the worker runs but is held off by the lock the benchmark
    holds, so the jobs stay queued: no consolidation, however slow, runs between the writes)."""
    engine.store.checkpoint()  # as a service finds a file it opens (the bulk insert's WAL is written out)
    lock = threading.RLock()
    lock.acquire()
    worker = engine.start_queue_worker(lock)
    acks: list[float] = []
    for i in range(writes):
        at = start + timedelta(days=i + 1, minutes=30)
        t0 = time.perf_counter()
        engine.add_exchange(user, f"bench-a{i}", f"I finally visited {_word(rng)} with my sister.", "Nice!", at)
        acks.append((time.perf_counter() - t0) * 1000)
    queued = engine.store.queue_counts()["pending"]
    worker.stop(timeout=0)  # it claims nothing once it gets the lock
    lock.release()
    worker.stop()
    engine.queue.worker = None
    return {"queued_ack": _summary(acks), "queued_ack_first": round(acks[0], 1), "jobs_left_queued": queued}


def measure(engine: MemoryEngine, user: str, start: datetime, writes: int, rng: random.Random,
            question: str) -> dict[str, Any]:
    store = engine.store
    rows: dict[str, list[float]] = {k: [] for k in ("write_ack", "store_add_l1", "first_bm25_after_write",
                                                    "recallable", "recall_after_write", "recall_alone")}
    engine.recall(user, question, start, persist=False)  # warm: embedder, caches
    for i in range(writes):
        at = start + timedelta(days=i + 1)
        word = _word(rng)
        t0 = time.perf_counter()
        engine.add_exchange(user, f"bench-s{i}", f"I finally visited {word} with my sister.", "That sounds lovely!", at)
        t1 = time.perf_counter()
        found = store.search_bm25(user, word, 1, 5)
        t2 = time.perf_counter()
        if not found:
            raise SystemExit(f"the write's L1 segment is not found by its word {word}")
        rows["write_ack"].append((t1 - t0) * 1000)
        rows["first_bm25_after_write"].append((t2 - t1) * 1000)
        rows["recallable"].append((t2 - t0) * 1000)
        engine.add_exchange(user, f"bench-t{i}", f"We talked about {_word(rng)} again.", "Nice.",
                            at + timedelta(hours=1))
        t0 = time.perf_counter()
        engine.recall(user, question, at + timedelta(hours=2), persist=False)
        t1 = time.perf_counter()
        engine.recall(user, question, at + timedelta(hours=2), persist=False)
        t2 = time.perf_counter()
        rows["recall_after_write"].append((t1 - t0) * 1000)
        rows["recall_alone"].append((t2 - t1) * 1000)
        node = store.node(found[0][0])
        extra = node.model_copy(update={"id": f"{node.id}:bench{i}", "window_key": f"bench{i}", "child_ids": []})
        vec = store.embeddings([node.id])[node.id][None, :]
        t0 = time.perf_counter()
        store.add_nodes([extra], vec)
        rows["store_add_l1"].append((time.perf_counter() - t0) * 1000)
    return {k: _summary(v) for k, v in rows.items()}


def measure_write_then_recall(engine: MemoryEngine, user: str, start: datetime, writes: int, rng: random.Random,
                              asked: list[str]) -> dict[str, Any]:
    """``--store``: the live path's target (issue 26: write then recall ≤ 1.2× recall alone), on a kept store.
    Queued writes, the worker held off (the jobs stay queued: no consolidation runs between the steps). Per round, two
    questions drawn from ``asked`` (never repeated):

    * ``recall_alone`` -- a :meth:`MemoryEngine.recall` with no write since the last recall;
    * ``write_ack`` -- the chat exchange's :meth:`MemoryEngine.add_exchange` (turns, L1 segment, job);
    * ``recall_after_write`` -- the recall right after it (read-your-writes, the copies patched, the tree synced);
    * ``write_then_recall`` -- the two together, and its ratio to ``recall_alone`` (median over median).
    """
    rows: dict[str, list[float]] = {k: [] for k in ("recall_alone", "write_ack", "recall_after_write",
                                                    "write_then_recall")}
    lock = threading.RLock()  # held here throughout: the worker (so writes are queued, as in the service) never runs
    lock.acquire()
    worker = engine.start_queue_worker(lock)
    qs = iter(asked)
    for _ in range(3):  # warm: embedder, copies, caches
        engine.recall(user, next(qs), start, persist=False)
    for i in range(writes):
        at = start + timedelta(days=i + 1)
        t0 = time.perf_counter()
        engine.recall(user, next(qs), at, persist=False)
        rows["recall_alone"].append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        engine.add_exchange(user, f"bench-w{i}", f"I finally visited {_word(rng)} with my sister.", "How nice!",
                            at + timedelta(minutes=5))
        t1 = time.perf_counter()
        engine.recall(user, next(qs), at + timedelta(minutes=10), persist=False)
        t2 = time.perf_counter()
        rows["write_ack"].append((t1 - t0) * 1000)
        rows["recall_after_write"].append((t2 - t1) * 1000)
        rows["write_then_recall"].append((t2 - t0) * 1000)
    out: dict[str, Any] = {k: _summary(v) for k, v in rows.items()}
    out["ratio_p50"] = round(out["write_then_recall"]["p50"] / out["recall_alone"]["p50"], 2)
    out["jobs_left_queued"] = engine.store.queue_counts()["pending"]
    worker.stop(timeout=0)  # it claims nothing once it gets the lock
    lock.release()
    worker.stop()
    engine.queue.worker = None
    return out


def kept_store(emb: MiniLMEmbedder, folder: Path, source: Path, writes: int, rng: random.Random) -> dict[str, Any]:
    """``--store``: a copy of a store kept by ``bench/recall_latency.py --keep-db`` (its user ``bench-a``), the
    segment tree brought in step first (as :mod:`recall_profile` does), then :func:`measure_write_then_recall`."""
    copy = folder / source.name
    shutil.copyfile(source, copy)
    cfg = Config().with_overrides(db_path=str(copy), online_queue=True)
    store = Store(cfg.store.db_path, emb.model_id, emb.dim)
    rc = cfg.recall
    store.segment_tree.sync("bench-a", rc.segtree_threshold, rc.segtree_max_children)
    n = len(store.nodes("bench-a", 1))
    engine = MemoryEngine(cfg, store, emb, None)
    last = store.con.execute("SELECT max(span_end) FROM nodes WHERE user_id = 'bench-a'").fetchone()[0]
    start = max(T0, last.replace(tzinfo=UTC)) + timedelta(days=1)
    out = {"store": source.name, "l1_nodes": n,
           **measure_write_then_recall(engine, "bench-a", start, writes, rng, questions(2 * writes + 3, 27))}
    store.close()
    return out


def conv26(emb: MiniLMEmbedder, folder: Path, writes: int, rng: random.Random) -> dict[str, Any]:
    cfg = Config().with_overrides(db_path=str(folder / "conv26.duckdb"), online_queue=QUEUE)
    store = Store(cfg.store.db_path, emb.model_id, emb.dim)
    engine = MemoryEngine(cfg, store, emb, None)
    user = [u for u in load_locomo(REPO / "tests" / "data" / "locomo-dev.json", None, cfg.time.tz)
            if u.user_id == "conv-26"][0]
    _, ingest = _ms(lambda: engine.ingest([user]))
    nodes = store.con.execute("SELECT count(*) FROM nodes").fetchone()[0]  # type: ignore[index]
    last = max(t.event_time for t in user.turns)
    run = measure_ack_only if ACK_ONLY else measure_queued if QUEUE else measure
    out = {"store": "conv-26", "nodes": nodes, "ingest_s": round(ingest / 1000, 2),
           **run(engine, user.user_id, last, writes, rng, "What did Caroline research?")}
    store.close()
    return out


def store_writes(store: Store, writes: int, rng: random.Random) -> dict[str, Any]:
    """One L1 node written with :meth:`Store.add_nodes`, then the first BM25 search, ``writes`` times (no engine:
    no consolidation, memory items or segment tree)."""
    rows: dict[str, list[float]] = {"store_add_l1": [], "first_bm25_after_write": [], "bm25_alone": []}
    node = store.nodes("bench-a", 1, ids=["bench-a:L1:0"])[0]
    vec = store.embeddings([node.id])[node.id][None, :]
    for i in range(writes):
        word = _word(rng)
        extra = node.model_copy(update={"id": f"{node.id}:w{i}", "window_key": f"w{i}",
                                        "content": f"{node.content} We went to {word}."})
        t0 = time.perf_counter()
        store.add_nodes([extra], vec)
        t1 = time.perf_counter()
        found = store.search_bm25("bench-a", word, 1, 5)
        t2 = time.perf_counter()
        store.search_bm25("bench-a", word, 1, 5)
        t3 = time.perf_counter()
        if [i for i, _ in found] != [extra.id]:
            raise SystemExit(f"the written node is not found by its word {word}")
        rows["store_add_l1"].append((t1 - t0) * 1000)
        rows["first_bm25_after_write"].append((t2 - t1) * 1000)
        rows["bm25_alone"].append((t3 - t2) * 1000)
    return {k: _summary(v) for k, v in rows.items()}


def synthetic(emb: MiniLMEmbedder, folder: Path, n: int, writes: int, rng: random.Random,
              store_only: bool = False) -> dict[str, Any]:
    cfg = Config().with_overrides(db_path=str(folder / f"synthetic-{n}.duckdb"), online_queue=QUEUE)
    store = Store(cfg.store.db_path, emb.model_id, emb.dim)
    pool = turn_pool(4000, 7)
    u = build_user("bench-a", n, len(pool), 8, 3, np.random.default_rng(7), pool)
    vecs = np.random.default_rng(8).standard_normal((n, emb.dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    t = time.perf_counter()
    for b in range(0, n, 1000):
        chunk = u["l1"][b:b + 1000]
        store.add_nodes([_node("bench-a", 1, c["id"], f"segment:{c['id']}", c["t"], c["t"], c["content"], [],
                               c["session"]) for c in chunk], vecs[b:b + 1000])
    build = time.perf_counter() - t
    store.search_bm25("bench-a", "hiking", 1, 5)  # the index as a batch leaves it (built once before the change)
    if store_only:
        out = {"store": f"synthetic-{n}", "nodes": n, "build_s": round(build, 2), **store_writes(store, writes, rng)}
        store.close()
        return out
    engine = MemoryEngine(cfg, store, emb, None)
    last = max(c["t"] for c in u["l1"])
    run = measure_ack_only if ACK_ONLY else measure_queued if QUEUE else measure
    out = {"store": f"synthetic-{n}", "nodes": n, "build_s": round(build, 2),
           **run(engine, "bench-a", last + timedelta(days=1), writes, rng, "When did Caroline go hiking?")}
    store.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="20000", help="synthetic store sizes (L1 nodes), comma-separated; '' for none")
    ap.add_argument("--writes", type=int, default=20)
    ap.add_argument("--no-conv26", action="store_true")
    ap.add_argument("--store-only", action="store_true",
                    help="synthetic stores: Store.add_nodes and the first BM25 search only (no engine)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--sync", action="store_true",
                    help="consolidate inside each write (online_queue off, the path before the queue); default: the "
                         "queue with its worker (measure_queued)")
    ap.add_argument("--store", type=Path, action="append", default=[],
                    help="a store kept by bench/recall_latency.py --keep-db (copied): write then recall against "
                         "recall alone (measure_write_then_recall); repeatable. Give it turns and sessions first "
                         "(bench/synthetic_turns.py): without them a write costs what a user of one session pays")
    ap.add_argument("--ack-only", action="store_true",
                    help="queue: the write ack alone, the jobs left queued (no consolidation between the writes)")
    args = ap.parse_args()
    global QUEUE, ACK_ONLY
    QUEUE, ACK_ONLY = not args.sync, args.ack_only
    emb = MiniLMEmbedder()
    rng = random.Random(26)
    import timem

    commit = subprocess.run(["git", "-C", str(Path(timem.__file__).parent), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    doc: dict[str, Any] = {"timem": str(Path(timem.__file__).parent), "commit": commit or "unknown",
                           "at": datetime.now(UTC).isoformat(timespec="seconds"), "loadavg": os.getloadavg(),
                           "cpus": os.cpu_count(), "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_conv26:
            doc["runs"].append(conv26(emb, Path(tmp), args.writes, rng))
            print(json.dumps(doc["runs"][-1]), file=sys.stderr)
        for kept in args.store:
            doc["runs"].append(kept_store(emb, Path(tmp), kept, args.writes, rng))
            print(json.dumps(doc["runs"][-1]), file=sys.stderr)
        for n in [int(s) for s in args.sizes.split(",") if s]:
            doc["runs"].append(synthetic(emb, Path(tmp), n, args.writes, rng, args.store_only))
            print(json.dumps(doc["runs"][-1]), file=sys.stderr)
    doc["loadavg_after"] = os.getloadavg()
    text = json.dumps(doc, indent=1)
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
