"""Recall latency at 1M L1 nodes spread over 100 users (issue 26 §3): one file, per-user working sets, LRU budget.

Two steps:

``build SRC OUT --users 100``
    ``SRC`` is a ``bench-N.duckdb`` kept by ``bench/recall_latency.py --keep-db`` (users ``bench-a`` and ``bench-b``,
    N L1 segments each with their L2–L5 ancestors, BM25 postings, real MiniLM vectors). It is copied to ``OUT``;
    both users' segment trees are synced there through :class:`~timem.store.duckdb_store.Store`; then every row of
    the two users is cloned in SQL into ``--users`` users ``u000``, ``u001``, … (even ones from ``bench-a``, odd
    ones from ``bench-b``) and the two originals are removed. A clone renames the user and prefixes every node id
    (and child, parent, history and segment-tree leaf id) with it; nothing else changes, so each clone's postings,
    vectors and segment tree are those its source had. Building 1M nodes through ``Store.add_nodes`` runs at
    ~200 L1 rows/s on this host (more than 90 minutes); a clone is one ``INSERT … SELECT`` per table.
    ``timem check`` runs on ``OUT`` afterwards (unless ``--no-check``): the only violation allowed is
    ``source-turns``, which SRC has too (the bench writes nodes without turns).

``run OUT --budget-mb 1024 --access uniform``
    Opens ``OUT`` (read on a private copy unless ``--in-place``) with the given working-set budget
    (``StoreSettings.working_set_mb``) and asks ``--queries`` questions, each of one user drawn by ``--access``:

    * ``uniform``: every user equally likely;
    * ``skewed``: 80 % of the questions go to 10 users, 20 % to the other 90.

    Before timing, every user is asked once (``--warm-each-user``, in a random order) and ``--warmup`` questions
    are asked as the timed ones are, so the cache is in its steady state. Each
    recall is the default recipe without LLM (centroid planner, score gate, ``persist=False``), as
    ``bench/recall_profile.py``. Reported: wall and CPU p50 / p95 / p99, the same split by whether the recall
    loaded any of the user's copies (a miss) or found them all (a hit), the working set's hit rates, bytes and
    evictions (:meth:`MemoryIndex.stats`), and the process RSS.

    Clones share their texts, and the recall stages cache some work by text (token counts, L1 lines, word sets).
    ``--cold-text-caches`` empties those caches before every recall, so a clone's recall does not profit from
    another clone's; use it for the published numbers.

Not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).parent))
import duckdb  # noqa: E402
from recall_latency import OTHER, T0, USER, questions  # noqa: E402

from timem.config import Config  # noqa: E402
from timem.embed.minilm import MiniLMEmbedder  # noqa: E402
from timem.recall.options import RecallOptions  # noqa: E402
from timem.recall.pipeline import recall  # noqa: E402
from timem.store import segtree_tables as segstore  # noqa: E402
from timem.store.duckdb_store import Store  # noqa: E402

#: tables keyed by user: (table, its id columns renamed with the user's prefix, list columns of ids likewise)
CLONED = [
    ("nodes", ["id", "parent_id"], ["child_ids", "history_ids"]),
    ("bm25_docs", ["node_id"], []),
    ("bm25_postings", ["node_id"], []),
    ("segtree_nodes", [], []),  # leaves (height 0) carry the L1 node id: renamed below
    ("segtree_state", [], []),
]
#: user-keyed tables that must be empty in SRC (the bench writes none of them)
MUST_BE_EMPTY = ["turns", "sessions", "memory_items", "memory_extractions", "segtree_summaries", "consolidation_jobs",
                 "write_requests"]


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * (len(xs) - 1))))] if xs else float("nan")


def _user_names(n: int) -> list[str]:
    return [f"u{k:03d}" for k in range(n)]


def clone_sql(table: str, ids: list[str], lists: list[str], src: str, dst: str) -> str:
    """``INSERT INTO table SELECT * REPLACE (…)`` copying ``src``'s rows as ``dst``'s: ids ``src:…`` become
    ``dst:…`` (``replace`` of the prefix only: ``regexp_replace`` anchored at the start)."""
    def ren(col: str) -> str:
        return f"regexp_replace({col}, '^{src}:', '{dst}:')"
    repl = [f"'{dst}' AS user_id"] + [f"{ren(c)} AS {c}" for c in ids]
    repl += [f"list_transform({c}, x -> {ren('x')}) AS {c}" for c in lists]
    if table == "segtree_nodes":
        repl.append(f"CASE WHEN height = 0 THEN {ren('id')} ELSE id END AS id")
    return f"INSERT INTO {table} SELECT * REPLACE ({', '.join(repl)}) FROM {table} WHERE user_id = '{src}'"


def build(args: argparse.Namespace) -> None:
    """Copy SRC to OUT, sync both users' segment trees, clone them into ``--users`` users, drop the originals."""
    t0 = time.perf_counter()
    if args.out.exists():
        raise SystemExit(f"{args.out} exists; remove it first")
    shutil.copy(args.src, args.out)
    emb = MiniLMEmbedder()
    cfg = Config(llm_backend="none")
    store = Store(args.out, emb.model_id, emb.dim)
    for u in (USER, OTHER):
        segstore.sync(store, u, cfg.recall.segtree_threshold, cfg.recall.segtree_max_children)
    store.close()
    print(f"{time.perf_counter() - t0:6.1f}s segment trees synced", file=sys.stderr, flush=True)
    con = duckdb.connect(str(args.out))
    for table in MUST_BE_EMPTY:
        n = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
        if n:
            raise SystemExit(f"{table} has {n} rows in {args.src}; this script clones only nodes, postings and trees")
    for k, dst in enumerate(_user_names(args.users)):
        src = USER if k % 2 == 0 else OTHER
        con.execute("BEGIN")
        for table, ids, lists in CLONED:
            con.execute(clone_sql(table, ids, lists, src, dst))
        con.execute("COMMIT")
        if k % 10 == 9:
            print(f"{time.perf_counter() - t0:6.1f}s {k + 1} users cloned", file=sys.stderr, flush=True)
    con.execute("BEGIN")
    for table, _, _ in CLONED:
        con.execute(f"DELETE FROM {table} WHERE user_id IN ('{USER}', '{OTHER}')")
    # a new nodes version: no process may reuse a cached copy of the old file (meta nodes_version, memory_index)
    con.execute("INSERT OR REPLACE INTO meta VALUES ('nodes_version', ?)", [f"clone-{os.urandom(8).hex()}"])
    con.execute("COMMIT")
    con.execute("CHECKPOINT")
    counts = con.execute("SELECT level, count(*), count(DISTINCT user_id) FROM nodes GROUP BY ALL ORDER BY ALL"
                         ).fetchall()
    con.close()
    print(f"{time.perf_counter() - t0:6.1f}s built {args.out} ({args.out.stat().st_size / 2**30:.2f} GiB): "
          f"nodes per level (level, rows, users) {counts}", file=sys.stderr, flush=True)
    if args.check:
        # the bench writes nodes without turns, so its L1 segments fail ``source-turns`` (SRC fails it as well);
        # every other invariant must hold
        r = subprocess.run([sys.executable, "-m", "timem", "check", "--db", str(args.out)], check=False,
                           capture_output=True, text=True)
        kinds: dict[str, int] = {}
        for line in (r.stdout + r.stderr).splitlines():
            if line.startswith("VIOLATION "):
                kind = line.split()[1].rstrip(":")
                kinds[kind] = kinds.get(kind, 0) + 1
        other = {k: v for k, v in kinds.items() if k != "source-turns"}
        print(f"{time.perf_counter() - t0:6.1f}s timem check exit {r.returncode}, violations by kind {kinds}",
              file=sys.stderr, flush=True)
        if other or (r.returncode and not kinds):
            print(r.stdout[-4000:] + r.stderr[-4000:], file=sys.stderr)
            raise SystemExit(f"timem check found more than the bench's missing source turns: {other}")


def _text_caches() -> list[Any]:
    """The recall stages' caches keyed by text (``functools.lru_cache``): emptied by ``--cold-text-caches``."""
    from timem import tokens
    from timem.recall import context, duplicates

    out = []
    for mod in (context, duplicates, tokens):
        for name in dir(mod):
            fn = getattr(mod, name)
            if callable(fn) and hasattr(fn, "cache_clear") and getattr(fn, "__module__", "") == mod.__name__:
                out.append(fn)
    return out


def _loads(stats: dict[str, Any]) -> int:
    return sum(v["loads"] for v in stats.values() if isinstance(v, dict) and "loads" in v)


def run(args: argparse.Namespace) -> None:
    """Time recalls of users drawn by ``--access`` under a working-set budget; print and write the summary."""
    db = args.db
    tmp: Path | None = None
    if not args.in_place:
        tmp = Path(tempfile.mkdtemp(prefix="timem-many-users-", dir=args.tmp_dir))
        db = tmp / args.db.name
        shutil.copy(args.db, db)
    emb = MiniLMEmbedder()
    cfg = Config(llm_backend="none", planner="centroid", gate="score")
    # the check reads every user's rows: on a store of its own without a working set, so that the measured store
    # starts empty
    probe = Store(db, emb.model_id, emb.dim, working_set_mb=0)
    users = [r[0] for r in probe.con.execute("SELECT DISTINCT user_id FROM nodes ORDER BY 1").fetchall()]
    l1 = probe.con.execute("SELECT count(*) FROM nodes WHERE level = 1").fetchone()[0]  # type: ignore[index]
    stale = [u for u in users if not segstore.is_current(probe, u, cfg.recall.segtree_threshold,
                                                         cfg.recall.segtree_max_children)]
    probe.close()
    if stale:
        raise SystemExit(f"segment trees not current for {len(stale)} users (e.g. {stale[:3]}); rebuild the file")
    store = Store(db, emb.model_id, emb.dim, working_set_mb=args.budget_mb)
    rng = random.Random(args.seed)
    hot = users[:10]
    cold = users[10:]

    def draw() -> str:
        if args.access == "uniform" or not cold:
            return rng.choice(users)
        return rng.choice(hot) if rng.random() < 0.8 else rng.choice(cold)

    qs = questions(500, args.seed + 1)
    qt = T0 + timedelta(days=4000)
    caches = _text_caches() if args.cold_text_caches else []
    index = store.memory_index

    gc_ms = [0.0]
    gc_start = [0.0]

    def on_gc(phase: str, info: dict[str, Any]) -> None:  # time spent in CPython's cyclic garbage collector
        if phase == "start":
            gc_start[0] = time.perf_counter()
        elif info.get("generation") is not None:
            gc_ms[0] += (time.perf_counter() - gc_start[0]) * 1000

    gc.callbacks.append(on_gc)

    def one(i: int) -> tuple[float, float, bool, str, float]:
        for c in caches:
            c.cache_clear()
        user = draw()
        before = _loads(index.stats())
        g0 = gc_ms[0]
        w0, c0 = time.perf_counter(), time.process_time()
        recall(store, emb, None, cfg, user, qs[i % len(qs)], qt, options=RecallOptions(gate="score", persist=False))
        wall, cpu = (time.perf_counter() - w0) * 1000, (time.process_time() - c0) * 1000
        return wall, cpu, _loads(index.stats()) > before, user, gc_ms[0] - g0

    load0 = os.getloadavg()
    asked = 0
    if args.warm_each_user:  # every user once, in a random order: the cache starts in its steady state
        order = users[:]
        rng.shuffle(order)
        for u in order:
            recall(store, emb, None, cfg, u, qs[asked % len(qs)], qt, options=RecallOptions(gate="score",
                                                                                         persist=False))
            asked += 1
    for _ in range(args.warmup):
        one(asked)
        asked += 1
    index.reset_counts()
    rows = [one(asked + i) for i in range(args.queries)]
    load1 = os.getloadavg()
    stats = index.stats()
    miss = [r for r in rows if r[2]]
    hit = [r for r in rows if not r[2]]

    def summ(rs: list[tuple[float, float, bool, str, float]]) -> dict[str, Any]:
        w, c, g = [r[0] for r in rs], [r[1] for r in rs], [r[4] for r in rs]
        return {"n": len(rs), "wall_p50": round(_pct(w, 50), 1), "wall_p95": round(_pct(w, 95), 1),
                "gc_ms_p50": round(_pct(g, 50), 1), "gc_ms_p95": round(_pct(g, 95), 1),
                "gc_ms_mean": round(statistics.fmean(g), 1) if g else None,
                "wall_p99": round(_pct(w, 99), 1), "cpu_p50": round(_pct(c, 50), 1), "cpu_p95": round(_pct(c, 95), 1),
                "wall_mean": round(statistics.fmean(w), 1) if w else None}

    doc = {"db": str(args.db), "users": len(users), "l1_nodes": l1, "budget_mb": args.budget_mb,
           "access": args.access, "queries": args.queries, "warmup": args.warmup, "warm_each_user": args.warm_each_user,
           "cold_text_caches": args.cold_text_caches, "load": [round(x, 2) for x in (*load0, *load1)],
           "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                    check=False, cwd=Path(__file__).parent).stdout.strip(),
           "all": summ(rows), "hits": summ(hit), "misses": summ(miss),
           "working_set_mb": round(stats["bytes"] / 2**20, 1), "users_held": stats["users"],
           "hit_rate": {k: v["hit_rate"] for k, v in stats.items() if isinstance(v, dict)},
           "evictions": {k: v["evictions"] for k, v in stats.items() if isinstance(v, dict)},
           "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    print(json.dumps(doc))
    if args.out:
        with args.out.open("a", encoding="utf-8") as f:
            f.write(json.dumps(doc) + "\n")
    store.close()
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="clone a recall_latency.py store into many users")
    b.add_argument("src", type=Path)
    b.add_argument("out", type=Path)
    b.add_argument("--users", type=int, default=100)
    b.add_argument("--check", action=argparse.BooleanOptionalAction, default=True, help="run timem check after")
    r = sub.add_parser("run", help="time recalls over the users of a built file")
    r.add_argument("db", type=Path)
    r.add_argument("--budget-mb", type=float, default=1024.0, help="StoreSettings.working_set_mb")
    r.add_argument("--access", choices=["uniform", "skewed"], default="uniform")
    r.add_argument("--queries", type=int, default=200)
    r.add_argument("--warmup", type=int, default=50, help="recalls drawn by --access before timing")
    r.add_argument("--warm-each-user", action=argparse.BooleanOptionalAction, default=True,
                   help="before --warmup, ask every user once (in a random order)")
    r.add_argument("--seed", type=int, default=3)
    r.add_argument("--cold-text-caches", action="store_true")
    r.add_argument("--in-place", action="store_true", help="open the file itself, not a copy (it is not written "
                   "by a recall with persist=False, but a DuckDB checkpoint may rewrite it)")
    r.add_argument("--tmp-dir", default=None)
    r.add_argument("--out", type=Path, default=None, help="append the JSON summary line here")
    args = ap.parse_args()
    build(args) if args.cmd == "build" else run(args)


if __name__ == "__main__":
    main()
