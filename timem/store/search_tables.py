"""The store's search side (the :class:`~timem.store.ports.Search` and :class:`~timem.store.ports.IndexHealth`
ports): BM25 and vector search over one user's nodes of one level, time-window and neighbour queries,
and what ``timem check`` reads about the indexes.

A mixin of :class:`timem.store.duckdb_store.Store`: it needs ``self.con``, ``self.dim``,
``self.vector_index``, ``self.memory_index`` (the in-memory copies, :mod:`timem.store.memory_index`),
``self.get_meta`` and ``self.transaction``. The SQL lives in :mod:`timem.store.search` and
:mod:`timem.store.tree_queries`. Times are UTC-aware at this boundary.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

import duckdb
import numpy as np

from timem.store.memory_index import MemoryIndex
from timem.store.rows import one_row, utc
from timem.store.search import DERIVED_TABLES, build_bm25_postings, query_termids, rebuild_fts, vector_top
from timem.store.tree_queries import adjacent_segments, segments_in_windows


class SearchTables:
    """Search over ``self.con`` and the in-memory copies."""

    con: duckdb.DuckDBPyConnection
    dim: int
    vector_index: str
    memory_index: MemoryIndex
    _postings_seen: bool

    def get_meta(self, key: str) -> str | None:  # provided by Store
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[None]:  # provided by Store
        raise NotImplementedError

    def refresh_fts(self, force: bool = False) -> bool:
        """Rebuild the BM25 index over ``nodes.search_text`` (and its postings table,
        :func:`timem.store.search.build_bm25_postings`) if writes happened since the last build."""
        if not force and self.get_meta("fts_dirty") == "0" and (self._postings_seen or self._has_postings()):
            self._postings_seen = True
            return False
        with self.transaction():
            rebuild_fts(self.con)
            build_bm25_postings(self.con)
            self.con.execute("INSERT OR REPLACE INTO meta VALUES ('fts_dirty', '0'), ('postings_version', ?)",
                             [uuid.uuid4().hex])
        return True

    def _has_postings(self) -> bool:
        """Whether the tables derived from the fts index exist (``postings``, ``user_stats``; files written
        before one was introduced lack it)."""
        return bool(one_row(self.con.execute("SELECT count(*) FROM duckdb_tables() "
                                             "WHERE schema_name = 'fts_main_nodes' "
                                             f"AND table_name IN {DERIVED_TABLES}"))[0] == len(DERIVED_TABLES))

    def search_bm25(self, user_id: str, query: str, level: int, limit: int) -> list[tuple[str, float]]:
        """Top ``limit`` active nodes of one user and level by BM25 (higher is better); user filter in SQL.
        Scores equal the fts extension's ``match_bm25`` over this user's rows alone (see :mod:`timem.store.search`)."""
        self.refresh_fts()
        termids = query_termids(self.con, query)
        if not termids:
            return []
        return self.memory_index.bm25_top(self.con, self.get_meta("postings_version"), user_id, termids, level, limit)

    def search_vector(self, user_id: str, query_vec: np.ndarray, level: int, limit: int) -> list[tuple[str, float]]:
        """Top ``limit`` active nodes of one user and level by cosine similarity; user filter in SQL.
        Exact unless the store was opened with ``vector_index="hnsw"`` (see :mod:`timem.store.search`)."""
        if self.vector_index == "hnsw":
            return vector_top(self.con, self.dim, user_id, query_vec, level, limit, hnsw=True)
        return self.memory_index.vector_top(self.con, self.get_meta("nodes_version"), user_id, query_vec, level, limit)

    def adjacent_segments(self, user_id: str, node_ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
        """``(previous, next)`` L1 node of the same session per L1 node (see :mod:`timem.store.tree_queries`)."""
        return adjacent_segments(self.con, user_id, node_ids)

    def segments_in_windows(self, user_id: str, windows: Sequence[tuple[datetime, datetime]], limit: int,
                            until: datetime | None = None) -> list[tuple[str, datetime, datetime]]:
        """Active L1 nodes overlapping any ``[start, end)`` window, not starting after ``until`` (UTC-aware),
        as ``(id, span_start, span_end)`` (see :mod:`timem.store.tree_queries`)."""
        return [(i, utc(a), utc(b)) for i, a, b in segments_in_windows(self.con, user_id, windows, limit, until)]

    def index_health(self) -> dict[str, Any]:
        """What ``timem check`` reads: active and other nodes (``nodes``), documents in the BM25 index
        (``fts_documents``, ``None`` before the first build) and ids of nodes whose vector is missing or
        not unit-length (``non_unit_vectors``)."""
        n_nodes = one_row(self.con.execute("SELECT count(*) FROM nodes"))[0]
        try:
            n_docs = one_row(self.con.execute("SELECT count(*) FROM fts_main_nodes.docs"))[0]
        except duckdb.CatalogException:
            n_docs = None
        bad = [r[0] for r in self.con.execute(
            "SELECT id FROM nodes WHERE len(embedding) IS NULL OR abs(list_dot_product(embedding::FLOAT[], "
            "embedding::FLOAT[]) - 1) > 1e-3").fetchall()]
        return {"nodes": int(n_nodes), "fts_documents": None if n_docs is None else int(n_docs),
                "non_unit_vectors": bad}
