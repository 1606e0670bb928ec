"""SegTreeMem's segment tree, built online on the right frontier (arXiv 2606.04555), pure and in memory.

The recall index by default (``recall_index = "segtree"``; "timem" uses the TiMem tree). Its persistence in the
DuckDB file is :mod:`timem.store.segtree_tables`, relevance propagation over it :mod:`timem.recall.segtree`
(reading the tree through :mod:`timem.store.segtree_view`, each user's internal nodes cached per tree version),
and its optional LLM topic lines :mod:`timem.consolidation.segment_topics`.

The leaves are a user's L1 memories (one utterance each with the default ``l1_unit="turn"``) in
conversation order (:mod:`timem.tree.order`), numbered ``0 .. n-1`` (``seq``). Every internal node
spans a contiguous range of leaves ``[first_seq, last_seq]`` and the event-time span of those
leaves (UTC); its **centroid** is the mean of its leaves' embeddings (MiniLM, ``(dim,)`` float32,
not re-normalised: compatibility is a cosine). No text is stored: a node's text is its span's
utterances.

**Shape.** All leaves sit at height 0 and every child of a height-``h`` node has height ``h-1``
(uniform depth, as in a B+-tree), so "per depth" and "per height" are the same thing. A node has
at most ``max_children`` (``B``) children. The *right frontier* is the path from the root to the
last leaf: ``f_1`` (height 1, the open segment) … ``f_H`` (the root). Only frontier nodes change;
every other node is *closed* and never touched again.

**Insertion** of leaf ``n`` with embedding ``e`` (:meth:`SegTree.insert`):

1. An attach point ``k`` (``1 <= k <= H``: ``f_k``; ``k = H + 1``: a new root) is *admissible* if
   ``f_k`` has room (fewer than ``B`` children; a new root always has room) and every node it
   closes, ``f_j`` for ``j < k``, holds at least ``2^(j-1)`` leaves (the weight rule).
2. The leaf joins the **deepest admissible** ``f_k`` whose centroid has ``cos(e, centroid) >=
   threshold``. For ``k >= 2`` it goes into a fresh chain of new nodes of heights ``k-1 .. 1``
   under ``f_k`` (a new segment that continues ``f_k``'s topic at a coarser grain).
3. If no admissible frontier node is compatible, **a new root is made** (children: the old root
   and a fresh chain of height ``H`` holding the leaf) when that is admissible; otherwise (the tree
   is still too light to grow) the leaf starts a fresh chain under the *highest* admissible
   frontier node (the biggest topic break the weight rule allows).
4. The chosen node and its ancestors (all on the frontier) update ``n_leaves``, ``last_seq``,
   ``span_end`` and the centroid (running mean): ``O(H)``.

Why the weight rule: bounding the fan-out alone does not bound the depth when nodes close early
(an utterance incompatible with everything would make a new root each time: depth ``n``). With
it, every closed node of height ``h`` holds ``>= 2^(h-1)`` leaves (for ``B >= 3`` some attach
point is always admissible: a full ``f_j`` holds ``>= (B-1)·2^(j-2) + 1 >= 2^(j-1)`` leaves), and
the root of a tree of height ``H`` has a closed first child of height ``H-1``, so
``H <= log2(n) + 2``. Nodes touched per insertion: at most ``2H + 1`` (the frontier, the fresh
chain and a new root), i.e. ``O(log n)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from timem.errors import ConfigError, InputError, InvariantError


@dataclass
class SegNode:
    """One internal node (``height >= 1``) or leaf (``height == 0``, ``id`` = the L1 node id).

    ``first_seq``/``last_seq``: inclusive leaf positions in conversation order; ``span_start`` /
    ``span_end``: UTC-aware event times of the first leaf's start and the latest leaf end;
    ``centroid``: mean leaf embedding ``(dim,)`` float32 (``None`` for a leaf: its vector is the L1
    node's); ``n_children``: children in the whole tree.
    """

    id: str
    height: int
    parent_id: str | None
    first_seq: int
    last_seq: int
    span_start: datetime
    span_end: datetime
    n_leaves: int = 1
    n_children: int = 0
    centroid: np.ndarray | None = None

    @property
    def is_leaf(self) -> bool:
        return self.height == 0

    def mean(self) -> np.ndarray:
        """The centroid of an internal node. Raises :class:`InvariantError` for a node without one (a leaf)."""
        if self.centroid is None:
            raise InvariantError(f"segment tree node {self.id!r} (height {self.height}) has no centroid; "
                                 "rebuild the tree with `timem segtree build --rebuild`")
        return self.centroid


@dataclass
class Insertion:
    """What one :meth:`SegTree.insert` did: ``attach`` = height of the node the leaf joined (``H + 1``
    for a new root), ``compatible`` = whether that node passed the cosine test, ``touched`` = ids of
    every node created or changed (the leaf included), in no particular order."""

    attach: int
    compatible: bool
    new_root: bool
    touched: list[str] = field(default_factory=list)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    return float(np.dot(a, b) / (na * nb)) if na > 0 and nb > 0 else 0.0


class SegTree:
    """A user's segment tree (module docstring). Build empty and :meth:`insert`, or resume from the
    stored right frontier with :meth:`from_frontier` (then only the frontier is held in memory).

    Args:
        user_id: the owner; internal node ids are ``seg:<user_id>:<k>`` for ``k = 0, 1, ...``.
        threshold: cosine compatibility threshold in ``[-1, 1]`` (``Config.recall.segtree_threshold``).
        max_children: fan-out bound ``B >= 3`` (``Config.recall.segtree_max_children``).

    Raises:
        ConfigError: ``max_children < 3`` or a threshold outside ``[-1, 1]``.
    """

    def __init__(self, user_id: str, threshold: float, max_children: int) -> None:
        if max_children < 3:
            raise ConfigError(f"segtree_max_children={max_children}: the segment tree needs a fan-out of at "
                              "least 3 to keep its depth logarithmic; set it to 3 or more")
        if not -1.0 <= threshold <= 1.0:
            raise ConfigError(f"segtree_threshold={threshold} is not a cosine; set it within [-1, 1]")
        self.user_id, self.threshold, self.max_children = user_id, float(threshold), int(max_children)
        self.nodes: dict[str, SegNode] = {}
        self.frontier: list[str] = []  #: internal node ids, f_1 (height 1) first, the root last
        self.n = 0  #: leaves inserted
        self.next_id = 0  #: the counter of the next internal node id

    @classmethod
    def from_frontier(cls, user_id: str, threshold: float, max_children: int, frontier: list[SegNode],
                      n: int, next_id: int) -> SegTree:
        """Resume from the stored frontier nodes (any order; heights ``1..H``), ``n`` leaves, id counter."""
        tree = cls(user_id, threshold, max_children)
        for node in sorted(frontier, key=lambda x: x.height):
            tree.nodes[node.id] = node
            tree.frontier.append(node.id)
        tree.n, tree.next_id = n, next_id
        return tree

    @property
    def height(self) -> int:
        """``H``: the root's height (0 for an empty tree)."""
        return len(self.frontier)

    @property
    def root(self) -> str | None:
        return self.frontier[-1] if self.frontier else None

    def _new_node(self, height: int, parent: str | None, seq: int, start: datetime, end: datetime,
                  dim: int) -> SegNode:
        node = SegNode(id=f"seg:{self.user_id}:{self.next_id}", height=height, parent_id=parent, first_seq=seq,
                       last_seq=seq, span_start=start, span_end=end, n_leaves=0, n_children=0,
                       centroid=np.zeros(dim, dtype=np.float32))
        self.next_id += 1
        self.nodes[node.id] = node
        return node

    def _admissible(self, k: int) -> bool:
        """Whether attach point ``k`` (1-based frontier height, ``H + 1`` = new root) is admissible."""
        if k <= self.height and self.nodes[self.frontier[k - 1]].n_children >= self.max_children:
            return False
        return all(self.nodes[self.frontier[j - 1]].n_leaves >= 2 ** (j - 1) for j in range(1, k))

    def insert(self, leaf_id: str, embedding: np.ndarray, start: datetime, end: datetime) -> Insertion:
        """Append the next leaf in conversation order (module docstring, steps 1-4).

        Args:
            leaf_id: the L1 node id (unique in the tree).
            embedding: its vector, ``(dim,)``, finite.
            start / end: its event-time span (UTC-aware).

        Raises:
            InputError: a repeated leaf id, or a non-finite embedding.
        """
        e = np.asarray(embedding, dtype=np.float32)
        if leaf_id in self.nodes:
            raise InputError(f"leaf {leaf_id!r} is already in the segment tree; rebuild it with "
                             "`timem segtree build --user U`", field="leaf_id")
        if e.ndim != 1 or not np.all(np.isfinite(e)):
            raise InputError(f"leaf {leaf_id!r} has no usable embedding (shape {e.shape}); re-embed the memory",
                             field="embedding")
        seq, h = self.n, self.height
        touched: list[str] = [leaf_id]
        if h == 0:  # the first leaf: a root segment
            attach, compatible, new_root = 1, True, True
            top = self._new_node(1, None, seq, start, end, e.shape[0])
            self.frontier = [top.id]
            parent = top
            touched.append(top.id)
        else:
            admissible = [k for k in range(1, h + 2) if self._admissible(k)]
            fits = [k for k in admissible
                    if k <= h and _cos(e, self.nodes[self.frontier[k - 1]].mean()) >= self.threshold]
            if fits:
                attach, compatible = fits[0], True
            elif h + 1 in admissible:
                attach, compatible = h + 1, False
            else:
                attach, compatible = max(admissible), False
            new_root = attach == h + 1
            if new_root:
                old = self.nodes[self.frontier[-1]]
                top = self._new_node(h + 1, None, old.first_seq, old.span_start, old.span_end, e.shape[0])
                top.n_leaves, top.n_children, top.centroid = old.n_leaves, 1, old.mean().copy()
                old.parent_id = top.id
                self.frontier.append(top.id)
                touched += [top.id, old.id]
            parent = self.nodes[self.frontier[attach - 1]]
            chain: list[str] = []
            for height in range(attach - 1, 0, -1):  # fresh nodes of heights attach-1 .. 1
                child = self._new_node(height, parent.id, seq, start, end, e.shape[0])
                parent.n_children += 1
                chain.append(child.id)
                parent = child
            touched += chain
            self.frontier = chain[::-1] + self.frontier[attach - 1:]
        parent.n_children += 1
        self.nodes[leaf_id] = SegNode(id=leaf_id, height=0, parent_id=parent.id, first_seq=seq, last_seq=seq,
                                      span_start=start, span_end=end)
        for nid in self.frontier:  # the leaf's ancestors: running mean, range and span end
            node = self.nodes[nid]
            node.centroid = (node.mean() * node.n_leaves + e) / (node.n_leaves + 1)
            node.n_leaves += 1
            node.last_seq = seq
            node.span_end = max(node.span_end, end)
            if nid not in touched:
                touched.append(nid)
        self.n += 1
        return Insertion(attach=attach, compatible=compatible, new_root=new_root, touched=touched)

    def children(self) -> dict[str, list[str]]:
        """Children per node id in leaf order (complete only for a tree built in memory)."""
        out: dict[str, list[str]] = {}
        for node in sorted(self.nodes.values(), key=lambda x: (x.first_seq, -x.height)):
            if node.parent_id is not None:
                out.setdefault(node.parent_id, []).append(node.id)
        return out


def depth_bound(n: int) -> float:
    """The proven bound on the root height for ``n >= 1`` leaves: ``log2(n) + 2``."""
    return math.log2(max(n, 1)) + 2
