"""Profile one recall configuration on a store kept by ``bench/recall_latency.py --keep-db``: latency, DuckDB
queries per recall, a cProfile of the recall, and a dump of every recall's result (to diff two code versions).

The store file is copied first (the original is never written); the measured user's segment tree is
brought in step before timing, so no recall pays for building it. Every ``execute`` / ``executemany``
on the store's connection goes through a counting wrapper (here, not in product code): per recall the
number of queries and, over all recalls, the time per query shape (its first 70 characters).

Usage::

    PYTHONPATH=. .venv/bin/python bench/recall_latency.py --sizes 3000 --queries 20 --pool 1500 --no-hnsw \\
        --keep-db --db-dir /tmp/latdb --out /tmp/rl_3k
    PYTHONPATH=. .venv/bin/python bench/recall_profile.py /tmp/latdb/*/bench-3000.duckdb --queries 20 \\
        --dump /tmp/recalls.jsonl

The dump (``--dump``: one JSON line per question: plan, candidates with every score, kept node ids,
context, notes; no timings) is identical for two code versions iff they recall the same. Not a test:
nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import shutil
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).parent))
from recall_latency import T0, USER, questions

from timem.config import Config
from timem.embed.minilm import MiniLMEmbedder
from timem.recall.options import RecallOptions
from timem.recall.pipeline import recall
from timem.store import segtree_tables as segstore
from timem.store.duckdb_store import Store


class CountingConnection:
    """Delegates to a DuckDB connection; counts and times ``execute`` / ``executemany`` by query shape."""

    def __init__(self, con: Any) -> None:
        self._con = con
        self.calls = 0
        self.by_shape: dict[str, list[float]] = {}

    def _run(self, fn: Any, sql: str, *a: Any) -> Any:
        t = time.perf_counter()
        out = fn(sql, *a)
        shape = re.sub(r"\s+", " ", sql).strip()[:70]
        self.by_shape.setdefault(shape, []).append((time.perf_counter() - t) * 1000)
        self.calls += 1
        return out

    def from_arrow(self, *a: Any) -> Any:  # a relation over an Arrow batch: one query when fetched
        self.calls += 1
        self.by_shape.setdefault("from_arrow(...) relation", []).append(0.0)
        return self._con.from_arrow(*a)

    def execute(self, sql: str, *a: Any) -> Any:
        return self._run(self._con.execute, sql, *a)

    def executemany(self, sql: str, *a: Any) -> Any:
        return self._run(self._con.executemany, sql, *a)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * (len(xs) - 1))))]


#: (module path suffix, function) of the recall's stages and hot spots, for ``--cpu-profile``
STAGES = [("recall/pipeline.py", "_recall"), ("recall/state.py", "query_vector"), ("recall/pipeline.py", "_plan"),
          ("recall/leaves.py", "select_leaves"), ("recall/segtree.py", "propagate_segtree"),
          ("recall/leaves.py", "fuse"), ("recall/leaves.py", "rerank"), ("recall/duplicates.py", "near_duplicates"),
          ("recall/ancestors.py", "fetch_lineage"), ("recall/ancestors.py", "lift_ancestors"),
          ("recall/pipeline.py", "_gate"), ("recall/pipeline.py", "_items"), ("recall/pipeline.py", "_context"),
          ("recall/pipeline.py", "neighbour_leaves"), ("recall/condense.py", "condense"),
          ("recall/gating.py", "apply_budget"), ("recall/context.py", "best_passage"),
          ("recall/context.py", "fit_budget"), ("recall/context_fit.py", "fit_context"),
          ("recall/context.py", "render_context"), ("pydantic/main.py", "model_copy")]


def print_stages(stats: pstats.Stats, per: int) -> None:
    """CPU ms per recall (cumulative: the function and what it calls) of each of :data:`STAGES` that ran."""
    rows: dict[tuple[str, str], list[float]] = {}
    for (path, _line, name), (_cc, nc, _tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        for suffix, fn in STAGES:
            if name == fn and path.endswith(suffix):
                row = rows.setdefault((suffix, fn), [0, 0.0])
                row[0] += nc
                row[1] += ct
    print("stage CPU ms per recall (cProfile, cumulative; calls per recall):")
    for key in STAGES:
        if key in rows:
            n, ct = rows[key]
            print(f"  {ct * 1000 / per:8.2f}  {n / per:7.1f}  {key[0]}:{key[1]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db", type=Path, help="a bench-N.duckdb kept by recall_latency.py --keep-db (copied, not written)")
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=3, help="recall_latency.py's --seed (questions use seed + 1)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=JSON", help="Config override")
    ap.add_argument("--dump", type=Path, default=None, help="write every recall's result (no timings) here")
    ap.add_argument("--profile", type=int, default=30, help="cProfile rows to print (0: no profile pass)")
    ap.add_argument("--cpu-profile", action="store_true",
                    help="time the cProfile pass with CPU time (time.process_time) instead of wall time, and print "
                    "CPU ms per recall of the recall's stages (cumulative, STAGES)")
    ap.add_argument("--pstats", type=Path, default=None, help="also save the cProfile pass's stats here (pstats)")
    ap.add_argument("--threads", type=int, default=0, help="DuckDB threads (0: DuckDB's default)")
    ap.add_argument("--working-set-mb", type=float, default=None,
                    help="the store's working-set budget (StoreSettings.working_set_mb; default: its default)")
    ap.add_argument("--users", default=USER, help="comma-separated users asked in turn (e.g. bench-a,bench-b with a "
                    "budget that holds one: every recall a miss)")
    ap.add_argument("--backend", choices=["onnx", "torch"], default=Config().embedding.embed_backend,
                    help="MiniLM's backend (Config.embedding.embed_backend; default: the product's default)")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="timem-recall-profile-"))
    db = tmp / args.db.name
    shutil.copy(args.db, db)
    emb = MiniLMEmbedder(backend=args.backend)
    kw: dict[str, Any] = {} if args.working_set_mb is None else {"working_set_mb": args.working_set_mb}
    store = Store(db, emb.model_id, emb.dim, **kw)
    users = [u for u in args.users.split(",") if u]
    if args.threads:
        store.con.execute(f"SET threads = {int(args.threads)}")
    cfg = Config(llm_backend="none", planner="centroid", gate="score",
                 **{k: json.loads(v) for k, _, v in (x.partition("=") for x in args.set)})
    for u in users:
        segstore.sync(store, u, cfg.recall.segtree_threshold, cfg.recall.segtree_max_children)
    store.refresh_fts()
    n_internal = store.con.execute("SELECT height, count(*) FROM segtree_nodes WHERE user_id = ? GROUP BY ALL "
                                   "ORDER BY ALL", [USER]).fetchall()
    qs = questions(args.queries + args.warmup, args.seed + 1)
    qt = T0 + timedelta(days=4000)
    counter = CountingConnection(store.con)  # this thread's cursor (Store.con is a property since per-thread cursors)
    store.cursors.current = lambda: counter  # type: ignore[method-assign,assignment,return-value]

    asked = iter(range(10**9))

    def one(q: str) -> Any:
        user = users[next(asked) % len(users)]
        return recall(store, emb, None, cfg, user, q, qt, options=RecallOptions(gate="score", persist=False))

    for q in qs[: args.warmup]:
        one(q)
    counter.by_shape.clear()
    index = getattr(store, "memory_index", None)
    if hasattr(index, "reset_counts"):
        index.reset_counts()
    walls, cpus, nq = [], [], []
    stages: dict[str, list[float]] = {}
    dump = []
    load0 = os.getloadavg()
    for q in qs[args.warmup:]:
        c0, w0, t0 = counter.calls, time.perf_counter(), time.process_time()
        r = one(q)
        walls.append((time.perf_counter() - w0) * 1000)
        cpus.append((time.process_time() - t0) * 1000)
        nq.append(counter.calls - c0)
        for k, v in r.trace.latency_ms.items():
            stages.setdefault(k, []).append(v)
        dump.append({"question": q, "plan": r.trace.plan.model_dump(mode="json"),
                     "candidates": [c.model_dump(mode="json") for c in r.trace.candidates],
                     "ancestors": [a.model_dump(mode="json") for a in r.trace.ancestors],
                     "node_ids": r.trace.node_ids, "context": r.context, "tokens": r.trace.context_tokens,
                     "notes": r.trace.notes})
    load1 = os.getloadavg()
    print(f"store {args.db} (copy), user {USER}: segment tree nodes per height {n_internal}")
    print(f"load average {tuple(round(x, 2) for x in load0)} -> {tuple(round(x, 2) for x in load1)}")
    print(f"recall over {len(walls)} questions: wall p50 {_pct(walls, 50):.1f} p95 {_pct(walls, 95):.1f} ms | "
          f"CPU p50 {_pct(cpus, 50):.1f} p95 {_pct(cpus, 95):.1f} ms")
    print("stages wall p50 / p95 ms: " + ", ".join(f"{k} {_pct(v, 50):.1f} / {_pct(v, 95):.1f}"
                                                  for k, v in stages.items()))
    print(f"DuckDB queries per recall: min {min(nq)} median {statistics.median(nq)} max {max(nq)}")
    if hasattr(index, "stats"):
        print(f"working set (users {users}): {json.dumps(index.stats())}")
    per = len(walls)
    print("query shapes (calls per recall, ms per recall):")
    for shape, ts in sorted(counter.by_shape.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {len(ts) / per:5.1f}  {sum(ts) / per:7.2f}  {shape}")
    if args.dump:
        args.dump.write_text("".join(json.dumps(d, sort_keys=True) + "\n" for d in dump), encoding="utf-8")
        print(f"wrote {args.dump}")
    if args.profile:
        prof = cProfile.Profile(time.process_time) if args.cpu_profile else cProfile.Profile()
        prof.enable()
        for q in qs[args.warmup:]:
            one(q)
        prof.disable()
        if args.pstats:
            prof.dump_stats(args.pstats)
        out = io.StringIO()
        stats = pstats.Stats(prof, stream=out)
        stats.sort_stats("cumulative").print_stats(r"timem/", args.profile)
        print(out.getvalue())
        if args.cpu_profile:
            print_stages(stats, per)
    store.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
