"""Answer metrics and evidence coverage for the benchmark harness.

* **Token F1** (SQuAD v1.1 evaluation script, Rajpurkar et al. 2016, ``f1_score``; LoCoMo's
  evaluation, Maharana et al. 2024, adds Porter stemming): both strings are normalised (lower
  case, punctuation characters deleted, the articles a/an/the removed, whitespace collapsed),
  split on whitespace and Porter-stemmed (``nltk.stem.PorterStemmer``, no data download); with
  ``common`` the multiset intersection, ``P = |common|/|pred|``, ``R = |common|/|gold|`` and
  ``F1 = 2PR/(P+R)``. If either side is empty, F1 is 1 when both are, else 0.
* **ROUGE-L F** (Lin 2004): the F-measure of the longest common subsequence, from Google's
  ``rouge-score`` package (``RougeScorer(["rougeL"], use_stemmer=True)``).
* **Mem Len**: cl100k tokens of the recalled context (:func:`timem.tokens.count_tokens`).
* **Evidence coverage**: the share of gold evidence ids (LoCoMo ``dia_id``; LongMemEval the
  ``source_ref`` of the ``has_answer`` turns) reached by the recalled *leaves* (raw turns, or the
  source turns of L1 segments) — the definition of :mod:`timem.recall.evaluate`. ``tree`` coverage
  also counts turns under a recalled L2–L5 summary (the summary spans them; it may not state them).
  For LongMemEval, *session recall* is the share of ``answer_session_ids`` touched by the context.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Protocol

from timem.errors import MissingExtraError
from timem.recall.evaluate import answer_in_context, date_in_context, evidence_ids, normalize_answer
from timem.tokens import count_tokens

__all__ = ["answer_in_context", "count_tokens", "coverage", "date_in_context", "evidence_ids", "normalize_answer",
           "normalize_squad", "rouge_l", "token_f1", "tokens_for_f1"]

_PUNCT = set(string.punctuation) | set("‘’“”–—")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_squad(text: object) -> str:
    """SQuAD normalisation: lower case, punctuation deleted, articles a/an/the removed, spaces collapsed."""
    s = "".join(ch for ch in str(text).lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


class _Stemmer(Protocol):
    """What the metrics use of nltk's ``PorterStemmer``."""

    def stem(self, word: str) -> str:
        """The Porter stem of one lower-case word."""
        ...


class _RougeScore(Protocol):
    """One ``rouge_score.scoring.Score`` (precision, recall, F-measure in ``[0, 1]``)."""

    @property
    def fmeasure(self) -> float:
        """The F-measure of the score."""
        ...


class _RougeScorer(Protocol):
    """What the metrics use of ``rouge_score.rouge_scorer.RougeScorer`` (the package has no type hints)."""

    def score(self, target: str, prediction: str) -> Mapping[str, _RougeScore]:
        """The scores of ``prediction`` against ``target`` by ROUGE type (here ``"rougeL"``)."""
        ...


@lru_cache(maxsize=1)
def _stemmer() -> _Stemmer:  # nltk PorterStemmer (pure Python, no corpus download)
    from nltk.stem import PorterStemmer

    stemmer: _Stemmer = PorterStemmer()
    return stemmer


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _stemmer().stem(word)


def tokens_for_f1(text: object) -> list[str]:
    """Normalised, Porter-stemmed tokens of ``text`` (see the module docstring)."""
    return [_stem(w) for w in normalize_squad(text).split()]


def token_f1(prediction: object, gold: object) -> float:
    """Token-level F1 between a hypothesis and the gold answer, in ``[0, 1]`` (formula in the module docstring)."""
    pred, ref = tokens_for_f1(prediction), tokens_for_f1(gold)
    if not pred or not ref:
        return float(pred == ref)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    p, r = same / len(pred), same / len(ref)
    return 2 * p * r / (p + r)


@lru_cache(maxsize=1)
def _rouge() -> _RougeScorer:
    try:
        from rouge_score import rouge_scorer
    except ImportError as exc:
        raise MissingExtraError("the benchmark's ROUGE-L metric", "bench", "rouge-score") from exc

    scorer: _RougeScorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    return scorer


def rouge_l(prediction: object, gold: object) -> float:
    """ROUGE-L F-measure (rouge-score, Porter stemming); 0 when either side has no tokens."""
    p, g = str(prediction or ""), str(gold or "")
    if not p.strip() or not g.strip():
        return 0.0
    return float(_rouge().score(g, p)["rougeL"].fmeasure)


def coverage(gold: Sequence[str], found: Iterable[str | None]) -> tuple[list[str], float | None]:
    """``(covered gold ids in gold order, covered / |gold|)``; the share is ``None`` without gold ids."""
    have = set(found)
    covered = [g for g in gold if g in have]
    return covered, (len(covered) / len(gold) if gold else None)
