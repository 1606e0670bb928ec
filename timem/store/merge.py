"""Merge the users of another TiMem DuckDB file into this store (``timem ingest --ray``: one file per task).

Every row of the other file's tables is copied (``INSERT … BY NAME``, so column order does not matter),
in one transaction: turns, sessions, nodes (with their vectors), memory items and extraction marks, the
segment trees, recall traces, write requests, the LLM cache (an entry already here is kept: same key,
same request) and call log, and the audit log. The two files must hold vectors of the same embedder
and have the same schema version, and share no user (a user's rows are never mixed); otherwise nothing
is copied. The merged nodes are added to this file's BM25 index (:mod:`timem.store.bm25`) and its table of
mentioned dates (:mod:`timem.store.mentions`).
"""

from __future__ import annotations

from pathlib import Path

from timem.errors import StoreError
from timem.store import mentions
from timem.store.bm25 import index_docs
from timem.store.handle import StoreHandle

#: tables copied row by row, in an order that keeps foreign ids resolvable for a reader mid-way
TABLES = ("turns", "sessions", "nodes", "memory_items", "memory_extractions", "segtree_nodes", "segtree_state",
          "segtree_summaries", "recall_traces", "write_requests", "llm_calls", "audit")


def merge_file(store: StoreHandle, other: str | Path) -> dict[str, int]:
    """Copy every row of the TiMem file ``other`` into ``store`` (see the module doc); returns rows per table.

    Raises:
        StoreError: ``other`` is missing, was built with another embedder or schema version, or shares a
            user with ``store`` (nothing is copied then).
    """
    path = Path(other)
    if not path.is_file():
        raise StoreError(f"no DuckDB file at {path} to merge")
    con = store.con
    quoted = str(path).replace("'", "''")  # ATTACH takes no parameter; a literal with quotes doubled
    con.execute(f"ATTACH '{quoted}' AS merge_src (READ_ONLY)")
    try:
        meta = dict(con.execute("SELECT key, value FROM merge_src.meta").fetchall())
        if (meta.get("embed_model_id"), meta.get("embed_dim")) != (store.embed_model_id, str(store.dim)):
            raise StoreError(f"{path} holds vectors of {meta.get('embed_model_id')} (dim {meta.get('embed_dim')}), "
                             f"this store of {store.embed_model_id} (dim {store.dim}); merge files of one embedder")
        version = con.execute("SELECT max(version) FROM merge_src.schema_version").fetchone()
        if version is None or int(version[0]) != store.schema_version:
            raise StoreError(f"{path} has schema version {version[0] if version else None}, this store "
                             f"{store.schema_version}; open both with the same TiMem version first")
        shared = sorted(r[0] for r in con.execute(
            "SELECT DISTINCT user_id FROM merge_src.turns WHERE user_id IN (SELECT user_id FROM main.turns)"
        ).fetchall())
        if shared:
            raise StoreError(f"{path} and {store.path} both hold user(s) {shared[:5]}; merge files of disjoint "
                             "users (ingest new turns of an existing user without --ray)")
        counts: dict[str, int] = {}
        with store.transaction():
            for table in TABLES:
                n = con.execute(f"SELECT count(*) FROM merge_src.{table}").fetchone()
                con.execute(f"INSERT INTO main.{table} BY NAME SELECT * FROM merge_src.{table}")
                counts[table] = int(n[0]) if n else 0
            n = con.execute("SELECT count(*) FROM merge_src.llm_cache WHERE key NOT IN "
                            "(SELECT key FROM main.llm_cache)").fetchone()
            con.execute("INSERT INTO main.llm_cache BY NAME SELECT * FROM merge_src.llm_cache "
                        "WHERE key NOT IN (SELECT key FROM main.llm_cache)")
            counts["llm_cache"] = int(n[0]) if n else 0
            # the merged nodes' BM25 postings (this file's term ids), in insertion order
            rows = con.execute("SELECT id, user_id, level, status, search_text, content FROM main.nodes "
                               "WHERE user_id IN (SELECT DISTINCT user_id FROM merge_src.nodes) "
                               "ORDER BY rowid").fetchall()
            index_docs(con, [(r[0], r[1], int(r[2]), r[3], r[4]) for r in rows])
            # and the dates their L1 nodes mention (timem.store.mentions)
            mentions.index_nodes(con, [(r[0], r[1], r[5]) for r in rows if int(r[2]) == 1])
            store.mark_nodes_written()  # no step recorded: the in-memory copies are loaded again
        return counts
    finally:
        con.execute("DETACH merge_src")
