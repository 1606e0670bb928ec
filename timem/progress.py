"""Progress around long work: the :class:`Progress` protocol that consolidation, ingest and memory-item extraction
take, :func:`no_progress` (none shown), :func:`terminal_progress` (tqdm on a terminal, plain lines otherwise,
for the CLI and bench) and :func:`labelled` (a stage named with its user).

A stage's description says what it counts, and its count is of that: ``"L2 session: 11/19"`` is 11 of 19 session
windows, ``"L1 segments, by session: 11/19"`` 11 of 19 sessions whose segments are written (a trial read "L1
segments 19/19" while 419 segments were written). No unit is added: "items" was read as memory items."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import Protocol, TypeVar

from tqdm import tqdm

T = TypeVar("T")

#: seconds between two plain progress lines when stderr is no terminal (piped, redirected to a log file)
PLAIN_EVERY_S = 30.0


class Progress(Protocol):
    """A progress display around one stage of long work, called as ``progress(items, desc, total)``; it yields
    ``items`` unchanged (e.g. ``tqdm``, the studio's progress bar)."""

    def __call__(self, items: Iterable[T], desc: str, total: int, /) -> Iterable[T]: ...


def no_progress(items: Iterable[T], desc: str, total: int) -> Iterable[T]:
    """A :class:`Progress` that shows nothing: ``items`` as they are."""
    return items


def terminal_progress(items: Iterable[T], desc: str, total: int) -> Iterable[T]:
    """``items`` under a progress display on stderr, e.g. ``desc="conv-26 · L2 session"``, ``total`` of them.

    On a terminal a tqdm bar, redrawn in place and cleared when done. When stderr is no terminal (piped, a log
    file), carriage-return redraws would run into one long line: tqdm's own ``disable=None`` (off when the stream
    is no TTY) turns the bar off, and plain lines are written instead, ``"L2 session: 40/120"`` at most every
    :data:`PLAIN_EVERY_S` seconds and ``"L2 session: 120/120, done"`` at the end (none for an empty stage).
    """
    bar = tqdm(items, desc=desc, total=total, unit="", leave=False, file=sys.stderr, disable=None)
    shown: Iterable[T] = bar
    return _plain_lines(shown, desc, total) if bar.disable else shown


def _plain_lines(items: Iterable[T], desc: str, total: int) -> Iterator[T]:
    """``items`` unchanged, with a line on stderr every :data:`PLAIN_EVERY_S` seconds and one when they end."""
    done, last = 0, time.monotonic()
    for item in items:
        yield item
        done += 1
        if done < total and time.monotonic() - last >= PLAIN_EVERY_S:
            print(f"{desc}: {done}/{total}", file=sys.stderr, flush=True)
            last = time.monotonic()
    if done:
        print(f"{desc}: {done}/{total}, done", file=sys.stderr, flush=True)


def labelled(progress: Progress, label: str) -> Progress:
    """``progress`` with every stage's description prefixed by ``label``: ``"conv-30 (2/10) · L2 session"`` when an
    import or a consolidation goes over several users, whose stages would otherwise repeat unnamed.
    :func:`no_progress` stays itself."""
    if progress is no_progress:
        return progress

    def shown(items: Iterable[T], desc: str, total: int) -> Iterable[T]:
        return progress(items, f"{label} · {desc}", total)
    return shown


def user_label(user_id: str, index: int, count: int) -> str:
    """The label of user ``index`` (1-based) of ``count`` in a run over several users: ``"conv-30 (2/10)"``; the user
    id alone when there is one."""
    return f"{user_id} ({index}/{count})" if count > 1 else user_id
