"""The store's record tables: LLM response cache, LLM call log, audit log (recall traces: :mod:`timem.store.traces`).

A mixin of :class:`timem.store.duckdb_store.Store` (it needs ``self.con``). Timestamps are written
as naive UTC wall time (see :mod:`timem.store.migrations`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any

import duckdb

from timem.store.rows import one_row


def db_time(dt: datetime) -> datetime:
    """UTC-aware -> naive UTC for a TIMESTAMP column."""
    return dt.astimezone(UTC).replace(tzinfo=None)


#: the detail of an audit row that quoted erased text
REDACTED = json.dumps({"redacted": "hard erase"})


def _probes(texts: Sequence[str]) -> set[str]:
    """Substrings that identify ``texts`` inside stored JSON: each line of at least 12 characters (first
    200), raw and JSON-escaped (``json.dumps`` escapes non-ASCII characters and quotes)."""
    probes: set[str] = set()
    for t in texts:
        for line in t.splitlines():
            if len(line.strip()) >= 12:
                probes |= {line.strip()[:200], json.dumps(line.strip()[:200])[1:-1]}
    return probes


class RecordTables:
    """Cache, call log and audit rows (and the erase of traces) over ``self.con`` (a DuckDB connection)."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection:  # provided by Store: the calling thread's cursor
        raise NotImplementedError

    def forget_traces(self, needles: Sequence[str], user_id: str | None = None,
                      within: Collection[str] | None = None) -> int:  # provided by TraceTables
        raise NotImplementedError

    def purge_cache_mentioning(self, texts: Sequence[str]) -> int:
        """Delete LLM-cache entries whose request or response contains any of ``texts`` (hard erase)."""
        n = 0
        for key in _probes(texts):
            n += one_row(self.con.execute("SELECT count(*) FROM llm_cache WHERE contains(request, ?) "
                                          "OR contains(response, ?)", [key, key]))[0]
            self.con.execute("DELETE FROM llm_cache WHERE contains(request, ?) OR contains(response, ?)", [key, key])
        return n

    def forget_text(self, node_ids: Sequence[str], texts: Sequence[str], user_id: str | None = None, *,
                    within: Collection[str] | None = None) -> dict[str, int]:
        """Hard erase, outside the tree: delete the recall traces (of the users ``within``, the owners of what is
        erased; of every user if ``None``) that name any of ``node_ids`` or quote any of ``texts`` (or belong to
        ``user_id``), and redact the detail of audit rows that quote
        ``texts``, are about one of ``node_ids`` (pass the erased nodes' ancestors too: their
        ``grounding-drop`` rows carry model sentences about them) or belong to ``user_id``; the
        ``erase*`` rows themselves are kept.
        Returns ``{"recall_traces": deleted, "audit_redacted": redacted}``."""
        probes = sorted(_probes(texts))
        out = {"recall_traces": self.forget_traces([json.dumps(nid)[1:-1] for nid in node_ids] + probes, user_id,
                                                    within),
               "audit_redacted": 0}
        aconds = ["contains(detail, ?)"] * len(probes) + (["user_id = ?"] if user_id is not None else [])
        aargs: list[Any] = [*probes, *([user_id] if user_id is not None else [])]
        if node_ids:
            aconds.append("(node_id IN (SELECT unnest(?::VARCHAR[])) AND NOT starts_with(action, 'erase'))")
            aargs.append(list(node_ids))
        if aconds:
            where = f"({' OR '.join(aconds)}) AND detail <> ?"
            aargs.append(REDACTED)
            out["audit_redacted"] = one_row(self.con.execute(f"SELECT count(*) FROM audit WHERE {where}", aargs))[0]
            self.con.execute(f"UPDATE audit SET detail = ? WHERE {where}", [REDACTED, *aargs])
        return out

    def pseudonymise_audit(self, user_id: str, pseudonym: str) -> int:
        """Replace ``user_id`` with ``pseudonym`` in the audit log and drop the node or item id of its rows (a hash
        of the user id and the content: :func:`timem.memory.history.item_id`), as an erase of the user does last;
        returns the rows changed."""
        n: int = one_row(self.con.execute("SELECT count(*) FROM audit WHERE user_id = ?", [user_id]))[0]
        self.con.execute("UPDATE audit SET user_id = ?, node_id = NULL WHERE user_id = ?", [pseudonym, user_id])
        return n

    # ---------------------------------------------------------------- LLM cache and call log
    def cache_get(self, key: str) -> tuple[str, int | None, int | None] | None:
        row = self.con.execute("SELECT response, prompt_tokens, completion_tokens FROM llm_cache WHERE key = ?",
                               [key]).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def cache_put(self, key: str, model_id: str, request: str, response: str,
                  prompt_tokens: int | None, completion_tokens: int | None) -> None:
        self.con.execute("INSERT OR REPLACE INTO llm_cache VALUES (?,?,?,?,?,?,?)",
                         [key, model_id, request, response, prompt_tokens, completion_tokens,
                          db_time(datetime.now(UTC))])

    def log_llm_call(self, model_id: str, purpose: str, user_id: str | None, cached: bool,
                     prompt_tokens: int | None, completion_tokens: int | None, latency_ms: float,
                     cache_key: str | None) -> None:
        self.con.execute("INSERT INTO llm_calls VALUES (?,?,?,?,?,?,?,?,?)",
                         [db_time(datetime.now(UTC)), model_id, purpose, user_id, cached, prompt_tokens,
                          completion_tokens, latency_ms, cache_key])

    # ---------------------------------------------------------------- traces and audit
    def llm_usage(self, since: datetime) -> dict[str, dict[str, float]]:
        """LLM calls not answered from the cache since ``since`` (UTC-aware), per purpose: calls and seconds."""
        rows = self.con.execute("SELECT purpose, count(*), sum(latency_ms) FROM llm_calls WHERE called_at >= ? AND "
                                "NOT cached GROUP BY purpose ORDER BY purpose", [db_time(since)]).fetchall()
        return {p: {"calls": int(n), "seconds": round(float(ms or 0) / 1000, 1)} for p, n, ms in rows}

    def audit(self, action: str, user_id: str | None, node_id: str | None, detail: dict[str, Any]) -> None:
        self.con.execute("INSERT INTO audit VALUES (?,?,?,?,?)",
                         [db_time(datetime.now(UTC)), action, user_id, node_id, json.dumps(detail, default=str)])

    # ---------------------------------------------------------------- idempotent writes
    def write_request(self, user_id: str, key: str) -> tuple[str, list[str]] | None:
        """The write ``user_id`` sent with idempotency ``key`` earlier: ``(fingerprint, turn ids)``, or None."""
        row = self.con.execute("SELECT fingerprint, turn_ids FROM write_requests WHERE user_id = ? AND key = ?",
                               [user_id, key]).fetchone()
        return (row[0], list(row[1])) if row else None

    def record_write_request(self, user_id: str, key: str, fingerprint: str, turn_ids: Sequence[str]) -> None:
        """Remember the write sent with idempotency ``key`` (call it inside the transaction that stores the
        turns, so both survive a crash or neither does)."""
        self.con.execute("INSERT INTO write_requests VALUES (?,?,?,?,?)",
                         [user_id, key, fingerprint, list(turn_ids), db_time(datetime.now(UTC))])
