"""Near-duplicate collapse among leaf candidates (so repeated memories do not crowd out distinct facts).

A memory said forty times ("Reminder: I am allergic to peanuts.") would otherwise fill the top k and
the token budget, and the one distinct fact ranked 41st ("... also allergic to penicillin") would
never reach the context. Before the top-k cut, candidates are walked in fused-score order; one whose
words match an earlier (better-ranked) candidate's is marked ``duplicate_of`` that candidate and
takes no top-k slot (:func:`timem.recall.leaves.rerank`). The trace shows it: "dropped: near-duplicate
of <id>".

Match rule: the lower-cased word sequences (``\\w+``, speaker included, the verbatim date line
excluded) are equal, or, for memories of at least ``MIN_WORDS`` words, the Jaccard similarity of
their word sets is at least ``Config.recall.near_duplicate_jaccard`` (0.9 by default; 1.0 = exact repeats
only; the collapse is off with ``Config.recall.near_duplicates = "keep"``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from itertools import chain

from timem.models import MemoryNode
from timem.recall.context import content_lines

_WORDS = re.compile(r"\w+", re.UNICODE)
MIN_WORDS = 5


def _words(node: MemoryNode) -> tuple[tuple[str, ...], frozenset[str], tuple[str, ...]]:
    """The node's lower-cased words (without the verbatim date line), their set, and the set sorted."""
    return _content_words(node.content)


@lru_cache(maxsize=8192)
def _content_words(content: str) -> tuple[tuple[str, ...], frozenset[str], tuple[str, ...]]:
    ws = tuple(_WORDS.findall(" ".join(content_lines(content)).lower()))
    bag = frozenset(ws)
    return ws, bag, tuple(sorted(bag))


def near_duplicates(ranked_ids: Sequence[str], nodes: Mapping[str, MemoryNode], jaccard: float) -> dict[str, str]:
    """``{duplicate id: id of the better-ranked memory it repeats}`` over ``ranked_ids`` (best first).

    Args:
        ranked_ids: candidate node ids in rank order; ids missing from ``nodes`` are ignored.
        jaccard: word-set Jaccard threshold in ``(0, 1]`` for memories of ``MIN_WORDS``+ words.

    Exact repeats are found by a dict; Jaccard pairs by prefix filtering (Chaudhuri et al. 2006,
    Bayardo et al. 2007 "All-Pairs"): words ordered rarest first over the pool, a set of size n
    indexed by its first ``n − ⌈j·n⌉ + 1`` words, so two sets with Jaccard ≥ j always share an
    indexed word and only those pairs are compared (well under a millisecond for 160 candidates).
    """
    words = {nid: _words(nodes[nid]) for nid in dict.fromkeys(ranked_ids) if nid in nodes}
    df = Counter(chain.from_iterable(bag for _, bag, _ in words.values()))
    exact: dict[tuple[str, ...], str] = {}
    index: dict[str, list[str]] = {}
    bags: dict[str, frozenset[str]] = {}
    out: dict[str, str] = {}
    for nid, (ws, bag, alphabetical) in words.items():
        if not ws:
            continue
        if ws in exact:
            out[nid] = exact[ws]
            continue
        exact[ws] = nid
        if len(ws) < MIN_WORDS:
            continue
        order = sorted(alphabetical, key=df.__getitem__)  # rarest first, ties by word
        prefix = order[: len(order) - math.ceil(jaccard * len(order)) + 1]
        seen: set[str] = set()
        for w in prefix:
            for other in index.get(w, ()):
                if other in seen:
                    continue
                seen.add(other)
                ob = bags[other]
                if len(bag & ob) / len(bag | ob) >= jaccard:
                    out[nid] = other
                    break
            if nid in out:
                break
        if nid in out:
            exact[ws] = out[nid]
            continue
        bags[nid] = bag
        for w in prefix:
            index.setdefault(w, []).append(nid)
    return out
