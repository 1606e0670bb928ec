"""Background consolidation for the studio: long L2–L5 work runs in a thread while every page stays usable.

Consolidating with the embedded model takes about a minute per session, so an import of the bundled
demo with abstractive consolidation takes minutes. :func:`start_consolidation` runs
:meth:`MemoryEngine.consolidate` in a worker thread; the sidebar of every page shows its progress
(:func:`render_status`, a fragment that refreshes itself) with a *Cancel* button, and pages keep
reading what is already written.

Sharing one DuckDB connection (see :mod:`timem.ui.state`): the worker holds the engine's lock while it
touches the store, but lets go of it **between windows** and **during each model call** (the model
call does not touch the store), so a page run waits at most for one window's database writes.
While a job runs, pages must not write (:func:`busy`: chat input, imports, consolidation, edits are
disabled), because a write could consolidate the same windows twice.

Cancelling stops before the next window: windows not yet written stay due, and the next
consolidation (or the next chat turn) writes them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from timem.consolidation.consolidator import NEEDS_LLM
from timem.engine import MemoryEngine
from timem.errors import ConsolidationCancelled, ConsolidationIncomplete, TimemError

T = TypeVar("T")

_JOBS: dict[int, Job] = {}  #: id(engine) -> its current or last job (one at a time per engine)
_JOBS_LOCK = threading.Lock()


@dataclass
class Job:
    """One background consolidation: what it does, how far it is, how it ended.

    Progress fields are written by the worker thread and read by page runs (plain attribute reads).
    """

    title: str
    user_ids: list[str]
    stage: str = "starting"
    done_items: int = 0
    total: int = 0
    written: list[str] = field(default_factory=list)  #: level labels of the memories written so far
    warning: str | None = None  #: some windows could not be consolidated (they stay due)
    error: str | None = None  #: the job stopped with this error
    cancelled: bool = False
    finished: bool = False
    reported: bool = False  #: the end was shown to the user once
    started_at: float = field(default_factory=time.monotonic)
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def cancel(self) -> None:
        """Ask the worker to stop before its next window (windows not written stay due)."""
        self._cancel.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the worker (tests, shutdown); ``True`` if it has finished."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.finished

    def summary(self) -> str:
        """One line: what was written and how the job ended."""
        counts: dict[str, int] = {}
        for label in self.written:
            counts[label] = counts.get(label, 0) + 1
        wrote = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "no new memories"
        end = ("cancelled; the windows not yet written stay due" if self.cancelled
               else f"stopped: {self.error}" if self.error else "finished")
        return f"{self.title}: {end} ({wrote})."


def slow_consolidation(engine: object) -> bool:
    """Whether L2-L5 consolidation or memory-item extraction calls the LLM (minutes with the embedded model), so
    it runs as a background job; the extractive mode with rule extraction takes seconds and runs at once."""
    if not isinstance(engine, MemoryEngine):  # a memory service consolidates in its own process, per request
        return False
    cfg = engine.config
    return engine.has_llm and (engine.items_use_llm
                               or any(cfg.consolidation.mode_for(level) in NEEDS_LLM for level in (2, 3, 4, 5)))


def chat_consolidates_later(engine: object) -> bool:
    """Whether a chat turn shows its answer first and writes its memories in a background job: when
    :func:`slow_consolidation` and the LLM is the embedded model (a window closed by the turn costs it a
    minute or more); with an endpoint the turn consolidates at once (seconds) and reports the outcome inline."""
    return isinstance(engine, MemoryEngine) and slow_consolidation(engine) and engine.local_model_path is not None


def current_job(engine: object | None) -> Job | None:
    """The engine's running job, or its last one until its end was reported; ``None`` otherwise."""
    if engine is None:
        return None
    with _JOBS_LOCK:
        return _JOBS.get(id(engine))


def busy(engine: object | None) -> Job | None:
    """The engine's running job (pages disable their writes while there is one), else ``None``."""
    job = current_job(engine)
    return job if job is not None and not job.finished else None


def start_consolidation(engine: MemoryEngine, lock: threading.RLock, user_ids: Sequence[str], *,
                        flush: bool, title: str) -> Job:
    """Start consolidating ``user_ids`` (L1..L5, as :meth:`MemoryEngine.consolidate`) in a worker thread.

    Raises:
        TimemError: a job of this engine is still running (wait for it or cancel it first).
    """
    with _JOBS_LOCK:
        running = _JOBS.get(id(engine))
        if running is not None and not running.finished:
            raise TimemError(f"'{running.title}' is still running; wait for it or cancel it in the sidebar.")
        job = Job(title=title, user_ids=list(user_ids))
        _JOBS[id(engine)] = job
    job._thread = threading.Thread(target=_work, args=(job, engine, lock, flush), name=f"timem-job-{title}",
                                   daemon=True)
    job._thread.start()
    return job


def forget_job(engine: MemoryEngine) -> None:
    """Drop a finished job once its end has been shown."""
    with _JOBS_LOCK:
        job = _JOBS.get(id(engine))
        if job is not None and job.finished:
            del _JOBS[id(engine)]


def _work(job: Job, engine: MemoryEngine, lock: threading.RLock, flush: bool) -> None:
    """The worker thread: consolidate each user, record progress and the outcome on ``job``."""
    with lock, _unlocked_model_calls(engine, lock):
        try:
            for uid in job.user_ids:
                nodes = _consolidate(engine, uid, flush, job, lock)
                job.written += [n.level.label for n in nodes]
        except ConsolidationCancelled:
            job.cancelled = True
        except TimemError as exc:
            job.error = str(exc)
        except Exception as exc:
            job.error = f"{type(exc).__name__}: {exc} (a bug; the traceback is in the server log)"
            raise
        finally:
            job.finished = True


def _consolidate(engine: MemoryEngine, user_id: str, flush: bool, job: Job, lock: threading.RLock) -> list[Any]:
    try:
        return engine.consolidate(user_id, flush=flush, progress=_progress(job, user_id, lock))
    except ConsolidationIncomplete as exc:  # the other windows are written; the failed ones stay due
        job.warning = str(exc)
        return list(exc.written)


def _progress(job: Job, user_id: str, lock: threading.RLock):
    """A :class:`timem.progress.Progress` that records the stage, checks for a cancel
    before every item, and gives the engine lock to waiting page runs between items."""

    def progress(items: Iterable[T], desc: str, total: int) -> Iterator[T]:
        job.stage, job.total, job.done_items = f"{user_id} · {desc}", total, 0
        for item in items:
            if job._cancel.is_set():
                raise ConsolidationCancelled(f"'{job.title}' was cancelled; the windows not written stay due.")
            yield item
            job.done_items += 1
            lock.release()  # a moment for a waiting page run
            time.sleep(0.05)
            lock.acquire()

    return progress


class _UnlockedBackend:
    """Wraps the LLM's chat backend so that the engine lock is free while the model computes."""

    def __init__(self, inner: Any, lock: threading.RLock) -> None:
        self.inner, self.lock = inner, lock

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def chat(self, request: Any) -> Any:
        self.lock.release()
        try:
            return self.inner.chat(request)
        finally:
            self.lock.acquire()


def _unlocked_model_calls(engine: MemoryEngine, lock: threading.RLock) -> AbstractContextManager[None]:
    return engine.llm_backend_wrapped(lambda backend: _UnlockedBackend(backend, lock))
