"""Condensed context: after the best leaves, later memories keep only their passage that bears on the question.

Issue 23 (scattered evidence at a small budget). The context is filled in priority order (each leaf by rank,
then the neighbour turn it pulled; :func:`timem.recall.gating.apply_budget`). With
``Config.recall.condense_after = N``, the first ``N`` leaves and their neighbour turns keep their whole text;
every later leaf is cut to its passage most relevant to the question within ``condense_leaf_tokens`` cl100k
tokens and every later neighbour turn within ``condense_neighbour_tokens``
(:func:`timem.recall.context.best_passage`: question-word overlap picks the sentence, neighbours are added
while they fit, cuts marked ``…``, speaker and date kept). So the answer of a single-turn question stays whole,
and a question whose evidence is scattered gets more distinct turns into the same budget.

Measured on LoCoMo dev (``bench/results/scattered-evidence.md``), N = 4 with 40 / 25 tokens and the
``"relevant"`` neighbour rule (the defaults) against whole memories and the next turn after every leaf: full
coverage 68.8 -> 70.6 % at 500 tokens and 73.6 -> 78.8 % at 1,000, answer-in-context 37.2 -> 38.1 % and
39.0 -> 39.8 %. Cutting from the first memory on (N = 0) raised coverage more at 500 tokens (74.0 %) but lost
answer words (answer-in-context 27.7 %).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from timem.models import MemoryNode
from timem.recall.context import best_passage


def condense(nodes: Mapping[str, MemoryNode], ranked_leaves: Sequence[str], neighbours: Sequence[tuple[str, str, str]],
             question: str, full_leaves: int, leaf_tokens: int, neighbour_tokens: int) -> dict[str, MemoryNode]:
    """``nodes`` with every leaf after the first ``full_leaves`` of ``ranked_leaves`` (ids, best first) cut to its
    passage of at most ``leaf_tokens`` cl100k tokens, and every neighbour turn (``(leaf, neighbour, reason)``
    triples) not pulled by one of those first leaves cut to ``neighbour_tokens``; a memory that is a leaf takes the
    leaf cap. Other memories (ancestors) are unchanged, and so is any memory that already fits its cap.
    Returns a new dict; the input is not modified."""
    whole = set(ranked_leaves[:full_leaves])
    whole |= {nid for leaf, nid, _ in neighbours if leaf in whole}
    leaves = set(ranked_leaves)
    pulled = {nid for _, nid, _ in neighbours}
    out = dict(nodes)
    for nid, node in nodes.items():
        if nid in whole:
            continue
        if nid in leaves:
            out[nid] = best_passage(node, question, leaf_tokens)
        elif nid in pulled:
            out[nid] = best_passage(node, question, neighbour_tokens)
    return out
