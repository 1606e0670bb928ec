"""Relevance propagation over the segment tree (``Config.recall.recall_index = "segtree"``; arXiv 2606.04555).

The same propagation as over the TiMem tree (:func:`timem.recall.propagation.propagate_relevance`,
unchanged: ``s̃ = s⁽⁰⁾ + Σ αᵏ s⁽ᵏ⁾`` with the row-normalised ``W_P``), with other edges and local scores:

* **edges**: the segment tree's (leaf -> height-1 segment -> ... -> root); with ``H`` hops only
  heights ``1..H`` can reach a leaf, so only those are scored;
* **internal node** ``v`` of height ``h``: ``λ · cos(question, centroid(v))`` (max-normalised over the
  scored nodes of height ``h``) ``+ (1 − λ) ·`` the largest raw BM25 among the candidate leaves
  under ``v`` (max-normalised likewise), i.e. :func:`timem.recall.leaves.fuse` per height, then
  normalised per height by its maximum. Scored nodes: the ``recall_candidates // 2`` closest
  centroids of each height, and every ancestor of a candidate leaf;
* **leaves** keep their fused leaf score (normalised by the maximum), as over the TiMem tree;
* **routing**: the leaves of the ``propagation_route`` best height-1 segments join the candidates
  (cosine from their stored vectors, BM25 0), as the best sessions' children do over the TiMem tree.

The tree is brought in step first when its leaf count or settings differ from the store
(:func:`timem.store.segtree_tables.sync`; a write), except while the user has a queued consolidation job, which
syncs it: then the stored tree is used as it is (:func:`ensure`). Nodes that start after the
question time are not scored; a node that spans it keeps its centroid over all its leaves.

Reads (:mod:`timem.store.segtree_view`): the version check, the candidate leaves' rows, the exact centroid
cosines of the shortlisted and ancestor nodes, the routed leaves, their vectors: five DuckDB queries
at most whatever the tree's depth (was about ten); the internal nodes come from a cache kept per tree
version, reloaded in one query by the first recall after a write (and a lazy sync, if due, before).
"""

from __future__ import annotations

from typing import Any

from timem.config import Config
from timem.errors import StoreError
from timem.recall.fusion import max_normalise
from timem.recall.leaves import LeafSelection, fused_scores, rerank
from timem.recall.propagation import direction_of, propagate_relevance, with_routed
from timem.recall.state import RecallState
from timem.store.ports import MemoryStore
from timem.store.segtree_tables import SyncReport
from timem.tokens import counted


def ensure(store: MemoryStore, config: Config, user_id: str
           ) -> tuple[SyncReport | None, tuple[Any, ...], str | None]:
    """Sync the user's segment tree if it is not current (:func:`timem.store.segtree_tables.version`); returns what
    the sync did (``None``: nothing to do), the tree's version, and a note when the stored tree is used as it is.

    A tree behind only by appended L1 memories is used as it is while the user has a queued consolidation job
    (a live write acknowledged before its consolidation): that job syncs it (issue 26: no tree sync in the recall
    after a write). The new memories are still leaf candidates; they take no part in the propagation until then.
    """
    rc = config.recall
    stored = store.segment_tree.stored_version(user_id, rc.segtree_threshold, rc.segtree_max_children)
    if stored is not None and stored[1] == 0:
        return None, stored[0], None
    if stored is not None and store.open_jobs(user_id) > 0:
        return None, stored[0], (f"segment tree {stored[1]} leaves behind the L1 memories: propagation over the "
                                 "stored tree; the queued consolidation syncs it")
    report = store.segment_tree.sync(user_id, config.recall.segtree_threshold, config.recall.segtree_max_children)
    current = store.segment_tree.version(user_id, config.recall.segtree_threshold, config.recall.segtree_max_children)
    if current is None:
        raise StoreError(f"the segment tree of {user_id} is not current right after a sync; rebuild it with "
                         f"`timem segtree build --user {user_id} --rebuild`")
    return report, current, None


def propagate_segtree(state: RecallState, selection: LeafSelection, top_k: int
                      ) -> tuple[LeafSelection, dict[str, float]]:
    """Re-rank the leaf selection by relevance propagated over the segment tree (module docstring), scored with
    the state's question embedding; routed leaves and scored nodes starting after ``state.question_time`` are
    left out.

    Args:
        selection: the leaf candidates of :func:`timem.recall.leaves.select_leaves`.
        top_k: leaves to keep.

    Returns:
        The new selection (each candidate's ``local`` and ``propagated`` set, a note added) and the
        local score of every internal node that took part (for the trace).
    """
    store, config, user_id, question_time = state.store, state.config, state.user_id, state.question_time
    query_vec = state.query_vector()
    synced, tree_version, behind = ensure(store, config, user_id)
    hops = config.recall.propagation_hops
    cands = {c.node_id: c for c in selection.candidates}
    view = store.segment_tree.view(user_id, tree_version, list(cands), query_vec,
                                   max(1, config.recall.recall_candidates // 2), question_time, hops)
    top = view.top
    info = view.lineage(cands)
    height = {i: h for i, h, _ in top} | {i: v[1] for i, v in info.items()}
    cosine = {i: c for i, _, c in top} | {i: v[3] for i, v in info.items() if v[3] is not None}
    best_bm25: dict[str, float] = {}
    for c in selection.candidates:  # the largest raw BM25 of a candidate leaf under each internal node
        if c.bm25_raw is None or c.node_id not in info:
            continue
        p = info[c.node_id][0]
        while p is not None and p in info:
            best_bm25[p] = max(best_bm25.get(p, 0.0), c.bm25_raw)
            p = info[p][0]
    upper: dict[str, float] = {}
    for h in range(1, hops + 1):
        sem = {i: v for i, v in cosine.items() if height.get(i) == h}
        lex = {i: v for i, v in best_bm25.items() if height.get(i) == h}
        upper.update(max_normalise(fused_scores(sem, lex, config.recall.recall_lambda)))
    if not upper:
        note = f"segment tree of {user_id} has no node within {hops} hop(s) of a leaf: no relevance propagation"
        return selection._replace(notes=[*selection.notes, note]), {}
    routed: list[str] = []
    if config.recall.propagation_route > 0:
        segments = sorted((i for i in upper if height[i] == 1), key=lambda i: (-upper[i], i))
        under = view.leaves_under(segments[: config.recall.propagation_route])  # from the cached index
        routed = [i for i, _, _, start in under if i not in cands and start <= question_time]
        if routed:  # the chat message being answered, a bare "don't know", a question asked again: no memory
            routed = [x.id for x in store.nodes(user_id=user_id, ids=routed) if not state.unseen(x)]
        view.leaves.update({i: (p, n) for i, p, n, _ in under if i in routed})
    if routed:
        cands = with_routed(store, config, selection, routed, query_vec, user_id)
        info.update(view.lineage(routed))
    tree_ids = set(info) | set(upper)
    missing = [i for i in upper if i not in info]  # scored by centroid only: their parents, for the edges
    if missing:
        info.update({k: v for k, v in view.lineage(missing).items() if k not in info})
    parent = {i: info[i][0] for i in tree_ids if i in info}
    n_children = {i: info[i][2] for i in tree_ids if i in info}
    local = {**upper, **max_normalise({i: c.fused for i, c in cands.items()})}
    total = propagate_relevance(local, parent, n_children, direction_of(config), hops, config.recall.propagation_alpha)
    ranked = rerank(list(cands.values()), top_k, [{"local": round(local.get(i, 0.0), 6),
                                                   "propagated": round(total.get(i, 0.0) - local.get(i, 0.0), 6),
                                                   "fused": round(total.get(i, 0.0), 6)} for i in cands])
    best = sorted(upper, key=lambda i: (-upper[i], i))[:3]
    built = "" if synced is None else (f"; segment tree {'rebuilt' if synced.rebuilt else 'extended'} "
                                       f"({synced.added} leaves)")
    notes = [*selection.notes,
             f"relevance propagation {config.recall.propagation} over the segment tree (SegTreeMem index, "
             f"θ={config.recall.segtree_threshold}, B={config.recall.segtree_max_children}), H={hops}, "
             f"α={config.recall.propagation_alpha}: "
             f"{len(upper)} segment-tree nodes scored (best: "
             + ", ".join(f"{i} h{height[i]} {upper[i]:.3f}" for i in best)
             + f"), {counted(len(routed), 'leaf', 'leaves')} routed in{built}",
             *([behind] if behind else [])]
    return (LeafSelection(ranked, [c for c in ranked if c.kept], selection.bm25_query, selection.time, notes),
            {i: round(v, 6) for i, v in upper.items()})
