"""The store's memory nodes (the :class:`~timem.store.ports.NodeRepository` port): the ``nodes`` table.

A mixin of :class:`timem.store.duckdb_store.Store` (it needs ``self.con``, ``self.dim``, ``self.memory_index``,
``self.transaction``, the meta version counter and ``self.drop_item_sources``). Spans are UTC-aware at this
boundary and naive UTC in the columns; embeddings are L2-normalised ``float32`` vectors of ``self.dim``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from timem.errors import NotFoundError, StoreError
from timem.models import Level, MemoryNode, NodeStatus
from timem.store import mentions
from timem.store.memory_index import MemoryIndex
from timem.store.records import db_time
from timem.store.rows import ID_LIST, SQL_ORDER, in_list, utc
from timem.store.segmenter import search_text
from timem.store.working_set import NODE_COLS as _WS_COLS
from timem.store.working_set import WorkingSet, node_of

NODE_COLS = _WS_COLS


class NodeTables:
    """Memory nodes of every level: insert with embeddings, read in conversation order, edit, erase."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection:  # provided by Store: the calling thread's cursor
        raise NotImplementedError

    dim: int
    memory_index: MemoryIndex

    @property
    def _in_tx(self) -> bool:  # provided by Store
        raise NotImplementedError

    if TYPE_CHECKING:  # provided by Store and its other parts (declared for the type checker only)
        def transaction(self) -> AbstractContextManager[None]: ...

        def get_meta(self, key: str) -> str | None: ...

        def mark_nodes_written(self) -> str: ...

        def drop_item_sources(self, node_ids: Sequence[str], units: Sequence[str] = ()) -> dict[str, int]: ...

        def _index_new_nodes(self, rows: Sequence[tuple[str, str, int, str, str | None]], vecs: np.ndarray,
                             touched: Sequence[str] = ()) -> None: ...

        def _reindex_node(self, node_id: str, embedding: np.ndarray | None) -> None: ...

        def _unindex_nodes(self, node_ids: Sequence[str], touched: Sequence[str] = ()) -> None: ...

        def _record_change(self, removed: Sequence[Any], added: Sequence[Any], vecs: np.ndarray | None = None,
                           touched: Sequence[str] = ()) -> None: ...

        def snapshot(self) -> AbstractContextManager[None]: ...

        def nodes_version(self) -> str | None: ...

    def relink(self, child_id: str, parent_id: str) -> None:
        """Set ``child_id``'s parent to ``parent_id`` if the child has none and the parent lists it."""
        with self.transaction():
            self.con.execute("UPDATE nodes SET parent_id = ? WHERE id = ? AND parent_id IS NULL AND EXISTS "
                             "(SELECT 1 FROM nodes p WHERE p.id = ? AND p.status = 'active' "
                             "AND list_contains(p.child_ids, ?))",
                             [parent_id, child_id, parent_id, child_id])
            self._record_change([], [], touched=[child_id])

    def add_node(self, node: MemoryNode, embedding: np.ndarray) -> None:
        """Insert one node with its embedding and link its children to it (see :meth:`add_nodes`)."""
        self.add_nodes([node], np.asarray(embedding, dtype=np.float32)[None, :])

    def add_nodes(self, nodes: Sequence[MemoryNode], embeddings: np.ndarray) -> None:
        """Insert nodes with their L2-normalised embeddings (``(len(nodes), dim)``) in one transaction,
        and make each node the parent of its ``child_ids``.

        Raises:
            StoreError: an embedding has the wrong shape or is not a finite unit vector.
        """
        vecs = np.asarray(embeddings, dtype=np.float32)
        if vecs.shape != (len(nodes), self.dim) or not np.all(np.isfinite(vecs)) or (
                len(nodes) and np.any(np.abs(np.linalg.norm(vecs, axis=1) - 1.0) > 1e-3)):
            raise StoreError(f"refusing to store embeddings of shape {vecs.shape} for {len(nodes)} node(s): "
                             f"expected finite unit vectors of dim {self.dim}")
        if not nodes:
            return
        texts = [search_text(n.content) for n in nodes]
        with self.transaction():
            self.con.executemany(f"INSERT INTO nodes ({NODE_COLS}, embedding, search_text) VALUES "
                                 "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", [[
                                     n.id, n.user_id, int(n.level), n.window_key, n.session_id,
                                     db_time(n.span_start), db_time(n.span_end), n.content, n.child_ids,
                                     n.history_ids, n.source_turn_ids, None, n.model_id, n.prompt_version,
                                     db_time(n.created_at), n.status.value, n.stale, n.mode, v.tolist(), text]
                                     for n, v, text in zip(nodes, vecs, texts, strict=True)])
            for n in nodes:
                if n.child_ids:
                    self.con.execute(f"UPDATE nodes SET parent_id = ? WHERE id IN {ID_LIST}", [n.id, n.child_ids])
            # the dates the new L1 nodes mention (timem.store.mentions) and their BM25 postings (timem.store.bm25)
            mentions.index_nodes(self.con, [(n.id, n.user_id, n.content) for n in nodes if n.level == Level.SEGMENT])
            self._index_new_nodes([(n.id, n.user_id, int(n.level), n.status.value, text)
                                   for n, text in zip(nodes, texts, strict=True)], vecs,
                                  [c for n in nodes for c in n.child_ids])

    def window_keys(self, user_id: str, level: Level, session_id: str | None = None, *,
                    include_deleted: bool = False) -> set[str]:
        """Window keys of the active (and optionally soft-deleted) nodes of one user and level."""
        states = "('active', 'deleted')" if include_deleted else "('active')"
        sql, args = f"SELECT window_key FROM nodes WHERE user_id = ? AND level = ? AND status IN {states}", \
            [user_id, int(level)]
        if session_id is not None:
            sql, args = sql + " AND session_id = ?", args + [session_id]
        return {r[0] for r in self.con.execute(sql, args).fetchall()}

    def update_node(self, node_id: str, *, content: str | None = None, embedding: np.ndarray | None = None,
                    status: NodeStatus | None = None, stale: bool | None = None) -> None:
        """Change a node's content (with its new embedding), status or stale flag."""
        sets, args = [], []
        if content is not None:
            if embedding is None:
                raise StoreError("new content needs its new embedding")
            sets += ["content = ?", "embedding = ?", "search_text = ?"]
            args += [content, np.asarray(embedding, dtype=np.float32).tolist(), search_text(content)]
        if status is not None:
            sets.append("status = ?")
            args.append(status.value)
        if stale is not None:
            sets.append("stale = ?")
            args.append(stale)
        if not sets:
            return
        with self.transaction():
            self.con.execute(f"UPDATE nodes SET {', '.join(sets)} WHERE id = ?", args + [node_id])
            if content is not None:  # the dates it mentions (timem.store.mentions)
                mentions.reindex_node(self.con, node_id)
            if content is not None or status is not None:  # its postings (and its place in the searches) change
                self._reindex_node(node_id, embedding)
            else:
                self._record_change([], [], touched=[node_id])

    def delete_nodes(self, node_ids: Sequence[str]) -> None:
        """Hard-erase nodes (rows, vectors, BM25 postings, mentioned dates) and the source turns of erased L1
        segments (else they would be consolidated again); children lose their parent link; the segment
        trees (:mod:`timem.tree.segtree`) of the users of erased L1 nodes are dropped, to be rebuilt by the next
        sync."""
        with self.transaction():
            self.con.execute("DELETE FROM turns WHERE id IN (SELECT unnest(source_turn_ids) FROM nodes "
                             f"WHERE id IN {ID_LIST} AND level = 1)", [list(node_ids)])
            orphans = [r[0] for r in self.con.execute(f"SELECT id FROM nodes WHERE parent_id IN {ID_LIST}",
                                                      [list(node_ids)]).fetchall()]
            self.con.execute(f"UPDATE nodes SET parent_id = NULL WHERE parent_id IN {ID_LIST}", [list(node_ids)])
            # segment trees name the erased L1 ids and average their vectors: dropped (rebuilt on sync)
            owners = f"(SELECT DISTINCT user_id FROM nodes WHERE id IN {ID_LIST} AND level = 1)"
            self.con.execute(f"DELETE FROM segtree_state WHERE user_id IN {owners}", [list(node_ids)])
            self.con.execute(f"DELETE FROM segtree_nodes WHERE user_id IN {owners}", [list(node_ids)])
            self.con.execute(f"DELETE FROM segtree_summaries WHERE user_id IN {owners}", [list(node_ids)])
            self.drop_item_sources(node_ids)  # items read only from erased segments go with them
            self.con.execute(f"DELETE FROM nodes WHERE id IN {ID_LIST}", [list(node_ids)])
            mentions.unindex_nodes(self.con, node_ids)
            self._unindex_nodes(node_ids, orphans)

    def working_set(self, user_id: str) -> WorkingSet | None:
        """The user's node rows held in memory at the current nodes version (:mod:`timem.store.working_set`), or
        ``None`` inside a write transaction or with the budget at 0 (then reads go to DuckDB)."""
        if self.memory_index.budget_bytes <= 0 or self._in_tx:
            return None
        with self.snapshot():  # the version and the rows a load or patch reads, from one commit
            return self.memory_index.rows(self.con, self.nodes_version(), user_id)

    def _nodes(self, where: str, args: list[Any], order: str = SQL_ORDER, limit: int | None = None
               ) -> list[MemoryNode]:
        sql = f"SELECT {NODE_COLS} FROM nodes WHERE {where} ORDER BY {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_node(r) for r in self.con.execute(sql, args).fetchall()]

    def node(self, node_id: str) -> MemoryNode:
        """One node by id. Raises :class:`NotFoundError` if absent."""
        found = self._nodes("id = ?", [node_id])
        if not found:
            raise NotFoundError(f"no memory node {node_id!r}; list nodes with `timem tree --user U`")
        return found[0]

    def nodes(self, user_id: str | None = None, level: int | None = None, *,
              status: NodeStatus | None = NodeStatus.ACTIVE, ids: Sequence[str] | None = None,
              session_id: str | None = None) -> list[MemoryNode]:
        """Nodes filtered by user, level, status (``None`` = any), ids, session; in conversation order (span
        start, level, then session and turn seq at equal times: :mod:`timem.tree.order`)."""
        if user_id is not None and ids is not None and level is None and session_id is None:
            ws = self.working_set(user_id)
            if ws is not None:
                return ws.nodes(ids, status)
        where: list[str] = ["TRUE"]
        args: list[Any] = []
        for col, val in (("user_id", user_id), ("level", level), ("session_id", session_id)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(int(val) if col == "level" else val)
        if status is not None:
            where.append("status = ?")
            args.append(status.value)
        if ids is not None:
            frag, vals = in_list(ids)
            where.append(f"id IN {frag}")
            args += vals
        return self._nodes(" AND ".join(where), args)

    def node_spans(self, user_id: str, level: int) -> list[tuple[str, str | None, datetime]]:
        """``(id, session id, span start)`` (UTC-aware) of the user's active nodes at ``level``, in conversation order
        (as :meth:`nodes`): what a consolidation groups into windows, without reading each node's text and lists
        (at 419 L1 nodes 7.5 ms against 37 ms for :meth:`nodes`, on a loaded 2-core machine)."""
        rows = self.con.execute(f"SELECT id, session_id, span_start FROM nodes WHERE user_id = ? AND level = ? "
                                f"AND status = 'active' ORDER BY {SQL_ORDER}", [user_id, int(level)]).fetchall()
        return [(r[0], r[1], utc(r[2])) for r in rows]

    def history(self, user_id: str, level: Level, before: datetime, k: int) -> list[MemoryNode]:
        """The ``k`` latest active nodes of ``level`` whose span starts before ``before``, oldest first."""
        rows = self._nodes("user_id = ? AND level = ? AND status = 'active' AND span_start < ?",
                           [user_id, int(level), db_time(before)], order="span_start DESC, id DESC", limit=k)
        return rows[::-1]

    def nodes_listing(self, child_ids: Sequence[str]) -> list[MemoryNode]:
        """Nodes of any status whose ``child_ids`` include one of ``child_ids`` (every version that
        summarised them, superseded ones included)."""
        if not child_ids:
            return []
        return self._nodes("list_has_any(child_ids, ?::VARCHAR[])", [list(child_ids)])

    def parent_ids(self, node_ids: Sequence[str]) -> dict[str, str | None]:
        frag, vals = in_list(node_ids)
        return dict(self.con.execute(f"SELECT id, parent_id FROM nodes WHERE id IN {frag}", vals).fetchall())

    def lineage(self, user_id: str, node_ids: Sequence[str], top_level: int
                ) -> tuple[dict[str, MemoryNode], dict[str, str | None]]:
        """``node_ids`` and their ancestors (any status), following ``parent_id`` up to the first node at
        or above ``top_level``; one query per tree level, each filtered by ``user_id`` (another user's
        node is never followed). A recursive CTE was measured slower: the ancestors stage took 110 ms p95
        at 228k rows with it, 52 ms with this loop (bench/results/recall-latency.md).

        Returns:
            ``(nodes by id, parent id by node id)``; a parent outside the result (another user's, or
            above the climb) maps to ``None``.
        """
        ws = self.working_set(user_id)
        if ws is not None:
            return ws.lineage(node_ids, top_level)
        nodes: dict[str, MemoryNode] = {}
        parent: dict[str, str | None] = {}
        frontier = list(dict.fromkeys(node_ids))
        while frontier:
            frag, vals = in_list(frontier)
            rows = self.con.execute(f"SELECT {NODE_COLS} FROM nodes WHERE id IN {frag} AND user_id = ?",
                                    [*vals, user_id]).fetchall()
            for r in rows:
                nodes[r[0]] = _node(r)
                parent[r[0]] = r[11]
            frontier = sorted({r[11] for r in rows if r[11] and int(r[2]) < top_level} - nodes.keys())
        return nodes, {nid: (pid if pid in nodes else None) for nid, pid in parent.items()}

    def embeddings(self, node_ids: Sequence[str], user_id: str | None = None) -> dict[str, np.ndarray]:
        """The stored vectors of ``node_ids`` (any status), by id, as ``(dim,)`` float32 arrays.

        With ``user_id``, of that user's nodes only, and those that the user's vector copies in memory hold at the
        current nodes version (:meth:`MemoryIndex.cached_vectors`: the active nodes of each level a search read,
        e.g. a recall's L1 candidates) come from there, the rest from DuckDB: the same values, without a query when
        all are held (recall's extra candidates, the name-masked cosines of the score gate)."""
        if user_id is None:
            frag, vals = in_list(node_ids)
            rows = self.con.execute(f"SELECT id, embedding FROM nodes WHERE id IN {frag}", vals).fetchall()
            return {r[0]: np.asarray(r[1], dtype=np.float32) for r in rows}
        with self.snapshot():  # the version and the rows read for the rest, from one commit
            out = self.memory_index.cached_vectors(self.nodes_version(), user_id, node_ids)
            rest = [i for i in dict.fromkeys(node_ids) if i not in out]
            if rest:
                frag, vals = in_list(rest)
                rows = self.con.execute(f"SELECT id, embedding FROM nodes WHERE id IN {frag} AND user_id = ?",
                                        [*vals, user_id]).fetchall()
                out.update({r[0]: np.asarray(r[1], dtype=np.float32) for r in rows})
        return out


_node = node_of
