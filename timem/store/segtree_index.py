"""One user's segment-tree index in memory (:class:`SegIndex`): loaded, cached per tree version and patched
after an append-only sync; read by :mod:`timem.store.segtree_view`.

**Index, cached per tree version.** :class:`SegIndex` holds one user's internal nodes of heights
``1..H`` (ids, parents, heights, ``n_children``, span starts and the centroid matrix ``(n, dim)``
float32), loaded in one query. It is cached per store and user, keyed by the stored tree's version
(:func:`timem.store.segtree_tables.version`: the ``segtree_state`` row, rewritten with a fresh, strictly
increasing ``built_at`` by every :func:`~timem.store.segtree_tables.sync` that writes, deleted by every
erase, edit and drop). A recall whose version differs from the cached one reloads the index, so a
write (add, edit, delete, erase, rebuild; committed or rolled back) is always seen by the next recall.
After an append-only sync (a chat turn, an ingest) from the cached version, only the internal nodes
that sync rewrote are read again (:func:`note_append`): ``O(log n)`` rows per new leaf, not the tree.

**Leaves, cached too** (issue 26 §3): the index also holds every leaf's parent, ``n_children``, ``first_seq`` and span
start, and each height-1 node's leaves in leaf order, loaded with it and patched with it; so the candidate leaves' rows
(:meth:`TreeView.leaves_under`, ``TreeView.leaves``) need no query. The index lives in the store's cache
(:class:`~timem.store.memory_index.MemoryIndex`, key ``("seg", user, max height)``) under its one budget.

**Patches** (:func:`_patched`): a sync hands the nodes it wrote to the cache (:func:`note_append`); the patch appends
them as new rows (copy on write: a rewritten node's old row is marked dead, an index still in use keeps its rows),
into the old centroid buffer when it has room, and extends the leaves' rows in the L1 vector copy.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import InitVar, dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from timem.errors import StoreError
from timem.store.handle import StoreHandle
from timem.store.memory_index import gc_paused
from timem.store.memory_vectors import Vectors, grow
from timem.store.records import db_time
from timem.tree.segtree import SegNode

#: room a patched index's centroid buffer gets when it must grow, as a share of its rows (a chat write appends a
#: few rows: 1/8 of 145k rows lasts thousands of writes; doubling would take 223 MB more at 100k leaves)
CENTROID_HEADROOM = 0.125
#: estimated bytes of one cached leaf (its tuple, id, parent id, timestamp and dictionary slots)
LEAF_BYTES = 420

#: a leaf: ``(parent id, n_children, first_seq, span_start naive UTC)``
Leaf = tuple[str | None, int, int, datetime]


class Terms(NamedTuple):
    """Per-node arrays of a :class:`SegIndex` that do not depend on the question (:meth:`SegIndex.terms`)."""

    n: np.ndarray  #: leaves under each node, ``last_seq - first_seq + 1`` (int64)
    after_last: np.ndarray  #: ``last_seq + 1`` (int64)
    safe_norms: np.ndarray  #: centroid norms, at least 1e-30 (float32)
    zero: np.ndarray  #: positions of zero centroids
    last_max: int  #: the largest ``last_seq`` (-1 without nodes)
    heights: list[int]  #: ``height`` as Python ints
    latest_start: np.datetime64  #: the latest ``start`` (NaT if any start is NaT, or without nodes)
    #: by the scan's error (filled on use): the nodes whose shortlist bound exceeds ``LOOSE`` and every node's bound
    #: (0 for those: the product scores them), :func:`timem.store.segtree_view._approx`
    bounds: dict[float, tuple[np.ndarray, np.ndarray]]


@dataclass
class SegIndex:
    """One user's internal segment-tree nodes of heights ``1..max_height`` at one tree version.

    ``start``: span starts as naive-UTC ``datetime64[us]``; ``centroids``: ``(n, dim)`` float32 as stored.
    """

    ids: list[str]
    parent: list[str | None]
    height: np.ndarray
    n_children: np.ndarray
    start: np.ndarray
    centroids: np.ndarray
    max_height: int
    #: each node's leaves as the inclusive positions ``first_seq .. last_seq`` in conversation order, int64
    first_seq: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    last_seq: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: every leaf (height 0) by id, and each parent's leaves in ``first_seq`` order
    leaves: dict[str, Leaf] = field(default_factory=dict)
    children: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: live rows (None: all): a patch appends a rewritten node as a new row and marks its old row dead
    alive: np.ndarray | None = None
    #: the buffer ``centroids`` is the first rows of, when it has room to grow (:func:`_patched` appends in place)
    spare: np.ndarray | None = None
    #: ``(pos, norms)`` already known (a patch keeps the unchanged nodes'); else computed
    known: InitVar[tuple[dict[str, int], np.ndarray] | None] = None
    pos: dict[str, int] = field(init=False)
    norms: np.ndarray = field(init=False)
    #: the L1 vector copy last matched to the leaves (a weak reference), each leaf's row in it by ``first_seq``
    #: (:meth:`rows_in`) and the copy's position space
    _rows_in: tuple[Any, np.ndarray | None, object] | None = field(default=None, init=False, repr=False)
    _by_height: list[np.ndarray] | None = field(default=None, init=False, repr=False)
    _terms: Terms | None = field(default=None, init=False, repr=False)
    #: from :func:`_patched`: the source index's latest :meth:`rows_in` as ``(the copy's position space, rows)`` and
    #: the appended leaves in ``first_seq`` order, to extend instead of redo
    _rows_base: tuple[object, np.ndarray, list[str]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self, known: tuple[dict[str, int], np.ndarray] | None) -> None:
        if known is not None:
            self.pos, self.norms = known
            return
        self.pos = {i: k for k, i in enumerate(self.ids)}
        self.norms = np.linalg.norm(self.centroids, axis=1) if len(self.ids) else np.zeros(0, np.float32)

    def by_height(self) -> list[np.ndarray]:
        """The live positions of the nodes of each height ``1..max_height`` that has any, by height (computed
        once)."""
        with _LOCK:
            memo = self._by_height
        if memo is None:
            live = self.height if self.alive is None else np.where(self.alive, self.height, 0)
            memo = [idx for h in range(1, self.max_height + 1) if len(idx := np.flatnonzero(live == h))]
            with _LOCK:
                self._by_height = memo
        return memo

    def terms(self) -> Terms:
        """What every question's shortlist (:func:`timem.store.segtree_view._approx`) reads of the nodes, computed
        once per index (~1.5 ms a question at 100k leaves before)."""
        with _LOCK:
            memo = self._terms
        if memo is None:
            memo = Terms(n=self.last_seq - self.first_seq + 1, after_last=self.last_seq + 1,
                         safe_norms=np.maximum(self.norms, 1e-30), zero=np.flatnonzero(self.norms == 0),
                         last_max=int(self.last_seq.max()) if len(self.last_seq) else -1,
                         heights=self.height.tolist(), bounds={},
                         latest_start=self.start.max() if len(self.start) else np.datetime64("NaT", "us"))
            with _LOCK:
                self._terms = memo
        return memo

    def rows_in(self, vectors: Vectors) -> np.ndarray | None:
        """Each leaf's row in ``vectors`` (the user's L1 copy), in ``first_seq`` order ``(n_leaves,)`` int64; None
        unless the leaves are numbered ``0 .. n-1`` and every one is live in the copy. Kept for the latest copy."""
        with _LOCK:
            memo = self._rows_in
        if memo is not None and memo[0]() is vectors:
            return memo[1]
        # a write patches the copy (appends rows in the same position space) and leaves this index as it is until
        # the tree is synced: the leaves' rows are the same while they are live (a Python pass over every leaf is
        # ~10 ms at 10k leaves, ~100 ms at 100k, on the first recall after every write)
        rows = memo[1] if memo is not None and memo[1] is not None and memo[2] is vectors.space \
            and bool(vectors.alive[memo[1]].all()) else None
        if rows is not None:
            with _LOCK:
                self._rows_in = (weakref.ref(vectors), rows, vectors.space)
            return rows
        rows = self._extended_rows(vectors)
        if rows is None:
            rows = self._all_rows(vectors)
        with _LOCK:
            self._rows_in = (weakref.ref(vectors), rows, vectors.space)
        return rows

    def _extended_rows(self, vectors: Vectors) -> np.ndarray | None:
        """:meth:`rows_in` from the source index's (a patch appends leaves): its rows, if ``vectors`` has the same
        positions (same :attr:`~timem.store.memory_vectors.Vectors.space`) and they are all still live, then the
        appended leaves' rows; else None."""
        base = self._rows_base
        if base is None:
            return None
        if base[0] is not vectors.space or not vectors.alive[base[1]].all():
            return None
        tail = np.fromiter((vectors.where.get(i, -1) for i in base[2]), dtype=np.int64, count=len(base[2]))
        return np.concatenate([base[1], tail]) if len(base[1]) + len(tail) == len(self.leaves) \
            and (tail >= 0).all() else None

    def _all_rows(self, vectors: Vectors) -> np.ndarray | None:
        by_seq = [""] * len(self.leaves)
        for i, leaf in self.leaves.items():
            if not 0 <= leaf[2] < len(by_seq) or by_seq[leaf[2]]:
                by_seq = []
                break
            by_seq[leaf[2]] = i
        where = vectors.where
        rows = np.fromiter((where.get(i, -1) for i in by_seq), dtype=np.int64, count=len(by_seq)) \
            if by_seq and all(by_seq) else None
        return None if rows is None or (rows < 0).any() else rows

    @property
    def nbytes(self) -> int:
        """Estimated bytes held: centroids, norms and per node and leaf bookkeeping (with :meth:`terms`' ~60 bytes a
        node, computed by the first question)."""
        held = self.centroids if self.spare is None else self.spare
        return int(held.nbytes + self.norms.nbytes) + 260 * len(self.ids) + LEAF_BYTES * len(self.leaves)


_COLS = "id, parent_id, height, n_children, span_start, centroid, first_seq, last_seq"


def _index(tbl: pa.Table, user_id: str, dim: int, max_height: int) -> SegIndex:
    n = tbl.num_rows
    cen = tbl.column("centroid").combine_chunks()
    if n and cen.null_count:
        raise StoreError(f"segment tree of {user_id} has an internal node without a centroid; rebuild it with "
                         f"`timem segtree build --user {user_id} --rebuild`")
    flat = cen.flatten().to_numpy() if n else np.zeros(0, np.float32)
    return SegIndex(ids=tbl.column("id").to_pylist(), parent=tbl.column("parent_id").to_pylist(),
                    height=tbl.column("height").to_numpy().astype(np.int64),
                    n_children=tbl.column("n_children").to_numpy().astype(np.int64),
                    start=tbl.column("span_start").to_numpy().astype("datetime64[us]"),
                    centroids=np.asarray(flat, dtype=np.float32).reshape(n, dim), max_height=int(max_height),
                    first_seq=tbl.column("first_seq").to_numpy().astype(np.int64),
                    last_seq=tbl.column("last_seq").to_numpy().astype(np.int64))


_LEAF_COLS = "id, parent_id, n_children, first_seq, span_start"


def _children(leaves: dict[str, Leaf], changed: Iterable[str] = (), old_leaves: dict[str, Leaf] | None = None,
              old: dict[str, tuple[str, ...]] | None = None) -> dict[str, tuple[str, ...]]:
    """Each parent's leaves in ``first_seq`` order (then id), over ``leaves``: all of them when ``old`` is ``None``,
    else ``old`` with the parents of the ``changed`` leaves (before, in ``old_leaves``, and now) done again."""
    if old is None or old_leaves is None:
        groups: dict[str, list[tuple[int, str]]] = {}
        for i, (p, _, seq, _) in leaves.items():
            if p is not None:
                groups.setdefault(p, []).append((seq, i))
        return {p: tuple(i for _, i in sorted(kids)) for p, kids in groups.items()}
    members: dict[str, set[str]] = {}
    for i in changed:
        for leaf in (old_leaves.get(i), leaves.get(i)):
            if leaf is not None and leaf[0] is not None:
                members.setdefault(leaf[0], set())
    for i in changed:
        leaf = leaves.get(i)
        if leaf is not None and leaf[0] is not None:
            members[leaf[0]].add(i)
    for p, ids in members.items():
        ids.update(old.get(p, ()))
    groups = {p: [(leaves[i][2], i) for i in ids if i in leaves and leaves[i][0] == p] for p, ids in members.items()}
    out = dict(old)
    for p, kids in groups.items():
        if kids:
            out[p] = tuple(i for _, i in sorted(kids))
        else:
            out.pop(p, None)
    return out


def _leaf_rows(rows: Iterable[tuple[Any, ...]]) -> dict[str, Leaf]:
    return {r[0]: (r[1], int(r[2]), int(r[3]), r[4]) for r in rows}


def load_index(store: StoreHandle, user_id: str, max_height: int) -> SegIndex:
    """The user's internal nodes of heights ``1..max_height`` and every leaf, in two queries (user filter in SQL).

    Raises:
        StoreError: an internal node has no centroid (a damaged tree).
    """
    tbl = store.con.execute(f"SELECT {_COLS} FROM segtree_nodes WHERE user_id = ? AND height BETWEEN 1 AND ?",
                            [user_id, int(max_height)]).to_arrow_table()
    index = _index(tbl, user_id, store.dim, max_height)
    index.leaves = _leaf_rows(store.con.execute(f"SELECT {_LEAF_COLS} FROM segtree_nodes WHERE user_id = ? "
                                                "AND height = 0", [user_id]).fetchall())
    index.children = _children(index.leaves)
    return index


def _from_nodes(nodes: Sequence[SegNode], dim: int, max_height: int) -> SegIndex:
    """The internal nodes of heights ``1..max_height`` among ``nodes`` as :func:`_index` reads them back from the
    table (the same values: naive-UTC starts, float32 centroids)."""
    kept = [x for x in nodes if 1 <= x.height <= max_height]
    return SegIndex(ids=[x.id for x in kept], parent=[x.parent_id for x in kept],
                    height=np.array([x.height for x in kept], dtype=np.int64),
                    n_children=np.array([x.n_children for x in kept], dtype=np.int64),
                    start=np.array([np.datetime64(db_time(x.span_start), "us") for x in kept], dtype="datetime64[us]"),
                    centroids=np.array([x.mean() for x in kept], dtype=np.float32).reshape(len(kept), dim),
                    max_height=int(max_height), first_seq=np.array([x.first_seq for x in kept], dtype=np.int64),
                    last_seq=np.array([x.last_seq for x in kept], dtype=np.int64))


def _patched(old: SegIndex, written: Sequence[SegNode], dim: int) -> SegIndex:
    """``old`` with the nodes and leaves a sync ``written`` (as it stored them), without a query: every written node
    is appended as a new row (a rewritten one's old row marked dead), the centroids in place in ``old``'s buffer when
    it has room (rows past ``old``'s are never read by ``old``: copy on write, ~O(log n) rows a chat write instead of
    a copy of every centroid, 223 MB at 100k leaves), and the unchanged nodes' norms and positions kept. Compacted
    when half the rows are dead."""
    fresh: dict[str, Leaf] = {x.id: (x.parent_id, int(x.n_children), int(x.first_seq), db_time(x.span_start))
                              for x in written if x.height == 0}
    leaves = {**old.leaves, **fresh}
    new = _from_nodes(written, dim, old.max_height)
    n0, n = len(old.ids), len(old.ids) + len(new.ids)
    alive = np.ones(n, dtype=bool)
    if old.alive is not None:
        alive[:n0] = old.alive
    alive[[old.pos[i] for i in new.ids if i in old.pos]] = False
    buf = grow(old.centroids if old.spare is None else old.spare, n0, new.centroids, CENTROID_HEADROOM)
    pos = dict(old.pos)
    pos.update((i, n0 + j) for j, i in enumerate(new.ids))

    def cat(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.concatenate([a, b])

    index = SegIndex(ids=old.ids + new.ids, parent=old.parent + new.parent, height=cat(old.height, new.height),
                     n_children=cat(old.n_children, new.n_children), start=cat(old.start, new.start),
                     centroids=buf[:n], max_height=old.max_height, leaves=leaves,
                     first_seq=cat(old.first_seq, new.first_seq), last_seq=cat(old.last_seq, new.last_seq),
                     children=_children(leaves, fresh, old.leaves, old.children), alive=alive, spare=buf,
                     known=(pos, cat(old.norms, new.norms)))
    if 2 * int(alive.sum()) < n:
        return _compacted(index)
    with _LOCK:
        memo = old._rows_in
    tail = sorted(fresh, key=lambda i: fresh[i][2])
    if memo is not None and memo[1] is not None and [fresh[i][2] for i in tail] == \
            list(range(len(old.leaves), len(old.leaves) + len(tail))) and not set(tail) & old.leaves.keys():
        index._rows_base = (memo[2], memo[1], tail)
    return index


def _compacted(ix: SegIndex) -> SegIndex:
    """``ix`` with its live rows only (fresh arrays, positions and norms)."""
    keep = np.flatnonzero(ix.alive) if ix.alive is not None else np.arange(len(ix.ids))
    k = keep.tolist()
    return SegIndex(ids=[ix.ids[i] for i in k], parent=[ix.parent[i] for i in k], height=ix.height[keep],
                    n_children=ix.n_children[keep], start=ix.start[keep], centroids=ix.centroids[keep],
                    max_height=ix.max_height, first_seq=ix.first_seq[keep], last_seq=ix.last_seq[keep],
                    leaves=ix.leaves, children=ix.children)

#: per store and user, the latest append-only sync: ``(version before, version after, the nodes and leaves it wrote)``
_APPENDS: weakref.WeakKeyDictionary[StoreHandle, dict[str, tuple[Any, Any, list[SegNode]]]] = \
    weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def note_append(store: StoreHandle, user_id: str, before: Any, after: Any, written: Sequence[SegNode]) -> None:
    """Record that a :func:`~timem.store.segtree_tables.sync` turned the tree of version ``before`` into ``after`` by
    appending leaves, rewriting (or creating) only the nodes ``written`` (as it stored them): a cached index of
    ``before`` is then patched with them instead of reloaded, once the store is at ``after`` (a rolled-back sync's
    ``after`` is never reached)."""
    if before is None or after is None:
        return
    with _LOCK:
        _APPENDS.setdefault(store, {})[user_id] = (before, after, list(written))


def cached_index(store: StoreHandle, user_id: str, max_height: int, version: Any) -> SegIndex:
    """:func:`load_index`, reused while the tree's ``version`` (:func:`timem.store.segtree_tables.version`) is
    unchanged, patched after an append-only sync from the cached version (:func:`note_append`)."""
    cache = store.memory_index
    key = ("seg", user_id, int(max_height))
    hit_index = cache.cached(key, version)
    if isinstance(hit_index, SegIndex):
        return hit_index
    hit = cache.latest(key)
    with _LOCK:
        step = _APPENDS.get(store, {}).get(user_id)
    if hit is not None and step is not None and step[0] == hit[0] and step[1] == version \
            and len(step[2]) <= max(64, (len(hit[1].ids) + len(hit[1].leaves)) // 4):
        with gc_paused():  # long-lived: straight to the oldest generation
            index = _patched(hit[1], step[2], store.dim)
        cache.count("seg", "patch")
    else:
        with gc_paused():
            index = load_index(store, user_id, max_height)
        cache.count("seg", "load")
    cache.put(key, version, index)
    return index

