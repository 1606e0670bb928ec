"""The vss HNSW experiment of :mod:`recall_latency` (``--hnsw``): build cost, memory, recall@40 against the exact
per-user top 40, query plans and timings, insert cost with the index present."""

from __future__ import annotations

import argparse
import gc
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
from latency_support import _rss_mb, _summ, _timed
from synthetic_store import T0, USER, _node

from timem.models import MemoryNode
from timem.store.duckdb_store import Store
from timem.store.search import drop_hnsw, ensure_hnsw

K_CAND = 40


def _plan_text(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> str:
    return "\n".join(r[1] for r in con.execute("EXPLAIN " + sql, params).fetchall())


def hnsw_experiment(store: Store, db: Path, qvecs: np.ndarray, args: argparse.Namespace, n: int,
                    log: Callable[[str], None], with_index: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Every query shape timed without the index (exact) and with it; recall vs the exact user top 40."""
    con, dim = store.con, store.dim
    out: dict[str, Any] = {"latency_ms": {}, "recall_at_40_vs_exact_user_top40": {}, "rows_returned_mean": {}}
    con.execute("SET hnsw_enable_experimental_persistence = true")
    vec = f"?::FLOAT[{dim}]"
    share = con.execute("SELECT count(*) FILTER (WHERE user_id = ? AND level = 1 AND status = 'active') / count(*) "
                        "FROM nodes", [USER]).fetchone()[0]
    total = con.execute("SELECT count(*) FROM nodes").fetchone()[0]
    over = int(min(total, np.ceil(K_CAND / max(share, 1e-9) * args.overfetch)))
    out["overfetch_limit"], out["user_l1_share"] = over, round(float(share), 3)
    sqls: dict[str, tuple[str, Callable[[list[float]], list[Any]]]] = {
        "store_search_vector": ((f"SELECT id, array_cosine_similarity(embedding, {vec}) AS score FROM nodes "
                                 "WHERE user_id = ? AND level = ? AND status = 'active' "
                                 "ORDER BY score DESC, id LIMIT ?"),
                                lambda q: [q, USER, 1, K_CAND]),
        "unfiltered_distance_topk": ((f"SELECT id, array_cosine_distance(embedding, {vec}) AS d FROM nodes "
                                      "ORDER BY d LIMIT ?"), lambda q: [q, K_CAND]),
        "filtered_distance_topk": ((f"SELECT id, array_cosine_distance(embedding, {vec}) AS d FROM nodes "
                                    "WHERE user_id = ? AND level = ? AND status = 'active' ORDER BY d LIMIT ?"),
                                   lambda q: [q, USER, 1, K_CAND]),
        "overfetch_then_filter": ((f"SELECT id, d FROM (SELECT id, user_id, level, status, "
                                   f"array_cosine_distance(embedding, {vec}) AS d FROM nodes ORDER BY d LIMIT {over}) "
                                   "WHERE user_id = ? AND level = ? AND status = 'active' ORDER BY d, id LIMIT ?"),
                                  lambda q: [q, USER, 1, K_CAND]),
    }
    exact: dict[int, set[str]] = {}  # the store's exact per-user top 40, from the first (no-index) pass

    def measure(name: str, key: str) -> None:
        sql, params = sqls[name]
        for qv in qvecs[: min(3, len(qvecs))]:  # warm-up
            con.execute(sql, params(qv.tolist())).fetchall()
        walls, cpus, recalls, counts = [], [], [], []
        for i, qv in enumerate(qvecs):
            rows, w, c = _timed(lambda s, p: con.execute(s, p).fetchall(), sql, params(qv.tolist()))
            walls.append(w)
            cpus.append(c)
            counts.append(len(rows))
            got = {r[0] for r in rows if r[0].startswith(USER + ":L1:")}
            if name == "store_search_vector" and i not in exact:
                exact[i] = got
            recalls.append(len(got & exact[i]) / K_CAND)
        out["latency_ms"][key] = _summ(walls, cpus)
        out["recall_at_40_vs_exact_user_top40"][key] = round(statistics.fmean(recalls), 3)
        out["rows_returned_mean"][key] = round(statistics.fmean(counts), 1)
        s = out["latency_ms"][key]
        log(f"[{n}] {key:34s} wall p50 {s['wall_p50']:7.1f} p95 {s['wall_p95']:7.1f} | cpu p50 {s['cpu_p50']:7.1f} "
            f"p95 {s['cpu_p95']:7.1f} ms | rows {out['rows_returned_mean'][key]} recall@40 "
            f"{out['recall_at_40_vs_exact_user_top40'][key]}")

    out["explain_no_index"] = {k: _plan_text(con, sql, p(qvecs[0].tolist())) for k, (sql, p) in sqls.items()}
    for name in sqls:
        measure(name, f"{name} (no index)")

    def mem_mb() -> dict[str, float]:
        rows = con.execute("SELECT tag, memory_usage_bytes FROM duckdb_memory()").fetchall()
        return {r[0]: round(r[1] / 2**20, 1) for r in rows if r[1]}

    gc.collect()
    rss0, mem0 = _rss_mb(), mem_mb()
    _, w, c = _timed(ensure_hnsw, con)
    out["build_s"], out["build_cpu_s"] = round(w / 1000, 2), round(c / 1000, 2)
    out["indexed_rows"] = total
    rss1, mem1 = _rss_mb(), mem_mb()
    out["rss_growth_mb"] = round(rss1 - rss0, 0)
    out["duckdb_memory_mb_before"], out["duckdb_memory_mb_after"] = mem0, mem1
    try:
        out["index_info"] = [dict(zip([d[0] for d in con.description], r, strict=True)) for r in
                             con.execute("SELECT * FROM pragma_hnsw_index_info()").fetchall()]
    except duckdb.Error as exc:
        out["index_info"] = f"unavailable: {exc}"
    _, w, c = _timed(con.execute, "CHECKPOINT")
    out["checkpoint_s"], out["checkpoint_cpu_s"] = round(w / 1000, 2), round(c / 1000, 2)
    out["db_bytes_after"] = db.stat().st_size
    log(f"[{n}] HNSW build {out['build_s']} s (cpu {out['build_cpu_s']} s) over {total} rows, "
        f"RSS +{out['rss_growth_mb']:.0f} MB, file {out['db_bytes_after'] / 1e6:.0f} MB")

    out["explain"] = {k: _plan_text(con, sql, p(qvecs[0].tolist())) for k, (sql, p) in sqls.items()}
    out["uses_hnsw"] = {k: "HNSW_INDEX_SCAN" in v for k, v in out["explain"].items()}
    log(f"[{n}] HNSW_INDEX_SCAN in plan: {out['uses_hnsw']}")
    for ef in args.ef_search:
        con.execute(f"SET hnsw_ef_search = {int(ef)}")
        for name in sqls:
            if name != "store_search_vector" or ef == args.ef_search[0]:
                measure(name, f"{name} (HNSW, ef_search {ef})")
    con.execute("RESET hnsw_ef_search")
    out["store_hnsw_mode"] = with_index()  # the store itself with vector_index = "hnsw" (default ef_search)

    # write cost: the same add_nodes batch (and its delete) with the index present vs after dropping it
    rng = np.random.default_rng(7)

    def batch(tag: str) -> tuple[list[MemoryNode], np.ndarray]:
        v = rng.normal(size=(args.write_batch, dim)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        ns = [_node("bench-c", 1, f"bench-c:{tag}:{i}", f"segment:{tag}:{i}", T0, T0, f"write probe {i}", [], "S0")
              for i in range(args.write_batch)]
        return ns, v

    for with_index in (True, False):
        if not with_index:
            drop_hnsw(con)
        ns, v = batch("with" if with_index else "without")
        tag = "with_index" if with_index else "without_index"
        _, w, c = _timed(store.add_nodes, ns, v)
        out[f"add_nodes_{tag}"] = {"wall_s": round(w / 1000, 3), "cpu_s": round(c / 1000, 3)}
        _, w, c = _timed(store.delete_nodes, [x.id for x in ns])
        out[f"delete_nodes_{tag}"] = {"wall_s": round(w / 1000, 3), "cpu_s": round(c / 1000, 3)}
    out["write_batch"] = args.write_batch
    log(f"[{n}] add_nodes({args.write_batch}) with index {out['add_nodes_with_index']}, "
        f"without {out['add_nodes_without_index']}")
    return out
