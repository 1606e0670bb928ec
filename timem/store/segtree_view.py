"""What relevance propagation over the segment tree reads (:mod:`timem.recall.segtree`), with few queries.

**Index, cached per tree version.** :class:`SegIndex` holds one user's internal nodes of heights
``1..H`` (ids, parents, heights, ``n_children``, span starts and the centroid matrix ``(n, dim)``
float32), loaded in one query. It is cached per store and user, keyed by the stored tree's version
(:func:`timem.store.segtree_tables.version`: the ``segtree_state`` row, rewritten with a fresh, strictly
increasing ``built_at`` by every :func:`~timem.store.segtree_tables.sync` that writes, deleted by every
erase, edit and drop). A recall whose version differs from the cached one reloads the index, so a
write (add, edit, delete, erase, rebuild; committed or rolled back) is always seen by the next recall.
After an append-only sync (a chat turn, an ingest) from the cached version, only the internal nodes
that sync rewrote are read again (:func:`note_append`): ``O(log n)`` rows per new leaf, not the tree.

**Exact cosines.** The cosines that enter the scores are DuckDB's ``array_cosine_similarity`` of the
stored float32 centroids (as when they were read from the table), reproduced bit for bit in numpy by
:func:`timem.store.memory_index.exact_cosines`. An approximation only shortlists (prefix sums of the leaf search's
dot products when the recall has them, else a BLAS product with the centroids: :func:`_approx`):
per height, every node whose approximation plus its error bound is within :data:`MARGIN` of the ``k``-th best
approximation minus its bound. The product, and DuckDB's arithmetic, are within ``γ₃₈₄ ≈ 2.3e-5`` of the
real cosine (float32 sums of 384 products of unit-bounded terms), so the exact top ``k`` (ties by id)
is always inside the shortlist; the exact arithmetic then scores the shortlist and the candidates' ancestors.

**Leaves, cached too** (issue 26 §3): the index also holds every leaf's parent, ``n_children``, ``first_seq`` and span
start, and each height-1 node's leaves in leaf order, loaded with it and patched with it; so the candidate leaves' rows
(:meth:`TreeView.leaves_under`, ``TreeView.leaves``) need no query. The index lives in the store's cache
(:class:`~timem.store.memory_index.MemoryIndex`, key ``("seg", user, max height)``) under its one budget.

Queries per recall: none once the index is cached (before the leaf cache: the leaves' rows and the routed leaves,
one each; before the index: about ten, ``bench/results/recall-latency-tree.md``).
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import InitVar, dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa

from timem.errors import StoreError
from timem.store.handle import StoreHandle
from timem.store.memory_index import exact_cosines, gc_paused
from timem.store.memory_vectors import Dots, Vectors, grow
from timem.store.records import db_time
from timem.store.rows import in_list
from timem.tree.segtree import SegNode

#: numpy-vs-DuckDB cosine slack of the shortlist (the two differ by < 5e-5; measured 2.4e-7)
MARGIN = 1e-3
#: bound on a stored centroid's error per leaf averaged in (a float32 running mean: ``≤ 3u`` a step, ``u = 2⁻²⁴``)
DRIFT_PER_LEAF = 2e-7
#: largest error bound of a shortlist cosine read from the leaves' dot products; past it, the product (:func:`_approx`)
LOOSE = 0.02
#: room a patched index's centroid buffer gets when it must grow, as a share of its rows (a chat write appends a
#: few rows: 1/8 of 145k rows lasts thousands of writes; doubling would take 223 MB more at 100k leaves)
CENTROID_HEADROOM = 0.125
#: estimated bytes of one cached leaf (its tuple, id, parent id, timestamp and dictionary slots)
LEAF_BYTES = 420

#: a leaf: ``(parent id, n_children, first_seq, span_start naive UTC)``
Leaf = tuple[str | None, int, int, datetime]

#: ``(parent id, or None at or above the view's max height; height; n_children; exact cosine with the
#: question, or None for a leaf or a node not scored)``
Row = tuple[str | None, int, int, float | None]


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
    #: the L1 vector copy last matched to the leaves, and each leaf's row in it by ``first_seq`` (:meth:`rows_in`)
    _rows_in: tuple[Any, np.ndarray | None, object] | None = field(default=None, init=False, repr=False)
    _by_height: list[np.ndarray] | None = field(default=None, init=False, repr=False)
    #: from :func:`_patched`: the source index's latest :meth:`rows_in` ``(copy, rows)`` and the appended leaves
    #: in ``first_seq`` order, to extend instead of redo
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

    def rows_in(self, vectors: Vectors) -> np.ndarray | None:
        """Each leaf's row in ``vectors`` (the user's L1 copy), in ``first_seq`` order ``(n_leaves,)`` int64; None
        unless the leaves are numbered ``0 .. n-1`` and every one is live in the copy. Kept for the latest copy."""
        with _LOCK:
            memo = self._rows_in
        if memo is not None and memo[0]() is vectors:
            return memo[1]
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
        """Estimated bytes held: centroids, norms and per node and leaf bookkeeping."""
        held = self.centroids if self.spare is None else self.spare
        return int(held.nbytes + self.norms.nbytes) + 200 * len(self.ids) + LEAF_BYTES * len(self.leaves)


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
        index = _patched(hit[1], step[2], store.dim)
        cache.count("seg", "patch")
    else:
        with gc_paused():
            index = load_index(store, user_id, max_height)
        cache.count("seg", "load")
    cache.put(key, version, index)
    return index


def _desc(item: tuple[str, float]) -> tuple[int, float, str]:
    """DuckDB's ``ORDER BY cos DESC, id``: NaN sorts above every number."""
    i, c = item
    return (0, 0.0, i) if math.isnan(c) else (1, -c, i)


def _approx(ix: SegIndex, query_vec: np.ndarray, dots: Dots | None) -> tuple[np.ndarray, np.ndarray | float]:
    """Every node's shortlist cosine with the question, ``(len(ix.ids),)``, and a bound on its error beyond
    :data:`MARGIN` (an array, or 0).

    Without ``dots``: one BLAS product with the centroid matrix (``(n, dim)``: at 100k leaves, 145k nodes of heights
    1–2, ~15 ms, bound by memory bandwidth), within ``MARGIN`` (bound 0). With them: a centroid is the mean of its
    leaves' vectors (SegTreeMem, arXiv 2606.04555, §3), so ``q·c = (Σ_leaves q·e) / n``: a prefix sum of the leaves'
    dot products in conversation order, read at ``first_seq`` and ``last_seq + 1`` (~1 ms). Its bound is
    ``(dots.error + n · DRIFT_PER_LEAF) / |c|``: each leaf's dot product is within ``dots.error``, and the stored
    centroid, a float32 running mean, within :data:`DRIFT_PER_LEAF` per leaf of the exact mean. A node whose bound
    exceeds :data:`LOOSE` (large or diffuse nodes: few) is scored by the product instead (bound 0)."""
    q = np.asarray(query_vec, dtype=np.float32)
    if not ix.ids:
        return np.zeros(0, np.float32), 0.0
    rows = ix.rows_in(dots.vectors) if dots is not None else None
    if dots is None or rows is None or len(ix.last_seq) != len(ix.ids) or int(ix.last_seq.max()) >= len(rows):
        return np.asarray((ix.centroids @ q) / np.maximum(ix.norms, 1e-30)), 0.0
    prefix = np.zeros(len(rows) + 1, np.float64)
    np.cumsum(dots.values[rows], dtype=np.float64, out=prefix[1:])
    n = ix.last_seq - ix.first_seq + 1
    norms = np.maximum(ix.norms, 1e-30)
    approx: np.ndarray = (prefix[ix.last_seq + 1] - prefix[ix.first_seq]) / n / norms
    bound: np.ndarray = (dots.error + n * DRIFT_PER_LEAF) / norms
    loose = np.flatnonzero(bound > LOOSE)
    if len(loose):
        approx[loose] = (ix.centroids[loose] @ q) / norms[loose]
        bound[loose] = 0.0
    return approx, bound


class TreeView:
    """The segment tree for one question: the cached index, the candidate leaves' rows and exact cosines.

    Args:
        index: the user's :class:`SegIndex`.
        leaves: leaf id -> ``(parent id, n_children)`` for the candidate leaves (and routed ones, added later).
        query_vec: ``(dim,)`` unit vector.
        per_height: how many best centroids per height :attr:`top` holds.
        until: UTC-aware; nodes starting after it are left out of :attr:`top`.
        dots: the dot products of ``query_vec`` with the user's L1 vector copy
            (:meth:`timem.store.memory_index.MemoryIndex.leaf_dots`), if at hand: the shortlist is then read
            from them (:func:`_approx`) instead of a product with every centroid.
    """

    def __init__(self, index: SegIndex, leaves: dict[str, tuple[str | None, int]],
                 query_vec: np.ndarray, per_height: int, until: datetime | None,
                 dots: Dots | None = None) -> None:
        self.index, self.leaves = index, dict(leaves)
        ix = index
        approx, bound = _approx(ix, query_vec, dots)
        approx[ix.norms == 0] = np.nan
        lower, upper = approx - bound, approx + bound
        before = None if until is None else ix.start <= np.datetime64(db_time(until), "us")
        short: set[int] = set()
        for at_height in ix.by_height():
            idx = at_height if before is None else at_height[before[at_height]]
            vals = approx[idx]
            finite = lower[idx][~np.isnan(vals)]
            if len(finite) > per_height:  # no node whose upper bound is below the k-th best lower bound can rank
                kth = np.partition(finite, len(finite) - per_height)[len(finite) - per_height]
                keep = np.isnan(vals) | (upper[idx] >= kth - MARGIN)
                short.update(idx[keep].tolist())
            else:
                short.update(idx.tolist())
        lineage = {ix.pos[i] for i in self._internal_lineage(self.leaves)}
        score = sorted(short | lineage)
        exact = exact_cosines(ix.centroids[score], query_vec) if score else []
        self.cos: dict[str, float] = {ix.ids[k]: c for k, c in zip(score, exact, strict=True)}
        by_height: dict[int, list[tuple[str, float]]] = {}
        for k in sorted(short):
            by_height.setdefault(int(ix.height[k]), []).append((ix.ids[k], self.cos[ix.ids[k]]))
        #: the ``per_height`` best internal nodes of each height by exact cosine (ties: id), ``(id, height, cos)``
        self.top: list[tuple[str, int, float]] = []
        for h, scored in sorted(by_height.items()):
            scored.sort(key=_desc)
            self.top += [(i, h, c) for i, c in scored[:per_height]]

    def _internal_lineage(self, leaves: Iterable[str]) -> list[str]:
        out: dict[str, None] = {}
        for leaf in leaves:
            p = self.leaves[leaf][0] if 0 < self.index.max_height else None
            while p is not None and p in self.index.pos and p not in out:
                out[p] = None
                k = self.index.pos[p]
                p = self.index.parent[k] if self.index.height[k] < self.index.max_height else None
        return list(out)

    def row(self, i: str) -> Row | None:
        """The :data:`Row` of a leaf of the view or an internal node of the index, else None."""
        if i in self.leaves:
            p, n = self.leaves[i]
            return (p if 0 < self.index.max_height else None, 0, n, None)
        k = self.index.pos.get(i)
        if k is None:
            return None
        h = int(self.index.height[k])
        return (self.index.parent[k] if h < self.index.max_height else None, h, int(self.index.n_children[k]),
                self.cos.get(i))

    def leaves_under(self, parent_ids: Sequence[str]) -> list[tuple[str, str, int, datetime]]:
        """:func:`leaves_under` from the index: the leaves whose parent is one of ``parent_ids``, as ``(leaf id,
        parent id, n_children, span_start UTC)``, in leaf order (``first_seq``, then id)."""
        ix = self.index
        found = [(ix.leaves[i][2], i, p) for p in dict.fromkeys(parent_ids) for i in ix.children.get(p, ())]
        found.sort()
        return [(i, p, ix.leaves[i][1], ix.leaves[i][3].replace(tzinfo=UTC)) for _, i, p in found]

    def lineage(self, ids: Iterable[str]) -> dict[str, Row]:
        """``ids`` found in the view and their ancestors up to the max height, as ``id -> Row``."""
        out: dict[str, Row] = {}
        frontier = list(dict.fromkeys(ids))
        while frontier:
            found = [(i, r) for i in frontier if (r := self.row(i)) is not None]
            out.update(found)
            frontier = sorted({r[0] for _, r in found if r[0]} - out.keys())
        return out


def leaf_rows(store: StoreHandle, user_id: str, leaf_ids: Sequence[str]) -> dict[str, tuple[str | None, int]]:
    """``leaf id -> (parent id, n_children)`` for the user's leaves among ``leaf_ids`` (one query)."""
    if not leaf_ids:
        return {}
    frag, vals = in_list(leaf_ids)
    rows = store.con.execute(f"SELECT id, parent_id, n_children FROM segtree_nodes WHERE user_id = ? AND height = 0 "
                             f"AND id IN {frag}", [user_id, *vals]).fetchall()
    return {r[0]: (r[1], int(r[2])) for r in rows}


def leaves_under(store: StoreHandle, user_id: str, parent_ids: Sequence[str]
                 ) -> list[tuple[str, str, int, datetime]]:
    """The leaves whose parent is one of ``parent_ids`` (height-1 nodes), as ``(leaf id, parent id,
    n_children, span_start UTC)``, in leaf order (one query)."""
    if not parent_ids:
        return []
    frag, vals = in_list(parent_ids)
    rows = store.con.execute(f"SELECT id, parent_id, n_children, span_start FROM segtree_nodes WHERE user_id = ? "
                             f"AND height = 0 AND parent_id IN {frag} ORDER BY first_seq",
                             [user_id, *vals]).fetchall()
    return [(r[0], r[1], int(r[2]), r[3].replace(tzinfo=UTC)) for r in rows]
