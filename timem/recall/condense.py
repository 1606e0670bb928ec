"""Condensed context: after the best leaves, later memories keep only their passage that bears on the question.

Issue 23 (scattered evidence at a small budget). The context is filled in priority order (each leaf by rank,
then the neighbour turn it pulled; :func:`timem.recall.gating.apply_budget`). With
``Config.recall.condense_after = N``, the first ``N`` leaves and their neighbour turns keep their whole text;
every later leaf is cut to its passage that bears on the question within ``condense_leaf_tokens`` cl100k tokens
and every later neighbour turn within ``condense_neighbour_tokens`` (:func:`timem.recall.context.best_passage`:
the best sentence, neighbours added while they fit, cuts marked ``…``, speaker and date kept). A sentence bears
on the question when it shares a content word with it: Porter stems (NLTK), scikit-learn's English stop words,
the question's person names and words of one or two letters left out, so "camped" finds "camping" and "Hey
Melanie!" matches nothing; that sentence is kept whole even past the cap. A memory with no such sentence (it
came by meaning) keeps its opening within the cap; keeping it whole instead cost 1.3 points of full coverage
and one answer at 500 tokens. So the answer of a single-turn question stays whole, and a question whose
evidence is scattered gets more distinct turns into the same budget.

When the budget is not full after the fill (the gate kept fewer memories, or the next one did not fit),
:func:`refill` gives the cut memories in the context their whole text back, best first, while it fits
(``Config.recall.condense_refill``): the set of memories is the same, with more of their words.

Measured on LoCoMo dev (``bench/results/scattered-evidence.md``); the whole-text form is
``condense_after = "off"`` (recipe ``whole-context``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import tzinfo
from functools import lru_cache

from timem.models import MemoryNode
from timem.recall.context import (
    Layout,
    best_passage,
    content_tokens,
    count_context_tokens,
    quarter_passage,
    render_context,
)
from timem.recall.density import CaptionForm, with_captions
from timem.tokens import content_stems, count_tokens


def passage(node: MemoryNode, question: str, stems: set[str], max_tokens: int) -> MemoryNode:
    """``node`` cut to its passage of about ``max_tokens`` cl100k tokens around its sentence sharing the most of
    ``stems`` (the question's content stems, :func:`timem.tokens.content_stems`); that sentence is kept whole. A
    memory with no such sentence keeps its opening within ``max_tokens`` (it reached the context by meaning, not
    by a shared word). Unchanged when it already fits."""
    if content_tokens(node) <= max_tokens:
        return node
    if not stems & _stems_of(node.content):
        return best_passage(node, question, max_tokens)
    return best_passage(node, question, max_tokens, score=lambda sent: len(stems & _stems_of(sent)),
                        whole_sentence=True)


@lru_cache(maxsize=16384)
def _stems_of(text: str) -> frozenset[str]:
    """:func:`timem.tokens.content_stems` of a memory or one of its sentences, cached by text (a memory is cut again
    for most questions that recall it)."""
    return frozenset(content_stems(text))


def condense(nodes: Mapping[str, MemoryNode], ranked_leaves: Sequence[str], neighbours: Sequence[tuple[str, str, str]],
             question: str, stems: set[str], full_leaves: int, leaf_tokens: int, neighbour_tokens: int,
             captions: CaptionForm | None = None) -> tuple[dict[str, MemoryNode], dict[str, int]]:
    """Cut the memories after the best leaves: every leaf after the first ``full_leaves`` of ``ranked_leaves`` (ids,
    best first) to its :func:`passage` of about ``leaf_tokens`` cl100k tokens, and every neighbour turn
    (``(leaf, neighbour, reason)`` triples) not pulled by one of those first leaves to ``neighbour_tokens``; a
    memory that is a leaf takes the leaf cap. ``stems``: the question's :func:`timem.tokens.content_stems` (its
    person names left out). Other memories (ancestors) and a memory that already fits its cap are unchanged.
    ``captions``: when given, the photo captions of the memories cut here that share no stem of ``stems`` are left
    out first, the others shown in that form (:func:`timem.recall.density.shown_captions`).

    Returns:
        ``(nodes with the cut memories replaced, {id of each cut memory: its cap})``; the input is not modified.
    """
    whole = set(ranked_leaves[:full_leaves])
    whole |= {nid for leaf, nid, _ in neighbours if leaf in whole}
    leaves = set(ranked_leaves)
    pulled = {nid for _, nid, _ in neighbours}
    out, caps = dict(nodes), {}
    for nid, node in nodes.items():
        if nid in whole or (nid not in leaves and nid not in pulled):
            continue
        cap = leaf_tokens if nid in leaves else neighbour_tokens
        shown = node if captions is None else with_captions(node, captions, stems)
        cut = passage(shown, question, stems, cap)
        if cut is not node:
            out[nid] = cut
        if cut is not shown:
            caps[nid] = cap
    return out, caps


def refill(chosen: Sequence[MemoryNode], nodes: Mapping[str, MemoryNode], caps: dict[str, int], question: str,
           budget: int, tz: tzinfo, layout: Layout, text: str, tokens: int) -> tuple[list[MemoryNode], str, int]:
    """Give the cut memories of a filled context their whole text back, best first, while it fits ``budget``.

    Args:
        chosen: the context's memories in priority order (best first), as :func:`condense` and the budget left them.
        nodes: every memory as stored, by id (one longer than a quarter of the budget comes back as
            :func:`timem.recall.context.quarter_passage`, as the fill shows it).
        caps: the cut memories' caps by id (:func:`condense`); the restored ones are removed from it.
        budget: the context's budget in cl100k tokens; ``text``, ``tokens``: the filled context and its count.
        tz, layout: how the context is rendered (:func:`timem.recall.context.render_context`).

    Returns:
        ``(memories in the same order, context text, its cl100k token count)``; unchanged when nothing fits.
    """
    out = list(chosen)
    for i, node in enumerate(out):
        if node.id not in caps or node.id not in nodes or tokens >= budget:
            continue
        full = quarter_passage(nodes[node.id], question, budget)
        if count_tokens(full.content) - count_tokens(node.content) > budget - tokens + 4:  # cheap check, with slack
            continue
        trial = [*out[:i], full, *out[i + 1:]]
        trial_text = render_context(trial, tz, layout)
        n = count_context_tokens(trial_text)  # = count_tokens(trial_text), line by line from the cache
        if n <= budget:
            out, text, tokens = trial, trial_text, n
            del caps[node.id]
    return out, text, tokens
