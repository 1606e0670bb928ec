"""Recall latency benchmark (issue 3 §9): p50/p95 without LLM calls, DuckDB store vs a brute-force baseline.

For every size N (default 10,000 and 100,000 L1 nodes of ONE user) the script builds a fresh
DuckDB file holding

* user ``bench-a``: N synthetic L1 segments plus a synthetic tree above them (L2 per 10 segments,
  L3 per day, L4 per week inside a month, L5 per month) so that ancestor propagation has real work;
* user ``bench-b``: ``--other-ratio`` x N L1 segments (plus their tree) drawn from the same
  vocabulary, so that the ``user_id`` filter inside every SQL query rejects real, competitive rows;

inserted with :meth:`Store.add_nodes` in batches, then the FTS (BM25) index is built once
(``refresh_fts(force=True)``, timed: the index is a snapshot rebuilt in full on the first BM25
query after any batch of writes).

Texts. Node contents look like verbatim L1 segments (``On 8 May 2023 (Monday) 13:56:`` then two
``Speaker: text`` lines). The turn texts come from a template/vocabulary generator (names,
places, numbers, activities). Embeddings: embedding every node with MiniLM is far too slow on
this host (2 cores, ~50-100 short texts/s when idle), so by default (``--embed auto``) the script
measures MiniLM's rate on a pool of ``--pool`` distinct turn texts, projects the time for all
node texts, and if that exceeds ``--embed-budget-s`` it composes each node's vector as the
re-normalised sum of the REAL MiniLM vectors of its two turns (``pool`` mode; with P pool turns
there are P^2 distinct pairs, so node texts and vectors are distinct). The choice, the projection
and the cosine between composed vectors and true MiniLM vectors of the full node text (a sample)
are written to the results. ``--embed full`` embeds every node text for real; ``--embed pool``
forces composition. Questions are always embedded for real, inside the timed ``recall()``.

Measured per query (``--queries`` questions over the vocabulary after ``--warmup`` warm-up
questions; the methods are interleaved per query so that load changes hit them alike), wall
clock AND process CPU time (all threads; on a contended host the wall clock mostly measures the
scheduler, CPU time is the intrinsic cost):

* ``recall_full`` -- :func:`timem.recall.pipeline.recall` with ``llm=None`` (centroid planner,
  score gate, ``persist=False``): query embedding + plan + leaf SQL + ancestors + gate + context;
  its per-stage latencies come from the trace;
* ``embed_query`` -- the planner's one MiniLM batch (masked question + question) alone;
* ``sql_leaves`` -- :func:`select_leaves` with the query vector and question time given: vector SQL + BM25 SQL + fusion;
  ``sql_vector`` / ``sql_bm25`` -- :meth:`Store.search_vector` / :meth:`Store.search_bm25` alone;
* ``base_leaves`` -- the baseline: numpy brute-force cosine over the user's (N, 384) matrix held in
  memory + ``rank_bm25.BM25Okapi`` over the user's L1 texts (lower-case word tokens, English
  stop words, no stemming) + the same :func:`fuse`; ``base_vector`` / ``base_bm25`` alone.

HNSW (``--hnsw``, default on): after the measurements the script creates a vss HNSW index
(``metric = 'cosine'``, experimental persistence on since the DB is a file), records build time,
RSS and DuckDB memory growth and file growth, EXPLAINs the store's query, an unfiltered and a
user-filtered ``ORDER BY array_cosine_distance ... LIMIT`` query, times them, measures their
recall@40 against the exact per-user top 40, times an over-fetch-then-filter variant, and the
cost of inserting a batch of nodes with the index present.

Usage (results go to bench/results/recall-latency.{md,json}):

    nice -n 19 .venv/bin/python bench/recall_latency.py                     # 10k and 100k
    nice -n 19 .venv/bin/python bench/recall_latency.py --sizes 10000       # one size
    nice -n 19 .venv/bin/python bench/recall_latency.py --quick             # smoke run (2k, 10 queries)

Not a test: nothing here asserts a speed. The local LLM is never loaded.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# Single-threaded numpy (OpenBLAS) and torch (OpenMP) unless the caller says otherwise: their idle worker
# threads spin-wait, which on a contended host inflates the process CPU time this script reports.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import duckdb
import numpy as np

from timem.config import Config
from timem.embed.minilm import MiniLMEmbedder
from timem.models import MemoryNode
from timem.recall.leaves import bm25_query, select_leaves
from timem.recall.options import RecallOptions
from timem.recall.pipeline import recall
from timem.recall.planner import CentroidPlanner
from timem.recall.state import RecallState
from timem.store.duckdb_store import Store
from timem.store.search import bm25_top, vector_top

RESULTS = Path(__file__).parent / "results"
K_CAND = 40

from hnsw_probe import hnsw_experiment
from latency_support import Baseline, Clock, _loadavg, _pct, _rss_mb, _summ, _timed
from recall_latency_md import markdown
from synthetic_store import OTHER, SPEAKERS, T0, USER, _node, build_user, questions, turn_pool  # noqa: F401


# ----------------------------------------------------------------------------- one size
def run_size(n: int, args: argparse.Namespace, emb: MiniLMEmbedder, planner: CentroidPlanner, cfg: Config,
             pool_cache: dict[str, Any], qs: list[str], log: Callable[[str], None]) -> dict[str, Any]:
    res: dict[str, Any] = {"n_l1_user": n, "load_start": _loadavg()}
    n_other = round(n * args.other_ratio)
    rng = np.random.default_rng(args.seed + n)
    pool, pool_vecs = pool_cache["texts"], pool_cache["vecs"]

    t = time.perf_counter()
    users = {USER: build_user(USER, n, len(pool), args.seg_per_session, args.sessions_per_day, rng, pool)}
    if n_other:
        users[OTHER] = build_user(OTHER, n_other, len(pool), args.seg_per_session, args.sessions_per_day, rng, pool)
    res["generate_s"] = round(time.perf_counter() - t, 2)

    # ---- embeddings: full or pool-composed (decided explicitly, recorded)
    n_texts = sum(len(u["l1"]) for u in users.values())
    rate = pool_cache["rate"]
    projected = n_texts / rate
    mode = args.embed if args.embed != "auto" else ("full" if projected <= args.embed_budget_s else "pool")
    res["embedding"] = {"mode": mode, "requested": args.embed, "l1_texts": n_texts,
                        "minilm_texts_per_s": round(rate, 1),
                        "minilm_texts_per_cpu_s": round(pool_cache["cpu_rate"], 1),
                            "projected_full_embed_s": round(projected, 1), "budget_s": args.embed_budget_s,
                            "pool_turn_texts": len(pool)}
    log(f"[{n}] embeddings: {mode} ({n_texts} L1 texts; MiniLM {rate:.0f}/s -> {projected:.0f} s projected, "
        f"budget {args.embed_budget_s:.0f} s)")
    t = time.perf_counter()
    for u in users.values():
        if mode == "full":
            u["vecs"] = emb.embed([c["content"] for c in u["l1"]])
        else:
            pr = np.array([c["pair"] for c in u["l1"]])
            v = pool_vecs[pr[:, 0]] + pool_vecs[pr[:, 1]]
            u["vecs"] = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    res["embedding"]["node_vectors_s"] = round(time.perf_counter() - t, 2)
    if mode == "pool":
        sample = users[USER]["l1"][: args.fidelity_sample]
        true = emb.embed([c["content"] for c in sample])
        cos = np.sum(true * users[USER]["vecs"][: len(sample)], axis=1)
        res["embedding"]["composed_vs_true_cosine"] = {"n": len(sample), "mean": round(float(cos.mean()), 4),
                                                           "min": round(float(cos.min()), 4)}
        log(f"[{n}] composed vs true MiniLM vector of the full node text: mean cos {cos.mean():.3f}, "
            f"min {cos.min():.3f} over {len(sample)}")

    # ---- insert
    db_dir = Path(tempfile.mkdtemp(prefix="timem-recall-bench-", dir=args.db_dir))
    db = db_dir / f"bench-{n}.duckdb"
    store = Store(db, emb.model_id, emb.dim)
    if args.threads:
        store.con.execute(f"SET threads = {int(args.threads)}")
    res["duckdb_threads"] = store.con.execute("SELECT current_setting('threads')").fetchone()[0]
    rows = 0
    clk = Clock()
    for user, u in users.items():
        l1 = u["l1"]
        for b in range(0, len(l1), args.batch):
            chunk = l1[b:b + args.batch]
            store.add_nodes([_node(user, 1, c["id"], f"segment:{c['id']}", c["t"], c["t"], c["content"], [],
                                   c["session"]) for c in chunk], u["vecs"][b:b + args.batch])
            rows += len(chunk)
        log(f"[{n}] inserted {len(l1)} L1 of {user} ({clk.lap()})")
    res["insert_l1"] = clk.lap()
    res["insert_l1"]["rows"] = rows
    res["insert_l1"]["rows_per_cpu_s"] = round(rows / max(res["insert_l1"]["cpu_s"], 1e-9), 1)

    # parents: add_nodes with child_ids links each child (one UPDATE ... list_contains per parent node, a
    # full scan of `nodes` each). That is O(parents x table) -- measured on --link-sample parents, then
    # the rest are inserted with the same add_nodes and linked by one set-based UPDATE (same end state).
    clk = Clock()
    n_parents = 0
    link: dict[str, Any] = {}
    for user, u in users.items():
        vecs = u["vecs"]
        parents = u["parents"]
        n_parents += len(parents)

        def pnode(g: dict[str, Any], with_kids: bool, user: str = user) -> MemoryNode:
            return _node(user, g["level"], g["id"], g["key"], g["t"], g["t_end"], g["content"],
                         g["kids"] if with_kids else [], g["session"])

        def pvecs(gs: list[dict[str, Any]], vecs: np.ndarray = vecs) -> np.ndarray:
            v = np.stack([vecs[g["rows"]].mean(axis=0) for g in gs])
            return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

        head = parents[: args.link_sample] if user == USER else []
        if head:
            _, w, c = _timed(store.add_nodes, [pnode(g, True) for g in head], pvecs(head))
            link["add_nodes_with_links_per_parent_ms"] = {"wall": round(w / len(head), 2),
                                                          "cpu": round(c / len(head), 2)}
            link["sampled_parents"] = len(head)
        rest = parents[len(head):]
        for b in range(0, len(rest), args.batch):
            chunk = rest[b:b + args.batch]
            store.add_nodes([pnode(g, False) for g in chunk], pvecs(chunk))
        clk1 = Clock()
        pairs = [(g["id"], kid) for g in rest for kid in g["kids"]]
        kids_of = [(g["id"], g["kids"]) for g in rest]
        with store.transaction():
            store.con.execute("CREATE TEMP TABLE link_map AS SELECT unnest(?::VARCHAR[]) AS pid, "
                              "unnest(?::VARCHAR[]) AS cid", [[p for p, _ in pairs], [c for _, c in pairs]])
            store.con.execute("UPDATE nodes SET parent_id = m.pid FROM link_map m WHERE nodes.id = m.cid")
            store.con.execute("CREATE TEMP TABLE kids_map AS SELECT unnest(?::VARCHAR[]) AS pid, "
                              "unnest(?::VARCHAR[][]) AS kids", [[p for p, _ in kids_of], [k for _, k in kids_of]])
            store.con.execute("UPDATE nodes SET child_ids = k.kids FROM kids_map k WHERE nodes.id = k.pid")
            store.con.execute("DROP TABLE link_map")
            store.con.execute("DROP TABLE kids_map")
        link[f"set_based_link_{user}"] = clk1.lap()
    res["parents"] = n_parents
    res["insert_parents"] = clk.lap()
    res["parent_linking"] = link
    unlinked = store.con.execute("SELECT count(*) FROM nodes WHERE level < 5 AND parent_id IS NULL").fetchone()[0]
    res["unlinked_below_L5"] = unlinked
    res["rows_total"] = store.con.execute("SELECT count(*) FROM nodes").fetchone()[0]
    res["rows_per_user_level"] = {f"{u}/L{lv}": c for u, lv, c in store.con.execute(
        "SELECT user_id, level, count(*) FROM nodes GROUP BY ALL ORDER BY ALL").fetchall()}
    log(f"[{n}] {res['rows_total']} rows; parents {res['insert_parents']}; linking {link}; unlinked below L5: "
        f"{unlinked}")

    clk = Clock()
    store.refresh_fts(force=True)
    res["fts_build"] = clk.lap()
    store.con.execute("CHECKPOINT")
    res["db_bytes_before_hnsw"] = db.stat().st_size
    log(f"[{n}] FTS build {res['fts_build']} over {res['rows_total']} rows; file {db.stat().st_size / 1e6:.0f} MB")

    # ---- baseline (the user's L1 only, as the SQL filter would give)
    t = time.perf_counter()
    ua = users[USER]
    base = Baseline([c["id"] for c in ua["l1"]], ua["vecs"], [c["content"] for c in ua["l1"]])
    res["baseline_build_s"] = round(time.perf_counter() - t, 2)

    # ---- queries: plans and vectors precomputed for the stage measurements (recall_full does its own)
    qvecs = emb.embed(qs)
    plans = [planner.plan(q, T0 + timedelta(days=4000), cfg) for q in qs]
    qt = T0 + timedelta(days=4000)
    samples: dict[str, tuple[list[float], list[float]]] = {}
    stages: dict[str, list[float]] = {}
    agree: dict[str, list[float]] = {"vector_top40_overlap": [], "bm25_top40_overlap": [], "kept20_overlap": []}
    complexities: dict[str, int] = {}

    def rec(name: str, w: float, c: float) -> None:
        samples.setdefault(name, ([], []))
        samples[name][0].append(w)
        samples[name][1].append(c)

    # the store's in-memory copies (timem.store.memory_index) are loaded by the first search of each kind
    _, w, c = _timed(store.search_vector, USER, qvecs[0], 1, K_CAND)
    res["memory_index_first_vector_query"] = {"wall_s": round(w / 1000, 3), "cpu_s": round(c / 1000, 3)}
    _, w, c = _timed(store.search_bm25, USER, bm25_query(qs[0], plans[0]), 1, K_CAND)
    res["memory_index_first_bm25_query"] = {"wall_s": round(w / 1000, 3), "cpu_s": round(c / 1000, 3)}
    order = list(range(len(qs)))
    n_warm = min(args.warmup, len(qs))
    gc.collect()
    t_meas = time.perf_counter()
    for rep in range(args.repeat + 1):
        idxs = order[:n_warm] if rep == 0 else order[n_warm:]
        for i in idxs:
            q, qv, plan = qs[i], qvecs[i], plans[i]
            bq = bm25_query(q, plan)
            r, w, c = _timed(recall, store, emb, None, cfg, USER, q, qt,
                             options=RecallOptions(gate="score", persist=False))
            if rep:
                rec("recall_full", w, c)
                for k, v in r.trace.latency_ms.items():
                    stages.setdefault(k, []).append(v)
                complexities[r.trace.plan.complexity] = complexities.get(r.trace.plan.complexity, 0) + 1
            _, w, c = _timed(emb.embed, [planner.masked(q), q])
            if rep:
                rec("embed_query", w, c)
            state = RecallState(store, emb, None, cfg, USER, q, qt, query_vec=qv)
            sel, w, c = _timed(select_leaves, state, plan)
            if rep:
                rec("sql_leaves", w, c)
            sv, w, c = _timed(store.search_vector, USER, qv, 1, K_CAND)
            if rep:
                rec("sql_vector", w, c)
            sb, w, c = _timed(store.search_bm25, USER, bq, 1, K_CAND)
            if rep:
                rec("sql_bm25", w, c)
            _, w, c = _timed(vector_top, store.con, store.dim, USER, qv, 1, K_CAND)
            if rep:
                rec("duckdb_vector", w, c)
            _, w, c = _timed(bm25_top, store.con, USER, bq, 1, K_CAND)
            if rep:
                rec("duckdb_bm25", w, c)
            bl, w, c = _timed(base.leaves, qv, bq, K_CAND, cfg.recall.recall_lambda, cfg.recall.recall_top_k)
            if rep:
                rec("base_leaves", w, c)
            bv, w, c = _timed(base.vector, qv, K_CAND)
            if rep:
                rec("base_vector", w, c)
            bb, w, c = _timed(base.lexical, bq, K_CAND)
            if rep:
                rec("base_bm25", w, c)
            if rep == 1:
                agree["vector_top40_overlap"].append(len({x for x, _ in sv} & {x for x, _ in bv}) / K_CAND)
                agree["bm25_top40_overlap"].append(len({x for x, _ in sb} & {x for x, _ in bb}) / max(1, len(sb)))
                agree["kept20_overlap"].append(len({c.node_id for c in sel.kept} & set(bl)) / max(1, len(sel.kept)))
                assert all(x.startswith(USER) for x, _ in sv + sb), "another user's node became a candidate"
        if rep == 0:
            log(f"[{n}] warm-up done ({n_warm} queries)")
    res["measure_s"] = round(time.perf_counter() - t_meas, 1)
    res["latency_ms"] = {k: _summ(*v) for k, v in samples.items()}
    res["recall_stages_wall_ms"] = {k: {"p50": round(_pct(v, 50), 2), "p95": round(_pct(v, 95), 2)}
                                    for k, v in stages.items()}
    res["plan_complexities"] = complexities
    res["agreement_sql_vs_baseline"] = {k: round(statistics.fmean(v), 3) for k, v in agree.items() if v}
    res["rss_mb_after_queries"] = round(_rss_mb(), 0)
    res["load_after_queries"] = _loadavg()
    for k in ("recall_full", "sql_leaves", "base_leaves"):
        s = res["latency_ms"][k]
        log(f"[{n}] {k:12s} wall p50 {s['wall_p50']:8.1f} p95 {s['wall_p95']:8.1f} | cpu p50 {s['cpu_p50']:8.1f} "
            f"p95 {s['cpu_p95']:8.1f} ms")

    exact_kept: dict[int, set[str]] = {}

    def time_recall(tag: str) -> dict[str, Any]:
        """recall_full and Store.search_vector again over the same questions (e.g. with the HNSW index)."""
        walls: dict[str, tuple[list[float], list[float]]] = {"recall_full": ([], []), "sql_vector": ([], [])}
        st: dict[str, list[float]] = {}
        overlap: list[float] = []
        for rep in range(args.repeat + 1):
            for i in (order[:n_warm] if rep == 0 else order[n_warm:]):
                r, w, c = _timed(recall, store, emb, None, cfg, USER, qs[i], qt,
                                 options=RecallOptions(gate="score", persist=False))
                kept = {x.node_id for x in r.trace.candidates if x.kept}
                if tag == "exact":
                    exact_kept[i] = kept
                elif rep:
                    overlap.append(len(kept & exact_kept[i]) / max(1, len(exact_kept[i])))
                _, w2, c2 = _timed(store.search_vector, USER, qvecs[i], 1, K_CAND)
                if rep:
                    walls["recall_full"][0].append(w)
                    walls["recall_full"][1].append(c)
                    walls["sql_vector"][0].append(w2)
                    walls["sql_vector"][1].append(c2)
                    for k, v in r.trace.latency_ms.items():
                        st.setdefault(k, []).append(v)
        out = {"latency_ms": {k: _summ(*v) for k, v in walls.items()},
               "recall_stages_wall_ms": {k: {"p50": round(_pct(v, 50), 2), "p95": round(_pct(v, 95), 2)}
                                         for k, v in st.items()}}
        if overlap:
            out["kept20_overlap_vs_exact"] = round(statistics.fmean(overlap), 3)
        s = out["latency_ms"]["recall_full"]
        log(f"[{n}] recall_full ({tag}) wall p50 {s['wall_p50']:.1f} p95 {s['wall_p95']:.1f} ms "
            f"{out.get('kept20_overlap_vs_exact', '')}")
        return out

    if args.hnsw:
        time_recall("exact")  # the kept leaves of exact search, for the overlap below

        def with_index() -> dict[str, Any]:
            store.vector_index = "hnsw"
            try:
                return time_recall("hnsw")
            finally:
                store.vector_index = "exact"

        res["hnsw"] = hnsw_experiment(store, db, qvecs[n_warm:], args, n, log, with_index)
    store.close()
    if not args.keep_db:
        shutil.rmtree(db_dir, ignore_errors=True)
    res["load_end"] = _loadavg()
    return res


# ----------------------------------------------------------------------------- HNSW

# ----------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default=None, help="L1 nodes of the measured user, comma separated "
                    "(default 10000,100000; --quick: 2000)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2,000 nodes, 10 queries, small pool")
    ap.add_argument("--queries", type=int, default=None, help="timed questions (default 50; --quick: 10)")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up questions (default 5; --quick: 2)")
    ap.add_argument("--repeat", type=int, default=1, help="timed passes over the queries")
    ap.add_argument("--other-ratio", type=float, default=1.0, help="second user's L1 nodes / measured user's")
    ap.add_argument("--pool", type=int, default=None, help="distinct turn texts embedded for real (default 3000; "
                    "--quick: 300)")
    ap.add_argument("--embed", choices=["auto", "full", "pool"], default="auto")
    ap.add_argument("--embed-budget-s", type=float, default=300.0,
                    help="auto: embed every node text for real only if projected below this")
    ap.add_argument("--fidelity-sample", type=int, default=None,
                    help="nodes whose true vector is compared in pool mode (default 200; --quick: 30)")
    ap.add_argument("--seg-per-session", type=int, default=10)
    ap.add_argument("--sessions-per-day", type=int, default=3)
    ap.add_argument("--batch", type=int, default=5000, help="add_nodes batch size")
    ap.add_argument("--link-sample", type=int, default=100, help="parents inserted with add_nodes' own linking")
    ap.add_argument("--threads", type=int, default=0, help="DuckDB threads (0: DuckDB's default)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                    help="a Config override for recall, e.g. --set recall_index='\"segtree\"' (repeatable)")
    ap.add_argument("--hnsw", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--ef-search", default="64,256", help="hnsw_ef_search values to try")
    ap.add_argument("--overfetch", type=float, default=3.0, help="over-fetch factor for the post-filter variant")
    ap.add_argument("--write-batch", type=int, default=500)
    ap.add_argument("--db-dir", default=None, help="where the temporary DuckDB files go")
    ap.add_argument("--keep-db", action="store_true")
    ap.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "timem" / "bench"),
                    help="pool vectors are cached here (keyed by seed and pool size; texts checked)")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS / "recall-latency", help="writes OUT.md and OUT.json")
    args = ap.parse_args()
    defaults = {"sizes": ("10000,100000", "2000"), "queries": (50, 10), "warmup": (5, 2), "pool": (3000, 300),
                "fidelity_sample": (200, 30)}
    for name, (full, quick) in defaults.items():  # --quick changes only what was not given explicitly
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    if args.quick and args.out == RESULTS / "recall-latency":
        args.out = Path(tempfile.gettempdir()) / "recall-latency-quick"
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    args.ef_search = [int(x) for x in str(args.ef_search).split(",")]
    t_all = time.perf_counter()

    def log(msg: str) -> None:
        print(f"{time.perf_counter() - t_all:7.1f}s {msg}", file=sys.stderr, flush=True)

    meta: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False,
                              cwd=Path(__file__).parent).stdout.strip(),
        "command": (f"nice -n {os.nice(0)} " if os.nice(0) else "") + ".venv/bin/python bench/recall_latency.py "
        + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()} {platform.system()}", "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "duckdb": duckdb.__version__, "nice": os.nice(0), "load_start": _loadavg(),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
    log(f"load {meta['load_start']}, nice {meta['nice']}, sizes {sizes}")
    emb = MiniLMEmbedder()
    import torch

    meta["threads"] = {**{v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
                       "torch": torch.get_num_threads()}
    cfg = Config(llm_backend="none", planner="centroid", gate="score",
                 **{k: json.loads(v) for k, _, v in (x.partition("=") for x in args.set)})
    meta["config_overrides"] = list(args.set)
    planner = CentroidPlanner(emb)  # centroids once per process, as recall() would
    qs = questions(args.queries + args.warmup, args.seed + 1)
    emb.embed(qs[:4])  # warm the model
    pool = turn_pool(args.pool, args.seed)
    # MiniLM's rate, measured now (it decides --embed auto), on up to 200 pool texts
    sample = pool[:200]
    _, w, c = _timed(emb.embed, sample)
    rate, cpu_rate = len(sample) / (w / 1000), len(sample) / (c / 1000)
    cache = Path(args.cache_dir) / f"recall-latency-pool-{args.seed}-{len(pool)}.npz"
    if cache.exists() and np.load(cache)["texts"].tolist() == pool:
        pool_vecs, how = np.load(cache)["vecs"], f"loaded from {cache}"
    else:
        t = time.perf_counter()
        pool_vecs = emb.embed(pool)
        how = f"embedded in {time.perf_counter() - t:.0f} s"
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, texts=np.array(pool), vecs=pool_vecs)
    pool_cache = {"texts": pool, "vecs": pool_vecs, "rate": rate, "cpu_rate": cpu_rate}
    meta["pool"] = {"turn_texts": len(pool), "vectors": how, "minilm_texts_per_s": round(rate, 1),
                    "minilm_texts_per_cpu_s": round(cpu_rate, 1)}
    log(f"MiniLM {rate:.0f} texts/s now; pool of {len(pool)} turn texts {how}")
    meta["questions"] = qs
    doc: dict[str, Any] = {"meta": meta, "sizes": []}
    for n in sizes:
        doc["sizes"].append(run_size(n, args, emb, planner, cfg, pool_cache, qs, log))
        meta["load_end"] = _loadavg()
        meta["total_s"] = round(time.perf_counter() - t_all, 1)
        meta["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")
        args.out.with_suffix(".md").write_text(markdown(doc), encoding="utf-8")
        log(f"wrote {args.out.with_suffix('.md')} and .json")
    log(f"done in {time.perf_counter() - t_all:.0f} s")


if __name__ == "__main__":
    main()
