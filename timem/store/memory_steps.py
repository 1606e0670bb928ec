"""The writes the in-memory copies follow (:mod:`timem.store.memory_index`): what each changed, and the chain of them.

Every write that can say what it changed records a step from the nodes version before it to the one after it (a
:class:`Change`: the nodes removed, as they were, then the nodes added, with their vectors; the rows touched
otherwise). A copy cached at an older version is brought to the current one by the changes on the chain of steps
between the two (:meth:`StepLog.chain`), in work of the size of the changes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from timem.store.bm25 import Doc

#: write steps remembered per store (an ingest writes one per batch of nodes)
MAX_STEPS = 4096
#: the status of the nodes the vector and postings copies hold
ACTIVE = "active"


@dataclass(frozen=True)
class Change:
    """One write's effect on ``nodes``: nodes removed (their old state), then nodes added (``vecs[i]`` is
    ``added[i]``'s unit vector); ``touched``: other rows it changed (a parent link, a flag)."""

    removed: tuple[Doc, ...]
    added: tuple[Doc, ...]
    vecs: np.ndarray
    touched: tuple[str, ...] = ()


class StepLog:
    """The last :data:`MAX_STEPS` steps of one store, by the nodes version they start from (thread-safe)."""

    def __init__(self, max_steps: int = MAX_STEPS) -> None:
        self.max_steps = max_steps
        self._lock = threading.Lock()
        #: nodes version before -> (version after, what the write changed)
        self._steps: OrderedDict[str | None, tuple[str, Change]] = OrderedDict()

    def record(self, before: str | None, after: str, change: Change) -> None:
        """Remember that ``change`` turned nodes version ``before`` into ``after`` (the oldest step forgotten
        past :attr:`max_steps`)."""
        with self._lock:
            self._steps[before] = (after, change)
            while len(self._steps) > self.max_steps:
                self._steps.popitem(last=False)

    def chain(self, start: str | None, version: str | None) -> list[Change] | None:
        """The changes on the chain of steps ``start`` -> ``version``, or None when no such chain is remembered."""
        out: list[Change] = []
        at = start
        with self._lock:
            for _ in range(len(self._steps) + 1):
                if at == version:
                    return out
                step = self._steps.get(at)
                if step is None:
                    return None
                at, change = step
                out.append(change)
        return None
