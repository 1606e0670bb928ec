"""SegTreeMem relevance propagation over the Temporal Memory Tree (arXiv 2606.04555, Algorithm 2).

Every candidate node on every level gets a **local** score ``s⁽⁰⁾`` (the fused score of its
level, normalised per level by its maximum). Scores then flow for ``H`` hops over the tree
edges with the row-normalised transition matrix ``W_P``::

    s⁽ᵏ⁾ = W_P · s⁽ᵏ⁻¹⁾,        s̃ = s⁽⁰⁾ + Σ_{k=1..H} αᵏ · s⁽ᵏ⁾

* ``top-down``: a node's row has one edge, to its parent, so ``s⁽ᵏ⁾[leaf] = s⁽ᵏ⁻¹⁾[parent]``: a
  leaf in a relevant session (day, week) gains; the upper levels route to leaves.
* ``bottom-up``: a node's row has an edge to each child, ``s⁽ᵏ⁾[parent] = mean of its children``
  (over all its children: a child outside the candidates counts 0).
* ``both``: parent and children, each ``1 / (number of edges)``.

``H = 0`` is collapsed (flat) retrieval: ``s̃ = s⁽⁰⁾``. The paper found top-down best on LoCoMo.
:func:`propagate_relevance` is pure; :func:`propagate_leaves` applies it to leaf selection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np

from timem.config import Config
from timem.models import Level
from timem.recall.fusion import max_normalise
from timem.recall.leaves import Candidate, LeafSelection, fuse, fused_scores, rerank
from timem.recall.state import RecallState
from timem.store.ports import MemoryStore
from timem.tokens import counted

Direction = Literal["top-down", "bottom-up", "both"]


def direction_of(config: Config) -> Direction:
    """``config.recall.propagation`` as a direction. Raises ValueError when it is "off" (callers check that first)."""
    if config.recall.propagation == "off":
        raise ValueError("unknown propagation direction 'off'; use top-down, bottom-up or both")
    return config.recall.propagation


def propagate_relevance(local: Mapping[str, float], parent: Mapping[str, str | None],
                        n_children: Mapping[str, int], direction: Direction, hops: int, alpha: float
                        ) -> dict[str, float]:
    """``s̃`` for every node of the (sub)tree (formula in the module docstring).

    Args:
        local: ``s⁽⁰⁾`` per node id; nodes of the tree without a local score count 0.
        parent: parent id per node id (``None`` or absent for a root); defines the edges.
        n_children: each node's number of children in the whole tree (row normalisation of the
            bottom-up edges); children absent from ``parent`` contribute 0.
        hops: ``H >= 0``.
        alpha: ``α`` in ``[0, 1]``.

    Raises:
        ValueError: an unknown direction or a negative ``hops``.
    """
    if direction not in ("top-down", "bottom-up", "both"):
        raise ValueError(f"unknown propagation direction {direction!r}; use top-down, bottom-up or both")
    if hops < 0:
        raise ValueError("propagation hops must be >= 0")
    ids = sorted({*local, *parent, *(p for p in parent.values() if p)})
    kids: dict[str, list[str]] = {}
    for c, p in parent.items():
        if p:
            kids.setdefault(p, []).append(c)
    down, up = direction in ("top-down", "both"), direction in ("bottom-up", "both")
    s = {i: float(local.get(i, 0.0)) for i in ids}
    total = dict(s)
    for k in range(1, hops + 1):
        nxt = {}
        for i in ids:
            acc, deg = 0.0, 0
            if down and parent.get(i):
                acc += s[parent[i]]  # type: ignore[index]
                deg += 1
            if up:
                acc += sum(s[c] for c in kids.get(i, ()))
                deg += max(n_children.get(i, 0), len(kids.get(i, ())))
            nxt[i] = acc / deg if deg else 0.0
        s = nxt
        for i in ids:
            total[i] += alpha ** k * s[i]
    return total


def with_routed(store: MemoryStore, config: Config, selection: LeafSelection, routed: Sequence[str],
                query_vec: np.ndarray, user_id: str | None = None) -> dict[str, Candidate]:
    """The selection's candidates plus the ``routed`` leaves, by id, all re-fused from raw cosine and BM25.

    A routed leaf gets its cosine with ``query_vec`` (shape ``(dim,)``, unit length) and no BM25; the
    existing candidates keep their own entries (with their time and speaker adjustments). With ``user_id`` (whose
    leaves they are) their vectors come from the user's in-memory L1 copy where it holds them (``Store.embeddings``).
    """
    vecs = store.embeddings(list(routed), user_id=user_id)
    sem = {c.node_id: c.cosine for c in selection.candidates if c.cosine is not None}
    sem.update({i: float(np.dot(v, query_vec)) for i, v in vecs.items()})
    lex = {c.node_id: c.bm25_raw for c in selection.candidates if c.bm25_raw is not None}
    base = {c.node_id: c for c in fuse(sem, lex, config.recall.recall_lambda)}
    base.update({c.node_id: c for c in selection.candidates})
    return base


def propagate_leaves(state: RecallState, selection: LeafSelection, top_k: int
                     ) -> tuple[LeafSelection, dict[str, float]]:
    """Re-rank leaf selection by propagated relevance (``Config.recall.propagation``); returns the new selection
    and the local score of every upper-level node that took part (for the trace).

    Upper levels 2..min(5, 1 + H) are searched like L1 (higher ones cannot reach a leaf in H hops)
    (top ``recall_candidates // 2`` by cosine and by BM25,
    fused with λ, normalised per level). The children of the ``propagation_route`` best L2 nodes
    join the leaf candidates (their cosine from the stored vectors; BM25 0), so the upper levels act
    as an index that routes to leaves the flat search missed. The upper levels are searched with the leaf
    selection's BM25 query and the state's question embedding; nodes starting after the question time are
    left out.
    """
    store, config, user_id = state.store, state.config, state.user_id
    query, query_vec = selection.bm25_query, state.query_vector()
    n = max(1, config.recall.recall_candidates // 2)
    upper: dict[str, float] = {}
    # with H hops, scores from more than H levels above a leaf never reach it (top-down); bottom-up and
    # both still only use levels within H of the leaves for what they return (leaves)
    for level in range(2, min(5, 1 + config.recall.propagation_hops) + 1):
        vec = dict(store.search_vector(user_id, query_vec, level, n))
        lex = dict(store.search_bm25(user_id, query, level, n))
        upper.update(max_normalise(fused_scores(vec, lex, config.recall.recall_lambda)))
    if not upper:
        return selection, {}
    cands = {c.node_id: c for c in selection.candidates}
    routed: list[str] = []
    if config.recall.propagation_route > 0:
        sessions = [x for x in store.nodes(user_id=user_id, ids=list(upper)) if int(x.level) == int(Level.SESSION)]
        sessions.sort(key=lambda x: (-upper[x.id], x.id))
        routed = [c for x in sessions[: config.recall.propagation_route] for c in x.child_ids if c not in cands]
    if routed:
        cands = with_routed(store, config, selection, routed, query_vec, user_id)
    nodes, parent = store.lineage(user_id, list(cands), 5)
    # a routed leaf from after the question never becomes a candidate
    cands = {i: c for i, c in cands.items() if i in nodes and not state.unseen(nodes[i])}
    n_children = {i: len(x.child_ids) for i, x in nodes.items()}
    local = {**{i: v for i, v in upper.items() if i in nodes}, **max_normalise({i: c.fused for i, c in cands.items()})}
    total = propagate_relevance(local, parent, n_children, direction_of(config), config.recall.propagation_hops,
                                config.recall.propagation_alpha)
    ranked = rerank(list(cands.values()), top_k, [{"local": round(local.get(i, 0.0), 6),
                                                   "propagated": round(total.get(i, 0.0) - local.get(i, 0.0), 6),
                                                   "fused": round(total.get(i, 0.0), 6)} for i in cands])
    rc = config.recall
    notes = [*selection.notes, f"relevance propagation {rc.propagation}, H={rc.propagation_hops}, "
             f"α={rc.propagation_alpha}: {len(upper)} upper nodes scored, "
             f"{counted(len(routed), 'leaf', 'leaves')} routed in"]
    return (LeafSelection(ranked, [c for c in ranked if c.kept], selection.bm25_query, selection.time, notes),
            {i: round(v, 6) for i, v in upper.items()})
