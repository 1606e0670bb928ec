"""Near-duplicate collapse among leaf candidates (so repeated memories do not crowd out distinct facts).

A memory said forty times ("Reminder: I am allergic to peanuts.") would otherwise fill the top k and
the token budget, and the one distinct fact ranked 41st ("... also allergic to penicillin") would
never reach the context. Before the top-k cut, candidates are walked in fused-score order; one whose
words match an earlier (better-ranked) candidate's is marked ``duplicate_of`` that candidate and
takes no top-k slot (:func:`timem.recall.leaves.rerank`). The trace shows it: "dropped: near-duplicate
of <id>".

Match rule: the lower-cased word sequences (``\\w+``, speaker included, the verbatim date line
excluded) are equal, or, for memories of at least ``MIN_WORDS`` words, the Jaccard similarity of
their word sets is at least ``Config.near_duplicate_jaccard`` (0.9 by default; 1.0 = exact repeats
only; the collapse is off with ``Config.near_duplicates = "keep"``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from timem.models import MemoryNode

_WORDS = re.compile(r"\w+", re.UNICODE)
_DATE_HEAD = re.compile(r"^On \d{1,2} \w+ \d{4} \(\w+\) \d{2}:\d{2}:\s*")
MIN_WORDS = 5


def _words(node: MemoryNode) -> tuple[str, ...]:
    return tuple(_WORDS.findall(_DATE_HEAD.sub("", node.content.strip()).lower()))


def near_duplicates(ranked_ids: Sequence[str], nodes: Mapping[str, MemoryNode], jaccard: float) -> dict[str, str]:
    """``{duplicate id: id of the better-ranked memory it repeats}`` over ``ranked_ids`` (best first).

    Args:
        ranked_ids: candidate node ids in rank order; ids missing from ``nodes`` are ignored.
        jaccard: word-set Jaccard threshold in ``(0, 1]`` for memories of ``MIN_WORDS``+ words.

    O(n²) set comparisons over the candidates (n ≈ 100: well under a millisecond per recall).
    """
    kept: list[tuple[str, tuple[str, ...], frozenset[str]]] = []
    exact: dict[tuple[str, ...], str] = {}
    out: dict[str, str] = {}
    for nid in ranked_ids:
        node = nodes.get(nid)
        if node is None:
            continue
        words = _words(node)
        if not words:
            continue
        if words in exact:
            out[nid] = exact[words]
            continue
        bag = frozenset(words)
        if len(words) >= MIN_WORDS:
            for other, other_words, other_bag in kept:
                if len(other_words) >= MIN_WORDS and len(bag & other_bag) / len(bag | other_bag) >= jaccard:
                    out[nid] = other
                    break
        if nid not in out:
            exact[words] = nid
            kept.append((nid, words, bag))
    return out
