"""Progress around long work: the :class:`Progress` protocol that consolidation, ingest and memory-item extraction
take, :func:`no_progress` (none shown), and :func:`terminal_progress` (tqdm, for the CLI and bench)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Protocol, TypeVar

from tqdm import tqdm

T = TypeVar("T")


class Progress(Protocol):
    """A progress display around one stage of long work, called as ``progress(items, desc, total)``; it yields
    ``items`` unchanged (e.g. ``tqdm``, the studio's progress bar)."""

    def __call__(self, items: Iterable[T], desc: str, total: int, /) -> Iterable[T]: ...


def no_progress(items: Iterable[T], desc: str, total: int) -> Iterable[T]:
    """A :class:`Progress` that shows nothing: ``items`` as they are."""
    return items


def terminal_progress(items: Iterable[T], desc: str, total: int) -> Iterable[T]:
    """``items`` under a tqdm bar on stderr (cleared when done), e.g. ``desc="L2 session"``, ``total`` items."""
    bar: Iterable[T] = tqdm(items, desc=desc, total=total, unit="item", leave=False, file=sys.stderr)
    return bar
