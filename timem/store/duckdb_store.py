"""The DuckDB store: turns, memory nodes with ``FLOAT[dim]`` embeddings, BM25 (fts), LLM cache, traces.

* One file per deployment; ``:memory:`` works for experiments.
* The fts and vss extensions are loaded from the installed ``duckdb-extension-fts`` /
  ``duckdb-extension-vss`` packages (never ``INSTALL`` from the network).
* The BM25 postings (:mod:`timem.store.bm25`) index ``nodes.search_text`` (the content with Chinese,
  Japanese and Korean runs cut into words, :mod:`timem.store.segmenter`; equal to ``content`` for other
  text) with the fts extension's tokenizer and stemmer; every write keeps them current in its own
  transaction, in work proportional to what it wrote. :meth:`Store.refresh_fts` with ``force`` rebuilds
  them from every node (repair, hard erase).
* Leaf searches (:meth:`Store.search_vector`, :meth:`Store.search_bm25`) read per-user in-memory copies of
  the vectors and BM25 postings (:mod:`timem.store.memory_index`), loaded on the first search and patched
  after each recorded write; the SQL they replace (:mod:`timem.store.search`) gives the same rows. Reads of a
  user's nodes by id (``nodes(user_id=…, ids=…)``, :meth:`lineage`) and of its segment tree's leaves come from
  the user's working set in the same cache (:mod:`timem.store.working_set`), one LRU budget per store
  (``working_set_mb``).
* The embedder's model id and dimension are recorded on creation; opening the file with another
  embedder raises :class:`StoreError` rather than mixing vector spaces.
* Threads (issue 26 §4): :attr:`Store.con` is the calling thread's own DuckDB cursor, so reads run in parallel;
  every :meth:`Store.transaction` holds :attr:`Store.writer`, one lock per store, so writes go one at a time;
  :meth:`Store.snapshot` reads in one consistent view; a hard erase's :meth:`Store.compact` waits for the readers
  inside :meth:`Store.reading` and keeps new ones out (:mod:`timem.store.threads`).
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import duckdb

from timem.errors import StoreError
from timem.store import mentions
from timem.store.bm25 import unindex_user
from timem.store.extensions import extension_path
from timem.store.items import ItemTables
from timem.store.jobs import JobTables
from timem.store.memory_index import CACHE_BYTES, MemoryIndex
from timem.store.merge import merge_file
from timem.store.migrations import migrate
from timem.store.nodes import NodeTables
from timem.store.open_errors import OUT_OF_MEMORY_ADVICE, is_duckdb_file, open_error, out_of_memory_error
from timem.store.records import RecordTables
from timem.store.rows import ID_LIST, one_row
from timem.store.search import drop_hnsw, ensure_hnsw
from timem.store.search_tables import SearchTables
from timem.store.segtree_tables import SegmentTreeTables
from timem.store.threads import Cursors
from timem.store.traces import TraceTables
from timem.store.turns import TurnTables

__all__ = ["OUT_OF_MEMORY_ADVICE", "Store", "is_duckdb_file", "open_error", "out_of_memory_error"]


class Store(NodeTables, TurnTables, SearchTables, TraceTables, RecordTables, ItemTables, JobTables):
    """DuckDB adapter for everything TiMem persists.

    Args:
        path: database file (created if missing) or ``":memory:"``.
        embed_model_id: id of the embedder whose vectors the file holds.
        dim: embedding dimension (the ``FLOAT[dim]`` column width).
        vector_index: ``"exact"`` (default: scans; drops an HNSW index left by an earlier run, with an
            ``hnsw-dropped`` audit row: any command opened without ``vector_index="hnsw"`` does) or
            ``"hnsw"`` (creates the vss HNSW index if missing -- minutes at 200k nodes -- and
            searches it with over-fetch; see :mod:`timem.store.search`).
        working_set_mb: MiB the in-memory copies of every user may take (vectors, postings, node rows, segment
            tree; least recently used user first out); 0: node rows and leaves are read from DuckDB, and the
            search copies keep only the latest one (``StoreSettings.working_set_mb``).
        duckdb_memory_mb: DuckDB's ``memory_limit`` in MiB (its buffer pool; ``StoreSettings.duckdb_memory_mb``);
            ``None``: DuckDB's default (80 % of the RAM).

    Raises:
        StoreError: the file cannot be opened (e.g. locked by another process) or was built
            with a different embedder.
    """

    def __init__(self, path: str | Path, embed_model_id: str, dim: int, vector_index: str = "exact",
                 working_set_mb: float = CACHE_BYTES / 2**20, duckdb_memory_mb: float | None = None) -> None:
        self.path = str(path)
        self.duckdb_memory_mb = duckdb_memory_mb
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the folder of DuckDB file {self.path}: {exc}; pass a path in a "
                                 "folder you can write to.") from exc
        #: one DuckDB cursor per thread over one connection, and the gate a hard erase's compaction closes
        self.cursors = Cursors(self._connect())
        #: held by every write transaction (re-entrant): one writer at a time per store
        self.writer = threading.RLock()
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
        #: consolidation jobs a process that died had claimed, back to pending (:mod:`timem.store.jobs`)
        self.stale_jobs_released = self.release_stale_jobs()
        #: in-memory copies of each user's vectors and BM25 postings per level (:mod:`timem.store.memory_index`)
        self.memory_index = MemoryIndex(dim, int(working_set_mb * 2**20))
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
        return SegmentTreeTables(self)

    def merge_file(self, other: str | Path) -> dict[str, int]:
        """Copy every user of the TiMem file ``other`` into this one (:func:`timem.store.merge.merge_file`)."""
        return merge_file(self, other)

    # ---------------------------------------------------------------- basics
    def _connect(self) -> duckdb.DuckDBPyConnection:
        if not is_duckdb_file(self.path):  # DuckDB 1.5 "opens" e.g. a JSONL file as an empty in-memory database
            raise StoreError(f"{self.path} exists but is not a DuckDB file: give the path of a TiMem .duckdb file, "
                             "or a new file name to create one.")
        try:
            con = duckdb.connect(self.path, config={} if self.duckdb_memory_mb is None else
                                 {"memory_limit": f"{int(self.duckdb_memory_mb)}MiB"})
        except duckdb.Error as exc:
            raise StoreError(open_error(self.path, exc)) from exc
        for ext in ("fts", "vss"):
            con.load_extension(str(extension_path(ext)))
        return con

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The calling thread's DuckDB cursor (:class:`timem.store.threads.Cursors`)."""
        return self.cursors.current()

    @property
    def _in_tx(self) -> bool:
        """Whether the calling thread is inside :meth:`transaction`."""
        return self.cursors.state().in_tx

    def reading(self) -> AbstractContextManager[None]:
        """Hold off a compaction (:meth:`compact`) while the block reads; use it around reads of a thread that
        does not hold the caller's write lock (the memory service's reads)."""
        return self.cursors.gate.shared()

    def close(self) -> None:
        self.cursors.close()

    def compact(self) -> dict[str, float]:
        """Rewrite the database file so that deleted rows leave no bytes behind (part of a hard erase).

        DuckDB marks the blocks of deleted rows free and reuses them later, but does not overwrite
        them: an erased sentence stays readable in the file. So the whole database is copied into a
        fresh file (``COPY FROM DATABASE``: tables, the fts index schema, indexes, macros), the
        connection is closed, the fresh file replaces the old one (``os.replace``, atomic) and is
        reopened. A failure before the swap leaves the original file as it was. An HNSW index is
        dropped first and rebuilt after (minutes at 200k nodes). ``:memory:`` stores: nothing to do.

        Returns:
            ``seconds``, ``bytes_before``, ``bytes_after``: the sizes on disk, file and ``.wal`` together,
            ``bytes_before`` once the WAL is checkpointed into the file (before, "before" left out rows still in
            the WAL, and an erase looked as if it grew the file).

        Raises:
            StoreError: inside a transaction, or the copy failed (the original file is kept).
        """
        if self.path == ":memory:":
            return {"seconds": 0.0, "bytes_before": 0, "bytes_after": 0}
        if self._in_tx:
            raise StoreError("compact() inside a transaction; call it after the transaction commits")
        t0 = time.perf_counter()
        tmp = Path(self.path + ".compact")
        for leftover in (tmp, Path(str(tmp) + ".wal")):
            leftover.unlink(missing_ok=True)
        with self.cursors.gate.exclusive():  # no reader inside; their cursors closed (an open result holds a
            self.cursors.close_cursors()     # transaction, and CHECKPOINT refuses to run beside one)
            had_hnsw = drop_hnsw(self.con)
            name = one_row(self.con.execute("SELECT current_database()"))[0]
            self.con.execute("CHECKPOINT")
            before = self._bytes_on_disk()  # after the checkpoint: a trial's erase reported 12288 -> 7352320
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
            self.cursors.close()
            os.replace(tmp, self.path)
            Path(self.path + ".wal").unlink(missing_ok=True)  # none after a clean close; never replay an old one
            self.cursors.reopen(self._connect())
        if had_hnsw or self.vector_index == "hnsw":
            ensure_hnsw(self.con)
        return {"seconds": time.perf_counter() - t0, "bytes_before": before, "bytes_after": self._bytes_on_disk()}

    def _bytes_on_disk(self) -> int:
        """The database file's size plus its ``.wal`` file's, if any (rows written since the last checkpoint)."""
        wal = Path(self.path + ".wal")
        return os.path.getsize(self.path) + (wal.stat().st_size if wal.exists() else 0)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _set_meta(self, key: str, value: str) -> None:
        self.con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, value])

    def mark_nodes_written(self) -> str:
        """Mark ``nodes`` changed (call inside the writing transaction): the nodes version
        (:mod:`timem.store.memory_index`) is a fresh token, returned."""
        version = uuid.uuid4().hex
        self.con.execute("INSERT OR REPLACE INTO meta VALUES ('nodes_version', ?)", [version])
        return version

    def get_meta(self, key: str) -> str | None:
        row = self.con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return row[0] if row else None

    def calendar_zone(self, zone: str | None = None) -> str | None:
        """The IANA zone this file's L3-L5 calendar windows are cut in (meta ``calendar_timezone``): ``zone`` is
        recorded if none is yet; returns the recorded one, or ``None`` for a file never consolidated above L2."""
        recorded = self.get_meta("calendar_timezone")
        if recorded is None and zone is not None:
            self._set_meta("calendar_timezone", zone)
            return zone
        return recorded

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All-or-nothing block on the calling thread's cursor, holding :attr:`writer` (one write transaction at a
        time per store); nested use joins the outer transaction. Inside a :meth:`snapshot`, the snapshot ends
        first (its reads are done; later reads see the latest commits)."""
        st = self.cursors.state()
        if st.in_tx:
            yield
            return
        con = self.con
        if st.in_snapshot:
            con.execute("COMMIT")
            st.in_snapshot, st.snapshot_version = False, None
        with self.writer:
            con.execute("BEGIN TRANSACTION")
            st.in_tx = True
            try:
                yield
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
            finally:
                st.in_tx = False

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads in one consistent view of the file (a DuckDB transaction on the calling thread's cursor, without
        :attr:`writer`): what commits meanwhile is not seen. Nested use (or use inside :meth:`transaction`) joins
        the outer block; a :meth:`transaction` inside ends the snapshot."""
        st = self.cursors.state()
        if st.in_tx or st.in_snapshot:
            yield
            return
        con = self.con
        con.execute("BEGIN TRANSACTION")
        st.in_snapshot, st.snapshot_version = True, None
        try:
            yield
        finally:
            if st.in_snapshot:
                st.in_snapshot, st.snapshot_version = False, None
                con.execute("COMMIT")

    def nodes_version(self) -> str | None:
        """The nodes version (meta ``nodes_version``, :mod:`timem.store.memory_index`) as the calling thread sees it;
        read once per :meth:`snapshot` (it cannot change inside one)."""
        st = self.cursors.state()
        if st.in_snapshot and st.snapshot_version is not None:
            return st.snapshot_version[0]
        version = self.get_meta("nodes_version")
        if st.in_snapshot:
            st.snapshot_version = (version,)
        return version

    def user_texts(self, user_id: str) -> list[str]:
        """Every turn text and node content of ``user_id`` (what a hard erase of the user must not leave)."""
        return [r[0] for r in self.con.execute("SELECT text FROM turns WHERE user_id = ? UNION ALL SELECT content FROM "
                                               "nodes WHERE user_id = ? UNION ALL SELECT value FROM memory_items "
                                               "WHERE user_id = ?", [user_id, user_id, user_id]).fetchall()]

    def erase_user(self, user_id: str) -> dict[str, int]:
        """Remove every row of ``user_id`` (turns, sessions, nodes with their BM25 postings and mentioned dates,
        segment tree, traces, cache entries of its calls)."""
        counts: dict[str, int] = {}
        with self.transaction():
            texts = self.user_texts(user_id)
            keys = [r[0] for r in self.con.execute("SELECT DISTINCT cache_key FROM llm_calls WHERE user_id = ? "
                                                   "AND cache_key IS NOT NULL", [user_id]).fetchall()]
            counts["llm_cache"] = one_row(self.con.execute(f"SELECT count(*) FROM llm_cache WHERE key IN {ID_LIST}",
                                                           [keys]))[0]
            self.con.execute(f"DELETE FROM llm_cache WHERE key IN {ID_LIST}", [keys])
            counts["llm_cache"] += self.purge_cache_mentioning(texts)
            for table in ("turns", "sessions", "nodes", "recall_traces", "llm_calls", "segtree_nodes", "segtree_state",
                          "segtree_summaries", "write_requests", "memory_items", "memory_extractions",
                          "consolidation_jobs"):
                counts[table] = one_row(self.con.execute(f"SELECT count(*) FROM {table} WHERE user_id = ?",
                                                         [user_id]))[0]
                self.con.execute(f"DELETE FROM {table} WHERE user_id = ?", [user_id])
            unindex_user(self.con, user_id)
            mentions.unindex_user(self.con, user_id)
            self.mark_nodes_written()  # no step recorded: the in-memory copies are loaded again
        return counts

    def checkpoint(self) -> None:
        """Write the WAL into the database file (before the file is copied or sent elsewhere)."""
        self.con.execute("CHECKPOINT")

    def stats(self) -> dict[str, Any]:
        """Counts: nodes per level, turns, users, LLM calls, tokens, cache hits, recall traces and their stored
        bytes (bounded by ``trace_keep_per_user`` / ``trace_max_age_days``)."""
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
            **dict(zip(("recall_traces", "recall_trace_bytes"), self.trace_bytes(), strict=True)),
            "consolidation_queue": self.queue_counts(),
        }
