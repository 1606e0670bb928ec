"""The store's record tables: LLM response cache, LLM call log, recall traces, audit log.

A mixin of :class:`timem.store.duckdb_store.Store` (it needs ``self.con``). Timestamps are written
as naive UTC wall time (see :mod:`timem.store.migrations`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import duckdb


def db_time(dt: datetime) -> datetime:
    """UTC-aware -> naive UTC for a TIMESTAMP column."""
    return dt.astimezone(UTC).replace(tzinfo=None)


class RecordTables:
    """Cache, call log, traces and audit rows over ``self.con`` (a DuckDB connection)."""

    con: duckdb.DuckDBPyConnection

    def purge_cache_mentioning(self, texts: Sequence[str]) -> int:
        """Delete LLM-cache entries whose request or response contains any of ``texts`` (hard erase)."""
        n = 0
        probes: set[str] = set()
        for t in texts:
            for line in t.splitlines():  # requests are stored as JSON: probe line by line, raw and escaped
                if len(line.strip()) >= 12:
                    probes |= {line.strip()[:200], json.dumps(line.strip()[:200])[1:-1]}
        for key in probes:
            n += self.con.execute("SELECT count(*) FROM llm_cache WHERE contains(request, ?) OR contains(response, ?)",
                                  [key, key]).fetchone()[0]
            self.con.execute("DELETE FROM llm_cache WHERE contains(request, ?) OR contains(response, ?)", [key, key])
        return n

    # ---------------------------------------------------------------- LLM cache and call log
    def cache_get(self, key: str) -> tuple[str, int | None, int | None] | None:
        row = self.con.execute("SELECT response, prompt_tokens, completion_tokens FROM llm_cache WHERE key = ?",
                               [key]).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def cache_put(self, key: str, model_id: str, request: str, response: str,
                  prompt_tokens: int | None, completion_tokens: int | None) -> None:
        self.con.execute("INSERT OR REPLACE INTO llm_cache VALUES (?,?,?,?,?,?,?)",
                         [key, model_id, request, response, prompt_tokens, completion_tokens, db_time(datetime.now(UTC))])

    def log_llm_call(self, model_id: str, purpose: str, user_id: str | None, cached: bool,
                     prompt_tokens: int | None, completion_tokens: int | None, latency_ms: float,
                     cache_key: str | None) -> None:
        self.con.execute("INSERT INTO llm_calls VALUES (?,?,?,?,?,?,?,?,?)",
                         [db_time(datetime.now(UTC)), model_id, purpose, user_id, cached, prompt_tokens,
                          completion_tokens, latency_ms, cache_key])

    # ---------------------------------------------------------------- traces and audit
    def save_trace(self, trace_id: str, user_id: str, query: str, trace: dict[str, Any]) -> None:
        self.con.execute("INSERT OR REPLACE INTO recall_traces VALUES (?,?,?,?,?)",
                         [trace_id, user_id, query, db_time(datetime.now(UTC)), json.dumps(trace, default=str)])

    def traces(self, user_id: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Saved recall traces, newest first (each the dict given to :meth:`save_trace`)."""
        sql, args = "SELECT trace FROM recall_traces", []
        if user_id is not None:
            sql, args = sql + " WHERE user_id = ?", [user_id]
        rows = self.con.execute(sql + f" ORDER BY created_at DESC LIMIT {int(limit)}", args).fetchall()
        return [json.loads(r[0]) for r in rows]

    def audit(self, action: str, user_id: str | None, node_id: str | None, detail: dict[str, Any]) -> None:
        self.con.execute("INSERT INTO audit VALUES (?,?,?,?,?)",
                         [db_time(datetime.now(UTC)), action, user_id, node_id, json.dumps(detail, default=str)])
