"""The DuckDB store: turns, memory nodes with ``FLOAT[dim]`` embeddings, BM25 (fts), LLM cache, traces.

* One file per deployment; ``:memory:`` works for experiments.
* The fts and vss extensions are loaded from the installed ``duckdb-extension-fts`` /
  ``duckdb-extension-vss`` packages (never ``INSTALL`` from the network).
* The FTS index (and the BM25 postings table derived from it, :mod:`timem.store.search`) is a
  snapshot of ``nodes.search_text`` (the content with Chinese, Japanese and Korean runs cut into
  words, :mod:`timem.store.segmenter`; equal to ``content`` for other text): writes mark it dirty and
  :meth:`Store.refresh_fts` rebuilds it
  once per batch (a full rebuild, roughly linear in the number of nodes; about 1 s for 23k short
  nodes, 4-5 s for 228k, on 2 cores). BM25 queries refresh it lazily.
* Leaf searches (:meth:`Store.search_vector`, :meth:`Store.search_bm25`) read per-user in-memory copies of
  the vectors and BM25 postings (:mod:`timem.store.memory_index`), loaded on the first search after a
  change and extended in place after writes that only add nodes; the SQL they replace
  (:mod:`timem.store.search`) gives the same rows.
* The embedder's model id and dimension are recorded on creation; opening the file with another
  embedder raises :class:`StoreError` rather than mixing vector spaces.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from timem.errors import NotFoundError, StoreError
from timem.models import Level, MemoryNode, NodeStatus
from timem.store.items import ItemTables
from timem.store.memory_index import MemoryIndex
from timem.store.migrations import migrate
from timem.store.records import RecordTables, db_time
from timem.store.rows import in_list, one_row
from timem.store.search import (
    drop_hnsw,
    ensure_hnsw,
    extension_path,
)
from timem.store.search_tables import SearchTables
from timem.store.segmenter import search_text
from timem.store.turns import TurnTables
from timem.tree.order import SQL_ORDER

if TYPE_CHECKING:
    from timem.store.segtree_tables import SegmentTreeTables

_NODE_COLS = ("id, user_id, level, window_key, session_id, span_start, span_end, content, child_ids, "
              "history_ids, source_turn_ids, parent_id, model_id, prompt_version, created_at, status, stale, mode")
#: ``col IN {_IN_LIST}`` with a list parameter: a semi-join; ``list_contains(?, col)`` scanned every row
_IN_LIST = "(SELECT unnest(?::VARCHAR[]))"


def _py(dt: datetime) -> datetime:
    """Naive UTC from a TIMESTAMP column -> UTC-aware."""
    return dt.replace(tzinfo=UTC)


class Store(TurnTables, SearchTables, RecordTables, ItemTables):
    """DuckDB adapter for everything TiMem persists.

    Args:
        path: database file (created if missing) or ``":memory:"``.
        embed_model_id: id of the embedder whose vectors the file holds.
        dim: embedding dimension (the ``FLOAT[dim]`` column width).
        vector_index: ``"exact"`` (default: scans; drops an HNSW index left by an earlier run, with an
            ``hnsw-dropped`` audit row: any command opened without ``vector_index="hnsw"`` does) or
            ``"hnsw"`` (creates the vss HNSW index if missing -- minutes at 200k nodes -- and
            searches it with over-fetch; see :mod:`timem.store.search`).

    Raises:
        StoreError: the file cannot be opened (e.g. locked by another process) or was built
            with a different embedder.
    """

    def __init__(self, path: str | Path, embed_model_id: str, dim: int, vector_index: str = "exact") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the folder of DuckDB file {self.path}: {exc}; pass a path in a "
                                 "folder you can write to.") from exc
        self.con = self._connect()
        self.con.execute("CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
        stored = dict(self.con.execute("SELECT key, value FROM meta").fetchall())
        if "embed_model_id" in stored and (stored["embed_model_id"], int(stored["embed_dim"])) != (embed_model_id, dim):
            raise StoreError(f"{self.path} holds vectors of {stored['embed_model_id']} (dim {stored['embed_dim']}), "
                             f"not {embed_model_id} (dim {dim}); use the same embedder or a new --db file.")
        if "embed_model_id" not in stored:
            self._set_meta("embed_model_id", embed_model_id)
            self._set_meta("embed_dim", str(dim))
        self.dim = dim
        self.embed_model_id = embed_model_id
        self.schema_version = migrate(self.con, dim)
        self._in_tx = False
        self._postings_seen = False
        #: in-memory copies of each user's vectors and BM25 postings per level (:mod:`timem.store.memory_index`)
        self.memory_index = MemoryIndex(dim)
        if vector_index not in ("exact", "hnsw"):
            raise StoreError(f"unknown vector_index {vector_index!r}; use 'exact' or 'hnsw'")
        self.vector_index = vector_index
        if vector_index == "hnsw":
            ensure_hnsw(self.con)
        elif drop_hnsw(self.con):  # it would slow every insert and go stale; say so where edits are logged
            self.audit("hnsw-dropped", None, None, {"reason": "store opened with vector_index='exact'"})

    @property
    def segment_tree(self) -> SegmentTreeTables:
        """The users' segment trees in this file (:class:`timem.store.ports.SegmentTreePort`)."""
        from timem.store.segtree_tables import SegmentTreeTables  # it imports this module

        return SegmentTreeTables(self)

    def merge_file(self, other: str | Path) -> dict[str, int]:
        """Copy every user of the TiMem file ``other`` into this one (:func:`timem.store.merge.merge_file`)."""
        from timem.store.merge import merge_file

        return merge_file(self, other)

    # ---------------------------------------------------------------- basics
    def _connect(self) -> duckdb.DuckDBPyConnection:
        try:
            con = duckdb.connect(self.path)
        except duckdb.Error as exc:
            raise StoreError(f"cannot open DuckDB file {self.path}: {exc}. Close other TiMem processes "
                             "(CLI or studio) using it, or pass another --db.") from exc
        for ext in ("fts", "vss"):
            con.load_extension(str(extension_path(ext)))
        return con

    def close(self) -> None:
        self.con.close()

    def compact(self) -> dict[str, float]:
        """Rewrite the database file so that deleted rows leave no bytes behind (part of a hard erase).

        DuckDB marks the blocks of deleted rows free and reuses them later, but does not overwrite
        them: an erased sentence stays readable in the file. So the whole database is copied into a
        fresh file (``COPY FROM DATABASE``: tables, the fts index schema, indexes, macros), the
        connection is closed, the fresh file replaces the old one (``os.replace``, atomic) and is
        reopened. A failure before the swap leaves the original file as it was. An HNSW index is
        dropped first and rebuilt after (minutes at 200k nodes). ``:memory:`` stores: nothing to do.

        Returns:
            ``seconds``, ``bytes_before``, ``bytes_after``.

        Raises:
            StoreError: inside a transaction, or the copy failed (the original file is kept).
        """
        if self.path == ":memory:":
            return {"seconds": 0.0, "bytes_before": 0, "bytes_after": 0}
        if self._in_tx:
            raise StoreError("compact() inside a transaction; call it after the transaction commits")
        t0 = time.perf_counter()
        before = os.path.getsize(self.path)
        tmp = Path(self.path + ".compact")
        for leftover in (tmp, Path(str(tmp) + ".wal")):
            leftover.unlink(missing_ok=True)
        had_hnsw = drop_hnsw(self.con)
        name = one_row(self.con.execute("SELECT current_database()"))[0]
        self.con.execute("CHECKPOINT")
        quoted = str(tmp).replace("'", "''")
        self.con.execute(f"ATTACH '{quoted}' AS timem_compact")
        try:
            self.con.execute(f"COPY FROM DATABASE \"{name}\" TO timem_compact")
        except duckdb.Error as exc:
            self.con.execute("DETACH timem_compact")
            tmp.unlink(missing_ok=True)
            raise StoreError(f"could not rewrite {self.path} after an erase ({exc}); the erased rows are gone "
                             "but their bytes may remain in the file: run `timem compact` again, with free "
                             "disk space for a second copy of the file") from exc
        self.con.execute("DETACH timem_compact")
        self.con.close()
        os.replace(tmp, self.path)
        Path(self.path + ".wal").unlink(missing_ok=True)  # none after a clean close; never replay an old one
        self.con = self._connect()
        if had_hnsw or self.vector_index == "hnsw":
            ensure_hnsw(self.con)
        return {"seconds": time.perf_counter() - t0, "bytes_before": before, "bytes_after": os.path.getsize(self.path)}

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _set_meta(self, key: str, value: str) -> None:
        self.con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, value])

    def mark_nodes_written(self) -> str:
        """Mark ``nodes`` changed (call inside the writing transaction): the fts index is dirty and the nodes
        version (:mod:`timem.store.memory_index`) is a fresh token, returned."""
        version = uuid.uuid4().hex
        self.con.execute("INSERT OR REPLACE INTO meta VALUES ('fts_dirty', '1'), ('nodes_version', ?)", [version])
        return version

    def get_meta(self, key: str) -> str | None:
        row = self.con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return row[0] if row else None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All-or-nothing block; nested use joins the outer transaction."""
        if self._in_tx:
            yield
            return
        self.con.execute("BEGIN TRANSACTION")
        self._in_tx = True
        try:
            yield
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        finally:
            self._in_tx = False

    # ---------------------------------------------------------------- nodes
    def relink(self, child_id: str, parent_id: str) -> None:
        """Set ``child_id``'s parent to ``parent_id`` if the child has none and the parent lists it."""
        self.con.execute("UPDATE nodes SET parent_id = ? WHERE id = ? AND parent_id IS NULL AND EXISTS "
                         "(SELECT 1 FROM nodes p WHERE p.id = ? AND p.status = 'active' "
                         "AND list_contains(p.child_ids, ?))",
                         [parent_id, child_id, parent_id, child_id])

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
        with self.transaction():
            self.con.executemany(f"INSERT INTO nodes ({_NODE_COLS}, embedding, search_text) VALUES "
                                 "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", [[
                                     n.id, n.user_id, int(n.level), n.window_key, n.session_id,
                                     db_time(n.span_start), db_time(n.span_end), n.content, n.child_ids,
                                     n.history_ids, n.source_turn_ids, None, n.model_id, n.prompt_version,
                                     db_time(n.created_at), n.status.value, n.stale, n.mode, v.tolist(),
                                     search_text(n.content)]
                                     for n, v in zip(nodes, vecs, strict=True)])
            for n in nodes:
                if n.child_ids:
                    self.con.execute(f"UPDATE nodes SET parent_id = ? WHERE id IN {_IN_LIST}", [n.id, n.child_ids])
            before = self.get_meta("nodes_version")
            live = [k for k, n in enumerate(nodes) if n.status == NodeStatus.ACTIVE]
            self.memory_index.note_append(before, self.mark_nodes_written(), [nodes[k].user_id for k in live],
                                          [int(nodes[k].level) for k in live], [nodes[k].id for k in live], vecs[live])

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
        if sets:
            self.con.execute(f"UPDATE nodes SET {', '.join(sets)} WHERE id = ?", args + [node_id])
            self.mark_nodes_written()

    def delete_nodes(self, node_ids: Sequence[str]) -> None:
        """Hard-erase nodes (rows, vectors; FTS on next refresh) and the source turns of erased L1
        segments (else they would be consolidated again); children lose their parent link; the segment
        trees (:mod:`timem.segtree`) of the users of erased L1 nodes are dropped, to be rebuilt by the next sync."""
        with self.transaction():
            self.con.execute("DELETE FROM turns WHERE id IN (SELECT unnest(source_turn_ids) FROM nodes "
                             f"WHERE id IN {_IN_LIST} AND level = 1)", [list(node_ids)])
            self.con.execute(f"UPDATE nodes SET parent_id = NULL WHERE parent_id IN {_IN_LIST}", [list(node_ids)])
            # segment trees name the erased L1 ids and average their vectors: dropped (rebuilt on sync)
            owners = f"(SELECT DISTINCT user_id FROM nodes WHERE id IN {_IN_LIST} AND level = 1)"
            self.con.execute(f"DELETE FROM segtree_state WHERE user_id IN {owners}", [list(node_ids)])
            self.con.execute(f"DELETE FROM segtree_nodes WHERE user_id IN {owners}", [list(node_ids)])
            self.con.execute(f"DELETE FROM segtree_summaries WHERE user_id IN {owners}", [list(node_ids)])
            self.drop_item_sources(node_ids)  # items read only from erased segments go with them
            self.con.execute(f"DELETE FROM nodes WHERE id IN {_IN_LIST}", [list(node_ids)])
            self.mark_nodes_written()

    def _nodes(self, where: str, args: list[Any], order: str = SQL_ORDER, limit: int | None = None
               ) -> list[MemoryNode]:
        sql = f"SELECT {_NODE_COLS} FROM nodes WHERE {where} ORDER BY {order}"
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

    def node_for_window(self, user_id: str, level: Level, window_key: str) -> MemoryNode | None:
        """The active node consolidating ``window_key`` at ``level``, if any."""
        found = self._nodes("user_id = ? AND level = ? AND window_key = ? AND status = 'active'",
                            [user_id, int(level), window_key])
        return found[0] if found else None

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
        nodes: dict[str, MemoryNode] = {}
        parent: dict[str, str | None] = {}
        frontier = list(dict.fromkeys(node_ids))
        while frontier:
            frag, vals = in_list(frontier)
            rows = self.con.execute(f"SELECT {_NODE_COLS} FROM nodes WHERE id IN {frag} AND user_id = ?",
                                    [*vals, user_id]).fetchall()
            for r in rows:
                nodes[r[0]] = _node(r)
                parent[r[0]] = r[11]
            frontier = sorted({r[11] for r in rows if r[11] and int(r[2]) < top_level} - nodes.keys())
        return nodes, {nid: (pid if pid in nodes else None) for nid, pid in parent.items()}

    def embeddings(self, node_ids: Sequence[str]) -> dict[str, np.ndarray]:
        frag, vals = in_list(node_ids)
        rows = self.con.execute(f"SELECT id, embedding FROM nodes WHERE id IN {frag}", vals).fetchall()
        return {r[0]: np.asarray(r[1], dtype=np.float32) for r in rows}

    def user_texts(self, user_id: str) -> list[str]:
        """Every turn text and node content of ``user_id`` (what a hard erase of the user must not leave)."""
        return [r[0] for r in self.con.execute("SELECT text FROM turns WHERE user_id = ? UNION ALL SELECT content FROM "
                                               "nodes WHERE user_id = ? UNION ALL SELECT value FROM memory_items "
                                               "WHERE user_id = ?", [user_id, user_id, user_id]).fetchall()]

    def erase_user(self, user_id: str) -> dict[str, int]:
        """Remove every row of ``user_id`` (turns, sessions, nodes, segment tree, traces, cache entries of its
        calls)."""
        counts: dict[str, int] = {}
        with self.transaction():
            texts = self.user_texts(user_id)
            keys = [r[0] for r in self.con.execute("SELECT DISTINCT cache_key FROM llm_calls WHERE user_id = ? "
                                                   "AND cache_key IS NOT NULL", [user_id]).fetchall()]
            counts["llm_cache"] = one_row(self.con.execute(f"SELECT count(*) FROM llm_cache WHERE key IN {_IN_LIST}",
                                                           [keys]))[0]
            self.con.execute(f"DELETE FROM llm_cache WHERE key IN {_IN_LIST}", [keys])
            counts["llm_cache"] += self.purge_cache_mentioning(texts)
            for table in ("turns", "sessions", "nodes", "recall_traces", "llm_calls", "segtree_nodes", "segtree_state",
                          "segtree_summaries", "write_requests", "memory_items", "memory_extractions"):
                counts[table] = one_row(self.con.execute(f"SELECT count(*) FROM {table} WHERE user_id = ?",
                                                         [user_id]))[0]
                self.con.execute(f"DELETE FROM {table} WHERE user_id = ?", [user_id])
            self.mark_nodes_written()
        return counts

    def checkpoint(self) -> None:
        """Write the WAL into the database file (before the file is copied or sent elsewhere)."""
        self.con.execute("CHECKPOINT")

    def stats(self) -> dict[str, Any]:
        """Counts: nodes per level, turns, users, LLM calls, tokens, cache hits."""
        per_level = dict(self.con.execute("SELECT level, count(*) FROM nodes WHERE status = 'active' "
                                          "GROUP BY level ORDER BY level").fetchall())
        calls = one_row(self.con.execute("SELECT count(*) FILTER (WHERE NOT cached), count(*) FILTER (WHERE cached), "
                                         "coalesce(sum(prompt_tokens) FILTER (WHERE NOT cached), 0), "
                                         "coalesce(sum(completion_tokens) FILTER (WHERE NOT cached), 0) "
                                         "FROM llm_calls"))
        return {
            "turns": one_row(self.con.execute("SELECT count(*) FROM turns"))[0],
            "users": len(self.users()),
            "nodes_per_level": {f"L{k}": v for k, v in per_level.items()},
            "llm_calls": calls[0], "llm_cache_hits": calls[1],
            "prompt_tokens": calls[2], "completion_tokens": calls[3],
            "schema_version": self.schema_version,
        }


def _node(r: tuple[Any, ...]) -> MemoryNode:
    return MemoryNode(id=r[0], user_id=r[1], level=Level(r[2]), window_key=r[3], session_id=r[4],
                      span_start=_py(r[5]), span_end=_py(r[6]), content=r[7], child_ids=list(r[8]),
                      history_ids=list(r[9]), source_turn_ids=list(r[10]), model_id=r[12], prompt_version=r[13],
                      created_at=_py(r[14]), status=NodeStatus(r[15]), stale=r[16], mode=r[17])
