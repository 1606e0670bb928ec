"""The hybrid leaf score's arithmetic (TiMem §3.3): max-normalised semantic and BM25 components, fused as
``s = λ·semantic + (1 − λ)·bm25``. Pure functions over ``{node id: raw score}`` mappings; leaf selection
(:mod:`timem.recall.leaves`) builds its candidates from them and contextual matching
(:mod:`timem.recall.contextual`) picks its best hits with them, so the two share one order."""

from __future__ import annotations

from collections.abc import Mapping


def max_normalise(scores: Mapping[str, float]) -> dict[str, float]:
    """``max(0, x) / max`` over the values (the one max-normaliser of recall: the leaf fusion's per-channel scores,
    SegTreeMem's per-level local scores); all zeros when the maximum is not positive."""
    top = max((v for v in scores.values()), default=0.0)
    if top <= 0:
        return dict.fromkeys(scores, 0.0)
    return {k: max(0.0, v) / top for k, v in scores.items()}


def fused_order(semantic: Mapping[str, float], bm25: Mapping[str, float], lam: float
                ) -> list[tuple[float, float, float, str]]:
    """``(fused, semantic, bm25, id)`` of every id of either mapping, normalised and unrounded, best first.

    ``semantic``: id -> raw cosine (negative counts as 0); ``bm25``: id -> raw BM25 score; ``lam``: weight λ of the
    semantic component in ``[0, 1]``. Order: fused descending, then semantic descending, then id; a component an id
    lacks counts 0."""
    sem, lex = max_normalise(semantic), max_normalise(bm25)
    ids = list(dict.fromkeys([*semantic, *bm25]))
    scored = [(lam * s + (1 - lam) * b, s, b, i) for i in ids for s, b in ((sem.get(i, 0.0), lex.get(i, 0.0)),)]
    scored.sort(key=lambda t: (-t[0], -t[1], t[3]))
    return scored
