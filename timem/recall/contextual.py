"""Contextual segment matching (issue 23): an L1 leaf is also scored on its neighbouring turns.

A reply often answers a question whose words are in the turn before it ("Caroline: What do you use the new
shoes for?" / "Melanie: Running, mostly."), so the reply alone matches neither the question's words nor its
meaning. With ``Config.recall.context_weight`` γ > 0, before fusion each L1 candidate's raw scores become

    cosine'(x) = cosine(x) + γ · max(cosine(y) for y in its neighbours)
    bm25'(x)   = bm25(x)   + γ · max(bm25(y)   for y in its neighbours)

where a neighbour is the previous, the next, or either L1 segment of the same session
(``Config.recall.context_side``: ``"prev"``, ``"next"``, ``"both"``; :meth:`MemoryStore.adjacent_segments`). The
neighbours of the search hits join the candidates: their own cosine comes from the stored vector, their own BM25
score is 0 (they were not in the BM25 top list). A lexical-only hit keeps an own cosine of 0, as without this
stage. Scores are "higher is better"; nothing is embedded, and neighbours after the question time never join.

The blended scores rank the leaves (fusion); the score gate reads each leaf's own raw scores
(:attr:`Candidate.cosine`, :attr:`Candidate.bm25_raw`), so a neighbour does not lend a leaf its keyword match: a
joined reply reaches the context on its own cosine, and an acknowledgement next to a keyword hit does not.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Literal, NamedTuple

import numpy as np

from timem.models import MemoryNode
from timem.recall.fusion import fused_order
from timem.recall.state import RecallState
from timem.tokens import counted

Side = Literal["prev", "next", "both"]


class Contextual(NamedTuple):
    vec_hits: dict[str, float]  #: node id -> cosine' (the hits and the neighbours that joined)
    lex_hits: dict[str, float]  #: node id -> bm25' (non-zero entries only)
    own_cosine: dict[str, float]  #: node id -> its own cosine (the vector hits' and the joined neighbours')
    joined: set[str]  #: the neighbours that joined the candidates (no search found them)
    note: str | None  #: for the recall trace's notes (``None`` when no neighbour joined)


def neighbour_map(adjacent: Mapping[str, tuple[str | None, str | None]], side: Side) -> dict[str, set[str]]:
    """Who takes scores from whom, from ``adjacent`` (node id -> ``(previous, next)`` segment): with ``"prev"``
    a node takes from its previous segment (and a hit's next segment takes from the hit), with ``"next"`` from its
    next one, with ``"both"`` from either. Pure."""
    takes: dict[str, set[str]] = defaultdict(set)
    for h, (p, n) in adjacent.items():
        if side in ("prev", "both"):
            if p:
                takes[h].add(p)
            if n:
                takes[n].add(h)
        if side in ("next", "both"):
            if n:
                takes[h].add(n)
            if p:
                takes[p].add(h)
    return dict(takes)


def blend(own: Mapping[str, float], takes: Mapping[str, set[str]], ids: list[str], weight: float) -> dict[str, float]:
    """``own[x] + weight · max(own[y] for y in takes[x])`` for each ``x`` of ``ids`` (a missing score counts 0,
    negative neighbour scores add nothing); ids whose result is 0 and that ``own`` lacks are left out. Pure."""
    out: dict[str, float] = {}
    for x in ids:
        extra = max((own.get(y, 0.0) for y in takes.get(x, ())), default=0.0)
        value = own.get(x, 0.0) + weight * max(0.0, extra)
        if x in own or value > 0:
            out[x] = value
    return out


def _best_hits(vec_hits: Mapping[str, float], lex_hits: Mapping[str, float], lam: float, k: int) -> set[str]:
    """The ``k`` search hits with the best fused own scores (:func:`timem.recall.fusion.fused_order`)."""
    return {i for _, _, _, i in fused_order(vec_hits, lex_hits, lam)[:k]}


def contextual_scores(state: RecallState, vec_hits: Mapping[str, float], lex_hits: Mapping[str, float],
                      nodes: dict[str, MemoryNode], query_vec: np.ndarray) -> Contextual:
    """The candidates' raw scores blended with their neighbours' (see the module docstring).

    ``nodes``: the hits' nodes by id; the neighbours that join are added to it (one store read, user filter in
    SQL), and those the state does not see (:meth:`RecallState.unseen`: after the question) are left out.
    ``query_vec``: the question's unit vector ``(dim,)``.
    """
    store, user_id, rc = state.store, state.user_id, state.config.recall
    hits = list(dict.fromkeys([*vec_hits, *lex_hits]))
    takes = neighbour_map(store.adjacent_segments(user_id, hits), rc.context_side)
    new = [x for x in takes if x not in nodes]
    if new:
        nodes.update({x.id: x for x in store.nodes(user_id=user_id, ids=new)})
    joined = [x for x in new if x in nodes and not state.unseen(nodes[x])]
    takes = {x: {y for y in ys if y in nodes and not state.unseen(nodes[y])} for x, ys in takes.items()
             if x in nodes and not state.unseen(nodes[x])}
    cos = dict(vec_hits)
    vecs = store.embeddings(joined, user_id=user_id) if joined else {}
    cos.update({i: float(np.dot(v, query_vec)) for i, v in vecs.items()})
    if rc.context_join > 0 and joined:  # only the best hits' neighbours join (each hit still takes from all)
        best = _best_hits(vec_hits, lex_hits, rc.recall_lambda, rc.context_join)
        joined = [x for x in joined if takes.get(x, set()) & best]
    ids = [*hits, *joined]
    sem = blend(cos, takes, ids, rc.context_weight)
    lex = blend(lex_hits, takes, ids, rc.context_weight)
    note = (f"contextual matching ({rc.context_side}, weight {rc.context_weight:g}): "
            f"{counted(len(joined), 'neighbour joined', 'neighbours joined')} the candidates") if joined else None
    return Contextual(sem, lex, cos, set(joined), note)
