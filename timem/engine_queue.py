"""The engine facade's consolidation queue: chat writes acknowledged in milliseconds, consolidated by a worker.

A chat write stores its turns and a job (:mod:`timem.store.jobs`) in one transaction. Then:

* with a :class:`QueueWorker` attached (``engine.queue.worker``, started by the memory service and the MCP server
  when ``Config.consolidation.online_queue`` is on), the write returns at once; the worker drains the queue one
  user at a time: the jobs' L1 segments (embedded, indexed), then memory items, L2-L5 windows and the segment tree
  (:meth:`ConsolidationQueue.run_jobs`);
* without one (the studio, the CLI, the Python API, or ``online_queue = false``), the write runs its job itself
  before it returns, as writes did before the queue.

**Read-your-writes**: a recall (or answer) of a user with jobs whose L1 segments are not written yet first writes
those segments itself (:meth:`ConsolidationQueue.read_your_writes`: only the jobs' sessions, one embedder call), so
the write's L1 segment is a candidate like any other; it waits for no worker. When the memory items are read by the
rules, it also reads the items of the user's segments not yet read (:meth:`ConsolidationQueue.read_items`: about 20
small queries and an embedding per new item, per exchange), so that "I moved to Galway" is the home city a recall
right after it gives, not a "Dublin – now" the worker would update later. L2-L5 and the segment tree of those jobs
(and items read by an LLM) follow from the worker: until it syncs the tree, recalls propagate over the stored one,
and the new segments take part as leaves only (:func:`timem.recall.segtree.ensure`, noted in the trace). The cost is
bounded by the unconsolidated turns (about one embedding per exchange, and per new item); a recall with nothing
queued does one small query on the jobs table.

One writer: the worker takes the same lock as the caller's writes (the service's), once per step, and lets go of it
between steps. Reads do not take it (the memory service's recalls run on their own cursors, issue 26 §4); the L1
step and read-your-writes each run in one store transaction, which holds the store's writer lock
(``Store.writer``), so a recall's read-your-writes and the worker's L1 step never interleave. Both embed their
segments before that transaction (:meth:`Consolidator.embed_l1`, reads only) and write them inside it; a segment
whose text changed meanwhile is embedded again inside (never a stale vector).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from timem.consolidation.consolidator import Consolidator
from timem.engine_reads import EngineCore, EnginePart
from timem.engine_writes import MemoryWrites
from timem.errors import ConfigError, ConsolidationIncomplete, StoreError
from timem.models import MemoryNode
from timem.store.jobs import ConsolidationJob

log = logging.getLogger("timem.queue")

#: the most unread L1 segments a recall reads memory items of itself (rules only;
#: :meth:`ConsolidationQueue.read_items`): a chat's queued writes are a few; a larger backlog is the worker's
READ_AT_RECALL_MAX = 64


class ConsolidationQueue(EnginePart):
    """The consolidation queue of one engine (:class:`timem.engine.MemoryEngine` owns one): jobs of chat writes,
    run by a :class:`QueueWorker` or in the write; a job is consolidated by :meth:`MemoryWrites.consolidate_online`."""

    def __init__(self, core: EngineCore, consolidator: Consolidator, writes: MemoryWrites) -> None:
        super().__init__(core)
        self.consolidator, self.writes = consolidator, writes
        #: the worker draining this engine's queue, if one runs (:meth:`start_queue_worker`)
        self.worker: QueueWorker | None = None

    @property
    def queues_writes(self) -> bool:
        """Whether chat writes return before they are consolidated (a worker runs and ``online_queue`` is on)."""
        return self.worker is not None and self.worker.alive and self.config.consolidation.online_queue

    def start_queue_worker(self, lock: AbstractContextManager[Any] | None = None, *,
                           poll_seconds: float = 1.0,
                           user_lock: Callable[[str], AbstractContextManager[Any]] | None = None) -> QueueWorker:
        """Start a worker thread draining this engine's queue (stale jobs of a dead process are pending again
        since the store was opened). ``lock`` is held around each of its store steps: the lock every other
        caller of this engine holds (the service's). Returns the worker; stop it with :meth:`QueueWorker.stop`
        before the engine closes. While it runs, every use of this engine must hold ``lock`` (one DuckDB
        connection, one thread at a time).

        ``user_lock``: instead, the lock of one user (:class:`timem.service.context.UserLocks`): each step on a
        user's jobs holds that user's lock only, and claiming jobs (one store transaction) holds none, so that
        writes of other users go on while the worker consolidates; ``lock`` must then be the lock that excludes
        every user's (what callers that are not about one user hold).

        Raises:
            ConfigError: ``Config.consolidation.online_queue`` is off (writes consolidate themselves).
        """
        if not self.config.consolidation.online_queue:
            raise ConfigError("online_queue is off: chat writes consolidate in the write, no queue worker is "
                              "needed; set online_queue = true to acknowledge writes before consolidation")
        if self.worker is not None and self.worker.alive:
            return self.worker
        self.worker = QueueWorker(self, lock, poll_seconds=poll_seconds, user_lock=user_lock)
        self.worker.start()
        return self.worker

    def enqueue(self, user_id: str, session_ids: Sequence[str], turn_ids: Sequence[str]) -> int:
        """Queue a consolidation of ``user_id`` (inside the write's transaction)."""
        return self.store.enqueue_job(user_id, session_ids, turn_ids)

    def after_enqueue(self, user_id: str) -> list[MemoryNode]:
        """After a write's transaction with its job: wake the worker and return ``[]``, or, without a worker,
        consolidate the user's queued jobs now (see :meth:`drain_queue`, whose errors it raises)."""
        if self.queues_writes:
            assert self.worker is not None
            self.worker.wake()
            return []
        return self.drain_queue(user_id)

    def queue_consolidation(self, user_id: str, session_ids: Sequence[str] = ()) -> list[MemoryNode]:
        """Queue a consolidation of ``user_id`` in its own transaction (then as a chat write: the worker runs it,
        or it runs now and its nodes are returned)."""
        with self.store.transaction():
            self.enqueue(user_id, session_ids, [])
        return self.after_enqueue(user_id)

    def drain_queue(self, user_id: str | None = None, *, raise_errors: bool = True) -> list[MemoryNode]:
        """Run the pending jobs of ``user_id`` (every user with ``None``) in this thread; returns the nodes written.

        Raises:
            ConsolidationIncomplete, or whatever a job raised: with ``raise_errors``, after the first user whose
            jobs failed (they are ``failed`` with the error, retried by :meth:`retry_failed_jobs`); without, every
            user is tried and failures stay recorded in the queue only.
        """
        nodes: list[MemoryNode] = []
        while True:
            jobs = self.store.claim_jobs(user_id)
            if not jobs:
                return nodes
            try:
                nodes += self.run_jobs(jobs)
            except Exception:
                if raise_errors:
                    raise
            if user_id is not None:  # its jobs are claimed at once; new ones are for the next write
                return nodes

    def run_jobs(self, jobs: Sequence[ConsolidationJob], lock: AbstractContextManager[Any] | None = None
                 ) -> list[MemoryNode]:
        """Consolidate claimed jobs of one user: their L1 segments (marked ``l1_done``), then what closed (memory
        items, L2-L5, segment tree: :meth:`MemoryWrites.consolidate_online`), then mark them ``done``, and the
        user's older failed jobs too (a consolidation of the user writes every due window). ``lock`` is
        taken around each step. A retry after a crash rewrites nothing (every node id is deterministic and every
        decision is read from the store).

        Raises:
            ConsolidationIncomplete: some window could not be consolidated (``.written`` holds the L1 segments
                too); the jobs are ``failed`` with its message. Any other error: the jobs are ``failed`` with it,
                the error propagates.
        """
        guard = lock if lock is not None else nullcontext()
        ids = [j.id for j in jobs]
        user_id = jobs[0].user_id
        if any(j.user_id != user_id for j in jobs):
            raise StoreError("run_jobs() takes the jobs of one user; claim them with Store.claim_jobs")
        nodes: list[MemoryNode] = []
        try:
            sessions = [s for j in jobs for s in j.session_ids]
            vectors = self.consolidator.embed_l1(user_id, sessions)  # before the lock and the transaction
            with guard, self.store.transaction():  # one transaction: a recall's read-your-writes waits for it
                if not self._still_queued(user_id, ids):
                    return nodes
                nodes += self.consolidator.write_l1(user_id, sessions, vectors)
                self.store.mark_jobs_l1(ids)
            with guard:  # what closed, with the memory items read between L1 and L2-L5 (one hold: no window twice)
                if not self._still_queued(user_id, ids):
                    return nodes
                nodes += self.writes.consolidate_online(user_id, sync_tree=False)
            with guard:  # the segment tree (a recall in between syncs it itself)
                if not self._still_queued(user_id, ids):
                    return nodes
                self.writes.sync_segtree([user_id])
                self.store.finish_jobs(ids)
                self.store.resolve_failed_jobs(user_id)  # this consolidation wrote what they were queued for
        except ConsolidationIncomplete as exc:
            exc.written[:0] = nodes
            self._fail(user_id, ids, exc, guard)
            raise
        except Exception as exc:
            self._fail(user_id, ids, exc, guard)
            raise
        return nodes

    def _still_queued(self, user_id: str, ids: Sequence[int]) -> bool:
        """Whether the claimed jobs are still there (between two steps the user may have been erased: its jobs
        went with it, and nothing of it may be written again)."""
        if self.store.open_jobs(user_id) >= len(ids):
            return True
        log.info("consolidation jobs %s are gone (user erased); not run", list(ids))
        return False

    def _fail(self, user_id: str, ids: list[int], exc: Exception, guard: AbstractContextManager[Any]) -> None:
        msg = f"{type(exc).__name__}: {exc}"
        with guard:
            if not self._still_queued(user_id, ids):  # erased meanwhile: no row may name the user again
                return
            self.store.fail_jobs(ids, msg)
            self.store.audit("consolidation-job-failed", user_id, None, {"jobs": ids, "error": msg[:2000]})
        log.error("consolidation jobs %s of user %s failed: %s", ids, user_id, msg)

    def read_your_writes(self, user_id: str) -> list[MemoryNode]:
        """Write the L1 segments of ``user_id``'s queued jobs that have none yet (so that a recall sees every
        acknowledged write), then, when the memory items are read by the rules, read those of the user's segments
        not yet read (:meth:`read_items`); returns the segments written. Called by :meth:`MemoryEngine.recall` and
        :meth:`MemoryEngine.ask`. With no job of the user pending or running: one small query, nothing written."""
        if not self.store.open_jobs(user_id):  # the common case: a read, no writer lock
            return []
        queued = self.store.unwritten_l1_jobs(user_id)
        if not queued and not self._items_due(user_id):  # all written and read: no writer to wait for
            return []
        nodes: list[MemoryNode] = []
        vectors = self.consolidator.embed_l1(user_id, [s for j in queued for s in j.session_ids]) if queued else {}
        # one transaction, so one commit (each syncs the write-ahead log: ~2-6 ms), for the L1 segments and their
        # memory items; under the store's writer, so the worker's L1 step is before or after. The rules' lock first:
        # every reader of segments takes it before the writer (ItemWriter.reading)
        with self.writes.items.item_writer.reading(), self.store.transaction():
            jobs = self.store.unwritten_l1_jobs(user_id) if queued else []
            if jobs:
                nodes = self.consolidator.write_l1(user_id, [s for j in jobs for s in j.session_ids], vectors)
                self.store.mark_jobs_l1([j.id for j in jobs])
            self.read_items(user_id)
        return nodes

    def _items_due(self, user_id: str) -> bool:
        """Whether :meth:`read_items` would read a segment of ``user_id`` now: the rules read items, and 1 to
        :data:`READ_AT_RECALL_MAX` segments are unread (more are left to the worker)."""
        if not self.writes.items.items_use_rules:
            return False
        return 0 < len(self.store.unread_segments(user_id, "rules", READ_AT_RECALL_MAX + 1)) <= READ_AT_RECALL_MAX

    def read_items(self, user_id: str) -> None:
        """Read the memory items of ``user_id``'s L1 segments not read yet, when the rules read them (no LLM), so that
        a recall right after "I moved to Galway" does not give "home city: Dublin – now" from an item the worker has
        not updated yet. Work moved, not added: the worker finds those segments read. Cost per queued exchange: about
        20 small DuckDB statements and one embedding per new item, independent of the user's history (measured
        25-60 ms on a loaded 2-core machine, where a recall took 25-35 ms). The LLM reader waits for the worker (a
        call per closed session is too slow for a read). The writer's lock keeps the worker's reading of the same
        segments before or after this one (:meth:`timem.memory.writer.ItemWriter.extract`). At most
        :data:`READ_AT_RECALL_MAX` unread segments: more (a file whose items were never read, or a long backlog) are
        left to the worker, whose item step reads them in order; reading 10k of them took the recall 27 s."""
        if self.writes.items.items_use_rules:
            self.writes.items.item_writer.extract(user_id, at_most=READ_AT_RECALL_MAX)

    def settle(self, user_id: str, timeout: float | None = None) -> bool:
        """Wait until the jobs ``user_id`` had queued when the call began are consolidated, at most ``timeout``
        seconds (``Config.consolidation.queue_read_wait_seconds`` by default); ``True`` if so. Jobs queued during
        the wait are not waited for, and the worker takes a waited-for user before the others
        (:meth:`QueueWorker.wait_idle`). Without a worker nothing is queued for long: returns at once. Call it
        **without** holding the worker's lock (the worker needs it)."""
        worker = self.worker
        if worker is None or not worker.alive:
            return True
        wait = self.config.consolidation.queue_read_wait_seconds if timeout is None else timeout
        return worker.wait_idle(wait, user_id=user_id)

    def queue_status(self, user_prefix: str = "", *, failed_limit: int = 20) -> dict[str, Any]:
        """The queue of users whose id starts with ``user_prefix``: jobs per state (``pending``, ``running``,
        ``done``, ``failed``) and the newest ``failed_limit`` failed jobs (``id``, ``user_id``, ``attempts``,
        ``error``, ``enqueued_at`` as ISO 8601 UTC), and whether a worker runs."""
        failed = self.store.jobs(user_prefix, ("failed",), failed_limit)
        return {**self.store.queue_counts(user_prefix), "worker": self.queues_writes,
                "failed_jobs": [{"id": j.id, "user_id": j.user_id, "attempts": j.attempts, "error": j.error,
                                 "enqueued_at": j.enqueued_at.isoformat()} for j in failed]}

    def retry_failed_jobs(self, user_prefix: str = "") -> int:
        """Failed jobs of users whose id starts with ``user_prefix`` back to pending (the worker, or the next
        :meth:`drain_queue`, runs them); returns how many."""
        n = self.store.retry_jobs(user_prefix)
        if n and self.worker is not None:
            self.worker.wake()
        return n


#: the longest :meth:`QueueWorker.wait_idle` waits between two reads of the queue when no batch ends, in seconds
IDLE_RECHECK_SECONDS = 0.5


class QueueWorker:
    """A daemon thread that drains an engine's consolidation queue (see the module doc).

    Errors of a job are recorded on the job (``failed``, with the message), in the audit log and in the
    ``timem.queue`` logger, and kept as :attr:`last_error`; the worker goes on with the next user.
    """

    def __init__(self, queue: ConsolidationQueue, lock: AbstractContextManager[Any] | None = None, *,
                 poll_seconds: float = 1.0,
                 user_lock: Callable[[str], AbstractContextManager[Any]] | None = None) -> None:
        self.queue = queue
        self.lock: AbstractContextManager[Any] = lock if lock is not None else threading.Lock()
        #: the lock of one user's steps, if the caller locks per user (:meth:`ConsolidationQueue.start_queue_worker`)
        self.user_lock = user_lock
        self.poll_seconds = poll_seconds
        self.last_error: str | None = None
        self.jobs_done = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        #: bumped (and waiters woken) each time the worker ends a batch of jobs: :meth:`wait_idle` waits on it
        self._batches = 0
        self._ended = threading.Condition()
        #: users a :meth:`wait_idle` is waiting for (how many waits each; under ``_ended``): claimed first
        self._wanted: Counter[str] = Counter()
        self._thread = threading.Thread(target=self._run, name="timem-queue", daemon=True)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self._stop.is_set()

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """A job was queued: look now rather than at the next poll."""
        self._wake.set()

    def stop(self, timeout: float = 60.0) -> None:
        """Stop after the current step (a job cut short stays ``running`` and is retried when the file is next
        opened) and wait up to ``timeout`` seconds."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def wait_idle(self, timeout: float = 60.0, *, user_id: str | None = None) -> bool:
        """Wait until nothing is pending or running (of any user), or, with ``user_id``, until the jobs that user
        had queued when the call began are done or failed (later ones are not waited for: under a steady stream
        of writes a user's queue is rarely empty). ``True`` if so within ``timeout`` seconds.

        While a wait for ``user_id`` lasts, the worker claims that user's jobs before any other user's (oldest
        pending job first among the waited-for users), so a read waits for about one batch in progress plus its
        own user's, not for the whole queue (bench/results/service-load.md). Reads the queue on the calling
        thread's own cursor (without the worker's lock: writers are not held up by the waiting readers), then
        again each time the worker ends a batch of jobs, and at least every :data:`IDLE_RECHECK_SECONDS` (a job
        another process ended)."""
        deadline = time.monotonic() + timeout
        if user_id is None:
            return self._wait(deadline, lambda: sum(self._counts(("pending", "running"))))
        with self.queue.store.reading():
            last = self.queue.store.last_open_job(user_id)
        if last is None:
            return True
        with self._ended:
            self._wanted[user_id] += 1
        self.wake()
        try:
            return self._wait(deadline, lambda: self._open(user_id, last))
        finally:
            with self._ended:
                self._wanted[user_id] -= 1
                if self._wanted[user_id] <= 0:
                    del self._wanted[user_id]

    def _counts(self, states: Sequence[str]) -> list[int]:
        with self.queue.store.reading():
            counts = self.queue.store.queue_counts()
        return [counts[s] for s in states]

    def _open(self, user_id: str, up_to: int) -> int:
        with self.queue.store.reading():
            return self.queue.store.open_jobs(user_id, up_to)

    def _wait(self, deadline: float, busy: Callable[[], int]) -> bool:
        while True:
            with self._ended:
                seen = self._batches
            if not busy():
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            with self._ended:
                if self._batches == seen:  # no batch ended since the count was read: wait for one
                    self._ended.wait(min(left, IDLE_RECHECK_SECONDS))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with self.lock if self.user_lock is None else nullcontext():  # a claim is one transaction
                    if self._stop.is_set():  # stopped while it waited for the lock: claim nothing more
                        break
                    with self._ended:
                        wanted = list(self._wanted)
                    jobs = self.queue.store.claim_jobs(prefer=wanted)
            except Exception as exc:  # noqa: BLE001 -- the store itself failed: logged, tried again at the next poll
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.error("the consolidation queue could not be read: %s", self.last_error)
                jobs = []
            if not jobs:
                self._wake.wait(self.poll_seconds)
                self._wake.clear()
                continue
            try:
                self.queue.run_jobs(jobs, self.lock if self.user_lock is None else self.user_lock(jobs[0].user_id))
                self.jobs_done += len(jobs)
            except Exception as exc:  # noqa: BLE001 -- recorded on the jobs and in the audit log by run_jobs
                self.last_error = f"{type(exc).__name__}: {exc}"
            finally:
                with self._ended:
                    self._batches += 1
                    self._ended.notify_all()
