"""Terminal progress for long work (CLI and bench): a :data:`timem.consolidation.consolidator.Progress` on tqdm."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")


def terminal_progress(items: Iterable[T], desc: str, total: int) -> Iterable[T]:
    """``items`` under a tqdm bar on stderr (cleared when done), e.g. ``desc="L2 session"``, ``total`` items."""
    bar: Iterable[T] = tqdm(items, desc=desc, total=total, unit="item", leave=False, file=sys.stderr)
    return bar
