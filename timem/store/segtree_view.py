"""What relevance propagation over the segment tree reads (:mod:`timem.recall.segtree`), with few queries: a
:class:`TreeView` per question over the user's cached index (:mod:`timem.store.segtree_index`).

**Exact cosines.** The cosines that enter the scores are DuckDB's ``array_cosine_similarity`` of the
stored float32 centroids (as when they were read from the table), reproduced bit for bit in numpy by
:func:`timem.store.memory_index.exact_cosines`. An approximation only shortlists (prefix sums of the leaf search's
dot products when the recall has them, else a BLAS product with the centroids: :func:`_approx`):
per height, every node whose approximation plus its error bound is within :data:`MARGIN` of the ``k``-th best
approximation minus its bound. The product, and DuckDB's arithmetic, are within ``γ₃₈₄ ≈ 2.3e-5`` of the
real cosine (float32 sums of 384 products of unit-bounded terms), so the exact top ``k`` (ties by id)
is always inside the shortlist; the exact arithmetic then scores the shortlist and the candidates' ancestors.

Queries per recall: none once the index is cached (before the leaf cache: the leaves' rows and the routed leaves,
one each; before the index: about ten, ``bench/results/recall-latency-tree.md``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

import numpy as np

from timem.store.handle import StoreHandle
from timem.store.memory_index import exact_cosines
from timem.store.memory_vectors import MARGIN, Dots
from timem.store.records import db_time
from timem.store.rows import in_list
from timem.store.segtree_index import SegIndex

#: bound on a stored centroid's error per leaf averaged in (a float32 running mean: ``≤ 3u`` a step, ``u = 2⁻²⁴``)
DRIFT_PER_LEAF = 2e-7
#: largest error bound of a shortlist cosine read from the leaves' dot products; past it, the product (:func:`_approx`)
LOOSE = 0.02

#: ``(parent id, or None at or above the view's max height; height; n_children; exact cosine with the
#: question, or None for a leaf or a node not scored)``
Row = tuple[str | None, int, int, float | None]


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
    t = ix.terms()
    if dots is None or rows is None or len(ix.last_seq) != len(ix.ids) or t.last_max >= len(rows):
        return np.asarray((ix.centroids @ q) / t.safe_norms), 0.0
    prefix = np.zeros(len(rows) + 1, np.float64)
    np.cumsum(dots.values[rows], dtype=np.float64, out=prefix[1:])
    norms = t.safe_norms
    approx: np.ndarray = (prefix[t.after_last] - prefix[ix.first_seq]) / t.n / norms
    got = t.bounds.get(dots.error)
    if got is None:  # per scan error (two values), not per question
        bound: np.ndarray = (dots.error + t.n * DRIFT_PER_LEAF) / norms
        loose = np.flatnonzero(bound > LOOSE)
        bound[loose] = 0.0
        got = t.bounds.setdefault(dots.error, (loose, bound))
    loose, bound = got
    if len(loose):
        approx[loose] = (ix.centroids[loose] @ q) / norms[loose]
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
        approx[ix.terms().zero] = np.nan
        lower, upper = approx - bound, approx + bound
        cut = None if until is None else np.datetime64(db_time(until), "us")
        # a question after every node's start (a chat's) filters nothing (a NaT start compares false: filtered)
        before = None if cut is None or ix.terms().latest_start <= cut else ix.start <= cut
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
        pos, parent, heights, top = self.index.pos, self.index.parent, self.index.terms().heights, self.index.max_height
        for leaf in leaves:
            p = self.leaves[leaf][0] if 0 < top else None
            while p is not None and p not in out and (k := pos.get(p)) is not None:
                out[p] = None
                p = parent[k] if heights[k] < top else None
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
