"""TIDER's event pool (arXiv 2610.23598 §3.1), an optional construction over a user's L1 leaves.

**Construction** (:func:`build_events`). The dated leaves are read in conversation order; each joins
the existing event whose centroid is most similar to it among those that (a) end at most
:data:`MERGE_DAYS` (7) days before the leaf starts, (b) have cosine ≥ :data:`MERGE_COSINE` (0.85) between
the event's centroid (mean of its members' unit vectors, re-normalised) and the leaf, and (c) hold
fewer than :data:`MAX_MEMBERS` (40) members — else it starts a new event. TIDER builds the pool from
dated items an LLM extracts; here the items are the L1 leaves themselves (their dates are resolved at
write time), so no LLM is needed and the pool is deterministic.

**Channel** (:func:`event_channel`). The ``Config.recall.event_pool`` events with the highest centroid cosine
to the question (only events that start before the question time) bring their members into leaf
selection, like the time channel: a member not already a candidate gets its stored cosine and BM25 0,
and then competes by the fused score. ``event_pool = 0`` turns the construction off.

The pool is cached per store and user and keyed by the user's segment-tree version
(:func:`timem.store.segtree_tables.version`), which every write to the user's L1 leaves changes; without a
current version it is rebuilt for the query.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from timem.config import Config
from timem.models import Level
from timem.recall.state import RecallState
from timem.store.ports import MemoryStore

MERGE_DAYS = 7.0  #: TIDER: items at most this many days apart may merge
MERGE_COSINE = 0.85  #: TIDER: ... and only with at least this cosine to the event
MAX_MEMBERS = 40  #: TIDER: at most this many items per event


@dataclass
class Event:
    """One event: member leaf ids in conversation order, its time span (UTC-aware) and unit centroid."""

    members: list[str]
    start: datetime
    end: datetime
    total: np.ndarray  #: sum of the members' unit vectors, shape ``(dim,)``
    centroid: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.centroid = self.total / max(float(np.linalg.norm(self.total)), 1e-12)

    def add(self, leaf_id: str, start: datetime, end: datetime, vec: np.ndarray) -> None:
        self.members.append(leaf_id)
        self.end = max(self.end, end)
        self.total = self.total + vec
        self.centroid = self.total / max(float(np.linalg.norm(self.total)), 1e-12)


def build_events(leaves: Sequence[tuple[str, datetime, datetime, np.ndarray]]) -> list[Event]:
    """The event pool of ``leaves`` (see the module doc).

    Args:
        leaves: ``(id, span start, span end, unit vector (dim,))`` in conversation order; times UTC-aware.

    Returns:
        The events in order of their first member.
    """
    events: list[Event] = []
    open_: list[Event] = []  # events that can still take a leaf (ended within MERGE_DAYS)
    gap = timedelta(days=MERGE_DAYS)
    for leaf_id, start, end, vec in leaves:
        open_ = [e for e in open_ if start - e.end <= gap]
        best, best_cos = None, MERGE_COSINE
        for e in open_:
            if len(e.members) >= MAX_MEMBERS:
                continue
            cos = float(np.dot(e.centroid, vec))
            if cos >= best_cos:
                best, best_cos = e, cos
        if best is None:
            best = Event(members=[leaf_id], start=start, end=end, total=vec.astype(np.float64))
            events.append(best)
            open_.append(best)
        else:
            best.add(leaf_id, start, end, vec)
    return events


_CACHE: weakref.WeakKeyDictionary[MemoryStore, dict[str, tuple[Any, list[Event]]]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def user_events(store: MemoryStore, config: Config, user_id: str) -> list[Event]:
    """The user's event pool over their active L1 leaves, cached by segment-tree version."""
    ver = store.segment_tree.version(user_id, config.recall.segtree_threshold, config.recall.segtree_max_children)
    with _LOCK:
        hit = _CACHE.get(store, {}).get(user_id)
    if ver is not None and hit is not None and hit[0] == ver:
        return hit[1]
    nodes = store.nodes(user_id, int(Level.SEGMENT))
    vecs = store.embeddings([n.id for n in nodes], user_id=user_id) if nodes else {}
    events = build_events([(n.id, n.span_start, n.span_end, vecs[n.id]) for n in nodes if n.id in vecs])
    if ver is not None:
        with _LOCK:
            _CACHE.setdefault(store, {})[user_id] = (ver, events)
    return events


def event_channel(state: RecallState) -> tuple[list[str], str]:
    """Member leaf ids of the ``Config.recall.event_pool`` events most similar to the question (cosine with the
    state's question embedding), and a trace note. Events starting after ``state.question_time`` are skipped."""
    config, question_time = state.config, state.question_time
    query_vec = state.query_vector()
    events = [e for e in user_events(state.store, config, state.user_id)
              if e.start <= question_time]
    if not events or config.recall.event_pool <= 0:
        return [], ""
    cos = np.array([float(np.dot(e.centroid, query_vec)) for e in events])
    order = sorted(range(len(events)), key=lambda i: (-cos[i], events[i].start))[:config.recall.event_pool]
    members = [m for i in order for m in events[i].members]
    sizes = ", ".join(f"{len(events[i].members)} leaves at cosine {cos[i]:.2f}" for i in order)
    return members, f"event pool: {len(events)} events; the best {len(order)} ({sizes})"
