"""The store's search side (the :class:`~timem.store.ports.Search` and :class:`~timem.store.ports.IndexHealth`
ports): BM25 and vector search over one user's nodes of one level, time-window and neighbour queries,
and what ``timem check`` reads about the indexes.

A mixin of :class:`timem.store.duckdb_store.Store`: it needs ``self.con``, ``self.dim``,
``self.vector_index``, ``self.memory_index`` (the in-memory copies, :mod:`timem.store.memory_index`),
``self.get_meta`` and ``self.transaction``. The SQL lives in :mod:`timem.store.search` and
:mod:`timem.store.tree_queries`. Times are UTC-aware at this boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import date, datetime
from typing import Any

import duckdb
import numpy as np

from timem.store import bm25, bm25_query, mentions
from timem.store.memory_index import MemoryIndex
from timem.store.rows import one_row, utc
from timem.store.search import query_termids, vector_top
from timem.store.segmenter import search_text
from timem.store.tree_queries import adjacent_segments, segments_in_windows
from timem.store.working_set import WorkingSet


class SearchTables:
    """Search over ``self.con`` and the in-memory copies; the BM25 index's upkeep on every change to ``nodes``."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection:  # provided by Store: the calling thread's cursor
        raise NotImplementedError

    dim: int
    vector_index: str
    memory_index: MemoryIndex
    _bm25_query_words: bm25_query.QueryWords | None = None

    def get_meta(self, key: str) -> str | None:  # provided by Store
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[None]:  # provided by Store
        raise NotImplementedError

    def mark_nodes_written(self) -> str:  # provided by Store
        raise NotImplementedError

    def snapshot(self) -> AbstractContextManager[None]:  # provided by Store
        raise NotImplementedError

    def nodes_version(self) -> str | None:  # provided by Store
        raise NotImplementedError

    def working_set(self, user_id: str) -> WorkingSet | None:  # provided by Store (timem.store.nodes)
        raise NotImplementedError

    def refresh_fts(self, force: bool = False) -> bool:
        """With ``force``, build the BM25 index (:mod:`timem.store.bm25`) and the table of mentioned dates
        (:mod:`timem.store.mentions`) again from every node: repair (``timem check --repair``) and hard erase (the
        terms only erased nodes held leave the dictionary) only, as it reads the whole table. Without, nothing:
        every write keeps both current in its own transaction. Returns whether it rebuilt."""
        if not force:
            return False
        with self.transaction():
            bm25.rebuild(self.con)
            mentions.rebuild(self.con)
            self.mark_nodes_written()  # no step recorded: the in-memory copies are loaded again
        self._bm25_query_words = None  # the rebuild wrote the macro again
        return True

    def _record_change(self, removed: Sequence[bm25.Doc], added: Sequence[bm25.Doc],
                       vecs: np.ndarray | None = None, touched: Sequence[str] = ()) -> None:
        """Mark ``nodes`` written (inside the writing transaction) and tell the in-memory copies what changed:
        ``removed`` (their old state), then ``added`` with ``vecs`` ``(len(added), dim)``; ``touched``: the ids of
        every other row the write changed (parent links, flags; the node rows' copies read them again)."""
        before = self.get_meta("nodes_version")
        rows = np.zeros((0, self.dim), dtype=np.float32) if vecs is None else vecs
        self.memory_index.note_change(before, self.mark_nodes_written(), removed, added, rows, touched)

    def _index_new_nodes(self, rows: Sequence[tuple[str, str, int, str, str | None]], vecs: np.ndarray,
                         touched: Sequence[str] = ()) -> None:
        """Index just-inserted nodes ``(id, user_id, level, status, search_text)`` with their vectors
        ``(len(rows), dim)`` (inside the inserting transaction); ``touched``: rows the insert changed otherwise (the
        new parents' children)."""
        self._record_change([], bm25.index_docs(self.con, rows), vecs, [*(r[0] for r in rows), *touched])

    def _reindex_node(self, node_id: str, embedding: np.ndarray | None) -> None:
        """Index a node again after its text or status changed (inside the updating transaction); ``embedding``
        is its vector (read from the row when ``None``)."""
        removed = bm25.unindex_docs(self.con, [node_id])
        row = self.con.execute("SELECT id, user_id, level, status, search_text, embedding FROM nodes WHERE id = ?",
                               [node_id]).fetchone()
        if row is None:
            self._record_change(removed, [], touched=[node_id])
            return
        vec = np.asarray(row[5] if embedding is None else embedding, dtype=np.float32)[None, :]
        self._record_change(removed, bm25.index_docs(self.con, [(row[0], row[1], int(row[2]), row[3], row[4])]), vec,
                            [node_id])

    def _unindex_nodes(self, node_ids: Sequence[str], touched: Sequence[str] = ()) -> None:
        """Take deleted nodes out of the index (inside the deleting transaction); ``touched``: rows the delete
        changed otherwise (the children that lost their parent)."""
        self._record_change(bm25.unindex_docs(self.con, node_ids), [], touched=[*node_ids, *touched])

    def search_bm25(self, user_id: str, query: str, level: int, limit: int) -> list[tuple[str, float]]:
        """Top ``limit`` active nodes of one user and level by BM25 (higher is better); user filter in SQL.
        Scores equal the fts extension's ``match_bm25`` over this user's rows alone (see :mod:`timem.store.search`)."""
        with self.snapshot():  # the version and the rows a load reads, from one commit
            words = self._query_words().words(search_text(query))
            if words is not None:  # printable ASCII: no DuckDB query once the words' stems are known
                got = self.memory_index.bm25_top_stems(self.con, self.nodes_version(), user_id,
                                                       bm25_query.stems(words), level, limit)
                if got is not None:
                    return got
            termids = query_termids(self.con, query)
            if not termids:
                return []
            return self.memory_index.bm25_top(self.con, self.nodes_version(), user_id, termids, level, limit)

    def _query_words(self) -> bm25_query.QueryWords:
        """The file's tokenizer replayed in Python (:class:`timem.store.bm25_query.QueryWords`), learnt on first use
        and again after a rebuild."""
        qw: bm25_query.QueryWords | None = getattr(self, "_bm25_query_words", None)
        if qw is None:
            qw = self._bm25_query_words = bm25_query.QueryWords(self.con)
        return qw

    def search_vector(self, user_id: str, query_vec: np.ndarray, level: int, limit: int) -> list[tuple[str, float]]:
        """Top ``limit`` active nodes of one user and level by cosine similarity; user filter in SQL.
        Exact unless the store was opened with ``vector_index="hnsw"`` (see :mod:`timem.store.search`)."""
        if self.vector_index == "hnsw":
            return vector_top(self.con, self.dim, user_id, query_vec, level, limit, hnsw=True)
        with self.snapshot():  # the version and the rows a load reads, from one commit
            return self.memory_index.vector_top(self.con, self.nodes_version(), user_id, query_vec, level,
                                                limit)

    def adjacent_segments(self, user_id: str, node_ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
        """``(previous, next)`` L1 node of the same session per L1 node (see :mod:`timem.store.tree_queries`); from
        the user's working set when held (:mod:`timem.store.working_set`)."""
        ws = self.working_set(user_id)
        if ws is not None:
            return ws.adjacent(node_ids)
        return adjacent_segments(self.con, user_id, node_ids)

    def segments_in_windows(self, user_id: str, windows: Sequence[tuple[datetime, datetime]], limit: int,
                            until: datetime | None = None) -> list[tuple[str, datetime, datetime]]:
        """Active L1 nodes overlapping any ``[start, end)`` window, not starting after ``until`` (UTC-aware),
        as ``(id, span_start, span_end)`` (see :mod:`timem.store.tree_queries`)."""
        return [(i, utc(a), utc(b)) for i, a, b in segments_in_windows(self.con, user_id, windows, limit, until)]

    def segments_mentioning(self, user_id: str, days: Sequence[tuple[date, date, int]], until: datetime | None = None
                            ) -> list[tuple[str, str]]:
        """Active L1 nodes whose text mentions a period overlapping one of ``days`` ``(first, last, max_days)``
        (calendar days, inclusive) and lasting at most ``max_days``, not starting after ``until`` (UTC-aware), as
        ``(id, content)``, earliest first: a lookup in ``node_mentions`` (see :mod:`timem.store.mentions`)."""
        return mentions.segments_mentioning(self.con, user_id, days, until)

    def index_health(self) -> dict[str, Any]:
        """What ``timem check`` reads: nodes (``nodes``), nodes in the BM25 index (``bm25_documents``), nodes
        missing from it or indexed with another status or level than they have (``bm25_stale``: ids), whether the
        index was made with today's tokenizer (``bm25_tokenizer_current``, :func:`timem.store.bm25.tokenizer_current`)
        and ids of
        nodes whose vector is missing or not unit-length (``non_unit_vectors``) and ids of L1 nodes whose rows in
        ``node_mentions`` differ from the dates their text mentions (``mentions_stale``, at most 100; reads every
        text holding ``[=``: :func:`timem.store.mentions.stale`)."""
        n_nodes = one_row(self.con.execute("SELECT count(*) FROM nodes"))[0]
        n_docs = one_row(self.con.execute("SELECT count(*) FROM bm25_docs"))[0]
        stale = [r[0] for r in self.con.execute(
            "SELECT n.id FROM nodes n LEFT JOIN bm25_docs d ON d.node_id = n.id "
            "WHERE d.node_id IS NULL OR d.status <> n.status OR d.level <> n.level OR d.user_id <> n.user_id "
            "ORDER BY n.id LIMIT 100").fetchall()]
        bad = [r[0] for r in self.con.execute(
            "SELECT id FROM nodes WHERE len(embedding) IS NULL OR abs(list_dot_product(embedding::FLOAT[], "
            "embedding::FLOAT[]) - 1) > 1e-3").fetchall()]
        return {"nodes": int(n_nodes), "bm25_documents": int(n_docs), "bm25_stale": stale,
                "bm25_tokenizer_current": bm25.tokenizer_current(self.con), "non_unit_vectors": bad,
                "mentions_stale": mentions.stale(self.con)}
