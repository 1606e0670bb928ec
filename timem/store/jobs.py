"""The durable consolidation queue (table ``consolidation_jobs``, migration 11): one row per chat write.

A chat write (:meth:`timem.engine.MemoryEngine.add_exchange`, the service's ``POST .../turns``, MCP ``remember``)
inserts its job in the same transaction as its turns, so a write is acknowledged only with its job stored, and a
job exists only for stored turns. A worker (:mod:`timem.engine_queue`) drains the queue.

States: ``pending`` -> ``running`` (claimed, ``attempts`` + 1) -> ``done`` or ``failed`` (with ``error``).
``l1_done`` says the job's L1 segments are written (read-your-writes needs no more). One process owns a DuckDB
file, so every ``running`` job found when the file is opened was claimed by a process that died (kill -9):
:meth:`JobTables.release_stale_jobs` puts it back to ``pending``. Consolidation derives every decision from the
store and writes deterministic node ids, so running a job again never duplicates a node.

Times are naive UTC ``TIMESTAMP`` values (see :mod:`timem.store.migrations`), UTC-aware at this boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb

from timem.store.rows import one_row, utc

#: every state a job can be in, in the order a job goes through them
JOB_STATES = ("pending", "running", "done", "failed")
#: longest error text kept per failed job (characters)
MAX_ERROR_CHARS = 2000


@dataclass(frozen=True)
class ConsolidationJob:
    """One queued consolidation: the user, the sessions and turns its write stored, its state."""

    id: int
    user_id: str
    session_ids: list[str]
    turn_ids: list[str]
    state: str
    l1_done: bool
    attempts: int
    enqueued_at: datetime  #: UTC-aware
    error: str | None


_COLS = "id, user_id, session_ids, turn_ids, state, l1_done, attempts, enqueued_at, error"


def _job(row: tuple[Any, ...]) -> ConsolidationJob:
    return ConsolidationJob(id=row[0], user_id=row[1], session_ids=list(row[2]), turn_ids=list(row[3]), state=row[4],
                            l1_done=row[5], attempts=row[6], enqueued_at=utc(row[7]), error=row[8])


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class JobTables:
    """The consolidation queue over ``self.con`` (a mixin of :class:`timem.store.Store`)."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection:  # provided by Store: the calling thread's cursor
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[None]:  # provided by Store
        raise NotImplementedError

    def enqueue_job(self, user_id: str, session_ids: Sequence[str], turn_ids: Sequence[str]) -> int:
        """Queue a consolidation of ``user_id`` (call it in the transaction that stores the turns); returns its id."""
        return int(one_row(self.con.execute(
            "INSERT INTO consolidation_jobs (id, user_id, session_ids, turn_ids, state, l1_done, attempts, "
            "enqueued_at) SELECT coalesce(max(id), 0) + 1, ?, ?, ?, 'pending', FALSE, 0, ? FROM consolidation_jobs "
            "RETURNING id",
            [user_id, list(dict.fromkeys(session_ids)), list(turn_ids), _now()]))[0])

    def claim_jobs(self, user_id: str | None = None, *, prefer: Sequence[str] = ()) -> list[ConsolidationJob]:
        """Claim every pending job of ``user_id``, or (``None``) of one user (one user at a time): of the users in
        ``prefer`` with a pending job, the one whose pending job is oldest; if none, the user whose pending job is
        oldest. They become ``running`` with ``attempts`` + 1. Returns them oldest first, or ``[]`` when nothing
        is pending."""
        with self.transaction():
            if user_id is None:
                row = self.con.execute(
                    "SELECT user_id FROM consolidation_jobs WHERE state = 'pending' "
                    "ORDER BY user_id IN (SELECT unnest(?::VARCHAR[])) DESC, id LIMIT 1", [list(prefer)]).fetchone()
                if row is None:
                    return []
                user_id = row[0]
            rows = self.con.execute(
                "UPDATE consolidation_jobs SET state = 'running', attempts = attempts + 1, claimed_at = ?, "
                f"error = NULL WHERE user_id = ? AND state = 'pending' RETURNING {_COLS}", [_now(), user_id]).fetchall()
        return sorted((_job(r) for r in rows), key=lambda j: j.id)

    def unwritten_l1_jobs(self, user_id: str) -> list[ConsolidationJob]:
        """The user's pending or running jobs whose L1 segments are not written yet, oldest first."""
        return [_job(r) for r in self.con.execute(
            f"SELECT {_COLS} FROM consolidation_jobs WHERE user_id = ? AND state IN ('pending', 'running') "
            "AND NOT l1_done ORDER BY id", [user_id]).fetchall()]

    def mark_jobs_l1(self, job_ids: Sequence[int]) -> None:
        """The jobs' L1 segments are written (recallable)."""
        self.con.execute("UPDATE consolidation_jobs SET l1_done = TRUE WHERE id IN (SELECT unnest(?::BIGINT[]))",
                         [list(job_ids)])

    def finish_jobs(self, job_ids: Sequence[int]) -> None:
        """The jobs are consolidated: state ``done``."""
        self.con.execute("UPDATE consolidation_jobs SET state = 'done', l1_done = TRUE, error = NULL, finished_at = ? "
                         "WHERE id IN (SELECT unnest(?::BIGINT[]))", [_now(), list(job_ids)])

    def resolve_failed_jobs(self, user_id: str) -> int:
        """The user's failed jobs become ``done`` (their error kept): call it after a consolidation of the user
        that succeeded, which wrote everything they were queued for (consolidation is per user, every due
        window). Returns how many."""
        rows = self.con.execute("UPDATE consolidation_jobs SET state = 'done', finished_at = ? "
                                "WHERE user_id = ? AND state = 'failed' RETURNING id", [_now(), user_id]).fetchall()
        return len(rows)

    def fail_jobs(self, job_ids: Sequence[int], error: str) -> None:
        """The jobs stopped with ``error`` (kept, cut to :data:`MAX_ERROR_CHARS`): state ``failed`` until
        :meth:`retry_jobs`."""
        self.con.execute("UPDATE consolidation_jobs SET state = 'failed', error = ?, finished_at = ? "
                         "WHERE id IN (SELECT unnest(?::BIGINT[]))", [error[:MAX_ERROR_CHARS], _now(), list(job_ids)])

    def retry_jobs(self, user_prefix: str = "") -> int:
        """Put the failed jobs of users whose id starts with ``user_prefix`` (every user with ``""``) back to
        ``pending``; returns how many."""
        rows = self.con.execute("UPDATE consolidation_jobs SET state = 'pending' WHERE state = 'failed' "
                                "AND starts_with(user_id, ?) RETURNING id", [user_prefix]).fetchall()
        return len(rows)

    def release_stale_jobs(self) -> int:
        """Every ``running`` job back to ``pending`` (its process died while it ran: only one process opens the
        file); returns how many. The store calls it when it opens the file."""
        return len(self.con.execute("UPDATE consolidation_jobs SET state = 'pending' WHERE state = 'running' "
                                    "RETURNING id").fetchall())

    def open_jobs(self, user_id: str, up_to: int | None = None) -> int:
        """How many jobs of ``user_id`` are pending or running (only those with an id ≤ ``up_to``, if given)."""
        return int(one_row(self.con.execute(
            "SELECT count(*) FROM consolidation_jobs WHERE user_id = ? AND state IN ('pending', 'running') "
            "AND id <= coalesce(?, id)", [user_id, up_to]))[0])

    def last_open_job(self, user_id: str) -> int | None:
        """The id of the newest pending or running job of ``user_id``, ``None`` when it has none."""
        last = one_row(self.con.execute("SELECT max(id) FROM consolidation_jobs WHERE user_id = ? AND state IN "
                                        "('pending', 'running')", [user_id]))[0]
        return None if last is None else int(last)

    def queue_counts(self, user_prefix: str = "") -> dict[str, int]:
        """Jobs per state (every state of :data:`JOB_STATES`, 0 when none) of users whose id starts with
        ``user_prefix``."""
        counts = dict(self.con.execute("SELECT state, count(*) FROM consolidation_jobs WHERE starts_with(user_id, ?) "
                                       "GROUP BY state", [user_prefix]).fetchall())
        return {s: int(counts.get(s, 0)) for s in JOB_STATES}

    def jobs(self, user_prefix: str = "", states: Sequence[str] = JOB_STATES, limit: int = 100
             ) -> list[ConsolidationJob]:
        """The newest ``limit`` jobs in ``states`` of users whose id starts with ``user_prefix``, newest first."""
        return [_job(r) for r in self.con.execute(
            f"SELECT {_COLS} FROM consolidation_jobs WHERE starts_with(user_id, ?) AND state IN "
            "(SELECT unnest(?::VARCHAR[])) ORDER BY id DESC LIMIT ?", [user_prefix, list(states), limit]).fetchall()]
