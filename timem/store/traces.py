"""The recall-trace table: one row per persisted recall, bounded by a retention rule, erasable by content.

A mixin of :class:`timem.store.duckdb_store.Store` (it needs ``self.con`` and ``self.transaction``).

* **Storage.** ``recall_traces(id, user_id, query, created_at, body)``: ``body`` is the trace document
  (a JSON object; :mod:`timem.recall.trace_store` decides its shape) as zlib-compressed UTF-8 JSON
  (``ensure_ascii``, so it reads as the JSON text the erase probes were written for). The store never
  looks inside a document except to erase.
* **Retention** (:meth:`TraceTables.save_trace`): after each write, the traces older than ``max_age_days``
  (every user's) and the user's traces beyond the newest ``keep_per_user`` are deleted, in the write's
  transaction. Both deletes touch a table whose size the rule itself bounds, so a write costs the same
  after a million recalls as after ten. ``created_at`` is when the trace was written (UTC), not the
  question time.
* **Space.** DuckDB never reuses the blocks of deleted (or updated) rows of a table that lives on: with
  deletes alone, 10,000 writes kept 500 traces and still grew the file by 135 MB. Its blocks are freed,
  and reused by later writes, when the table is dropped. So once the deleted rows since the last rewrite
  outnumber half the live ones (and at least :data:`REWRITE_MIN`; ``max(rowid) + 1 - count(*)``), the
  write rewrites the table: its live rows copied into a fresh one, the old one dropped
  (:meth:`TraceTables.rewrite_traces`; ~20 ms for 500 traces, ~150 ms for 5,000). That is two row copies
  per write on average, and the file stays within about three times the retained traces' bytes.
* **Erase** (:meth:`TraceTables.forget_traces`): every trace whose document names one of the ids or
  quotes one of the texts is deleted; each document is decompressed and searched (the table is bounded
  by retention, and an erase rewrites the whole file anyway).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb

from timem.errors import StoreError
from timem.store.records import db_time
from timem.store.rows import ID_LIST, one_row

#: zlib level of trace bodies: 6 is within 2 % of 9 on real traces at a third of the time
_LEVEL = 6
_BATCH = 256
#: rewrite the table only once at least this many rows were deleted since the last rewrite
REWRITE_MIN = 256


def encode_trace(doc: dict[str, Any]) -> bytes:
    """A trace document -> the bytes stored in ``recall_traces.body`` (compact JSON, zlib)."""
    return zlib.compress(json.dumps(doc, separators=(",", ":"), default=str).encode(), _LEVEL)


def decode_trace(body: bytes) -> dict[str, Any]:
    """``recall_traces.body`` -> the trace document.

    Raises:
        StoreError: the bytes are not a compressed JSON object (a damaged row).
    """
    try:
        doc = json.loads(zlib.decompress(body))
    except (zlib.error, ValueError) as exc:
        raise StoreError(f"a recall trace body cannot be read ({exc}); delete the row or restore the file") from exc
    if not isinstance(doc, dict):
        raise StoreError("a recall trace body is not a JSON object; delete the row or restore the file")
    return doc


class TraceTables:
    """Persisted recall traces over ``self.con``."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection:  # provided by Store: the calling thread's cursor
        raise NotImplementedError

    @property
    def _in_tx(self) -> bool:  # provided by Store: the calling thread is inside an outer transaction
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[None]:  # provided by Store
        raise NotImplementedError

    def save_trace(self, trace_id: str, user_id: str, query: str, trace: dict[str, Any], *,
                   keep_per_user: int | None = None, max_age_days: float | None = None,
                   now: datetime | None = None) -> int:
        """Insert (or replace by ``trace_id``) one trace document, then apply the retention rule.

        Args:
            trace: a JSON-ready document (the recall layer's compact form; any JSON object is stored).
            keep_per_user: keep at most this many traces of ``user_id``, the newest (``None``: no cap).
            max_age_days: delete every user's traces written more than this many days before ``now``
                (``None``: no age limit).
            now: the write time (UTC-aware; default the clock), stored as ``created_at``.

        Returns:
            How many older traces the retention rule deleted.

        Raises:
            StoreError: ``keep_per_user`` < 1 or ``max_age_days`` <= 0.
        """
        if keep_per_user is not None and keep_per_user < 1:
            raise StoreError(f"trace_keep_per_user must be at least 1 (got {keep_per_user}); unset it for no cap")
        if max_age_days is not None and max_age_days <= 0:
            raise StoreError(f"trace_max_age_days must be positive (got {max_age_days}); unset it for no limit")
        at = now or datetime.now(UTC)
        pruned = 0
        with self.transaction():
            self.con.execute("INSERT OR REPLACE INTO recall_traces VALUES (?,?,?,?,?)",
                             [trace_id, user_id, query, db_time(at), encode_trace(trace)])
            if max_age_days is not None:
                pruned += one_row(self.con.execute("DELETE FROM recall_traces WHERE created_at < ?",
                                                   [db_time(at - timedelta(days=max_age_days))]))[0]
            if keep_per_user is not None:
                pruned += one_row(self.con.execute(
                    "DELETE FROM recall_traces WHERE user_id = ? AND id IN (SELECT id FROM recall_traces "
                    "WHERE user_id = ? ORDER BY created_at DESC, id DESC OFFSET ?)",
                    [user_id, user_id, keep_per_user]))[0]
        if not self._in_tx:  # a rewrite inside someone else's transaction would hold it; the next write does it
            live, dead = one_row(self.con.execute(
                "SELECT count(*), coalesce(max(rowid) + 1, 0) - count(*) FROM recall_traces"))
            if dead >= max(live // 2, REWRITE_MIN):
                self.rewrite_traces()
        return int(pruned)

    def rewrite_traces(self) -> None:
        """Copy the live traces into a fresh table and drop the old one, so that the blocks of deleted traces
        are reused by later writes (see the module doc). Same columns, constraints and rows.

        Raises:
            StoreError: inside a transaction (DuckDB cannot drop a table that transaction changed).
        """
        if self._in_tx:
            raise StoreError("rewrite_traces() inside a transaction; call it after the transaction commits")
        ddl = one_row(self.con.execute("SELECT sql FROM duckdb_tables() WHERE table_name = 'recall_traces' "
                                       "AND schema_name = current_schema()"))[0]
        fresh = ddl.replace("recall_traces", "recall_traces_rewrite", 1)
        with self.transaction():
            self.con.execute(fresh)
            self.con.execute("INSERT INTO recall_traces_rewrite SELECT * FROM recall_traces")
            self.con.execute("DROP TABLE recall_traces")
            self.con.execute("ALTER TABLE recall_traces_rewrite RENAME TO recall_traces")

    def traces(self, user_id: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Saved trace documents (each the dict given to :meth:`save_trace`), newest first, at most ``limit``."""
        sql, args = "SELECT body FROM recall_traces", []
        if user_id is not None:
            sql, args = sql + " WHERE user_id = ?", [user_id]
        rows = self.con.execute(sql + f" ORDER BY created_at DESC, id DESC LIMIT {int(limit)}", args).fetchall()
        return [decode_trace(r[0]) for r in rows]

    def trace_bytes(self, user_id: str | None = None) -> tuple[int, int]:
        """``(traces, stored body bytes)`` of one user or of all."""
        where, args = (" WHERE user_id = ?", [user_id]) if user_id is not None else ("", [])
        n, size = one_row(self.con.execute(f"SELECT count(*), coalesce(sum(octet_length(body)), 0) "
                                           f"FROM recall_traces{where}", args))
        return int(n), int(size)

    def forget_traces(self, needles: Sequence[str], user_id: str | None = None,
                      within: Collection[str] | None = None) -> int:
        """Delete every trace whose JSON text contains one of ``needles`` (ids, quoted lines), among the traces of
        the users ``within`` (the owners of what is erased: recall reads one user's memories, so another user's
        trace that holds the same words, "What is my job?", is not about them), or of every user when ``within`` is
        ``None``; and every trace of ``user_id`` if given. Returns how many were deleted."""
        doomed: list[str] = []
        if needles and (within is None or within):
            sql, args = "SELECT id, body FROM recall_traces", []
            if within is not None:
                sql, args = sql + f" WHERE user_id IN {ID_LIST}", [sorted(within)]
            cur = self.con.execute(sql, args)
            while rows := cur.fetchmany(_BATCH):
                for tid, body in rows:
                    text = zlib.decompress(body).decode()
                    if any(n in text for n in needles):
                        doomed.append(tid)
        n = 0
        if doomed:
            n += one_row(self.con.execute(f"DELETE FROM recall_traces WHERE id IN {ID_LIST}", [doomed]))[0]
        if user_id is not None:
            n += one_row(self.con.execute("DELETE FROM recall_traces WHERE user_id = ?", [user_id]))[0]
        return int(n)
