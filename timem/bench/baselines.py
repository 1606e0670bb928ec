"""Baselines over the raw turns of the dataset (no memory tree), in the same harness.

Each turn becomes one document, prefixed with its date in the user's zone so that temporal
questions can be answered: ``[Mon 8 May 2023, 13:56] Caroline: I went to ... [shares a photo: ...]``.

* ``bm25-turns``: Okapi BM25 (Robertson & Zaragoza 2009) via ``rank_bm25.BM25Okapi`` (k1 = 1.5,
  b = 0.75, its defaults) over lower-cased, Porter-stemmed word tokens without English stopwords.
* ``dense-turns``: cosine similarity of MiniLM embeddings (the store's embedder).
* ``hybrid-turns``: :func:`timem.recall.leaves.fuse` over the top ``Config.recall.recall_candidates`` of
  each, ``λ·semantic + (1 − λ)·bm25`` with the configured λ — the fusion TiMem uses for leaves.

The top ``recipe.top_k`` turns are then added by rank within ``Config.recall.token_budget`` and shown in
time order. ``full-context`` renders every turn by session and drops the oldest turns until the
answer prompt fits the window: ``window − max answer tokens − prompt overhead``, minus 10 % because
cl100k counts differ from the answering model's tokenizer. The question is counted as at least
:data:`QUESTION_ALLOWANCE` tokens, so one user's questions get the same context and the embedded model
evaluates its prompt prefix once (the bench's judge runs on its own KV cache, :func:`timem.llm.client.own_cache`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Protocol

import numpy as np

from timem.bench.metrics import tokens_for_f1
from timem.bench.recipes import Recipe
from timem.bench.retrieval import Retrieved
from timem.config import Config
from timem.datasets.base import ImportedUser
from timem.embed.protocol import Embedder
from timem.errors import MissingExtraError, TimemError
from timem.models import Turn
from timem.prompts import answer as answer_prompt
from timem.recall.context import fit_budget
from timem.recall.leaves import fuse
from timem.tokens import count_tokens

_WORD = re.compile(r"[A-Za-z0-9]+")
WINDOW_MARGIN = 0.10


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def bm25_tokens(text: str) -> list[str]:
    """Lower-cased word tokens without English stopwords, Porter-stemmed."""
    stop = _stopwords()
    words = [w for w in _WORD.findall(text.lower()) if w not in stop]
    return tokens_for_f1(" ".join(words)) if words else []


def turn_date(turn: Turn, config: Config) -> str:
    t = turn.event_time.astimezone(config.time.tz)
    return f"{t:%a} {t.day} {t:%B %Y}, {t:%H:%M}"


def turn_text(turn: Turn) -> str:
    text = " ".join(turn.text.split())
    if turn.image_caption:
        text += f" [shares a photo: {turn.image_caption.strip()}]"
    return f"{turn.speaker}: {text}"


def turn_doc(turn: Turn, config: Config) -> str:
    """The indexed and displayed text of one turn: ``[date] Speaker: text``."""
    return f"[{turn_date(turn, config)}] {turn_text(turn)}"


class _BM25(Protocol):
    """What the baselines use of ``rank_bm25.BM25Okapi`` (the package has no type hints)."""

    def get_scores(self, query: list[str]) -> np.ndarray:
        """The BM25 score of every indexed document for the query tokens, shape ``(n docs,)``."""
        ...


class _Index:
    def __init__(self, turns: list[Turn], docs: list[str]) -> None:
        self.turns, self.docs = turns, docs
        self.bm25: _BM25 | None = None
        self.vecs: np.ndarray | None = None

    def lexical(self, question: str) -> np.ndarray:
        """BM25 scores of every turn for ``question``, shape ``(n turns,)``; the index is built for BM25 recipes."""
        if self.bm25 is None:
            raise TimemError("this baseline's turn index has no BM25 part; only bm25-turns and hybrid-turns build it")
        return np.asarray(self.bm25.get_scores(bm25_tokens(question)), dtype=np.float64)

    def semantic(self, question: str, embedder: Embedder) -> np.ndarray:
        """Cosine similarity of every turn to ``question``, shape ``(n turns,)``; built for dense recipes."""
        if self.vecs is None:
            raise TimemError("this baseline's turn index has no vectors; only dense-turns and hybrid-turns build them")
        sims: np.ndarray = self.vecs @ embedder.embed([question])[0]
        return sims


class TurnRetriever:
    """``bm25-turns`` / ``dense-turns`` / ``hybrid-turns`` (see the module docstring); indexes per user, once."""

    def __init__(self, embedder: Embedder, config: Config, recipe: Recipe) -> None:
        self.embedder, self.config, self.recipe = embedder, config, recipe
        self._index: dict[str, _Index] = {}

    def _get(self, user: ImportedUser) -> _Index:
        if user.user_id not in self._index:
            turns = sorted(user.turns, key=lambda t: (t.event_time, t.session_id, t.seq))
            idx = _Index(turns, [turn_doc(t, self.config) for t in turns])
            if self.recipe.method in ("bm25-turns", "hybrid-turns"):
                try:
                    from rank_bm25 import BM25Okapi
                except ImportError as exc:
                    raise MissingExtraError(f"the {self.recipe.method} baseline", "bench", "rank-bm25") from exc

                idx.bm25 = BM25Okapi([bm25_tokens(d) or ["_"] for d in idx.docs])
            if self.recipe.method in ("dense-turns", "hybrid-turns"):
                idx.vecs = self.embedder.embed(idx.docs)
            self._index = {user.user_id: idx}  # one user at a time keeps memory flat on LongMemEval
        return self._index[user.user_id]

    def scores(self, user: ImportedUser, question: str) -> list[tuple[int, float]]:
        """``(turn index, score)`` ranked best first (ties: earlier turn)."""
        idx = self._get(user)
        m = self.recipe.method
        n = self.config.recall.recall_candidates
        if m == "bm25-turns":
            lex = idx.lexical(question)
            order = sorted(range(len(idx.docs)), key=lambda i: (-lex[i], i))
            return [(i, float(lex[i])) for i in order if lex[i] > 0]
        if m == "dense-turns":
            sem = idx.semantic(question, self.embedder)
            order = sorted(range(len(idx.docs)), key=lambda i: (-sem[i], i))
            return [(i, float(sem[i])) for i in order]
        lex, sem = idx.lexical(question), idx.semantic(question, self.embedder)
        top_sem = sorted(range(len(idx.docs)), key=lambda i: (-sem[i], i))[:n]
        top_lex = [i for i in sorted(range(len(idx.docs)), key=lambda i: (-lex[i], i))[:n] if lex[i] > 0]
        fused = fuse({f"{i:08d}": float(sem[i]) for i in top_sem}, {f"{i:08d}": float(lex[i]) for i in top_lex},
                     self.config.recall.recall_lambda)
        return [(int(c.node_id), c.fused) for c in fused]

    def retrieve(self, user: ImportedUser, question: str, question_time: datetime) -> Retrieved:
        idx = self._get(user)
        ranked = [i for i, _ in self.scores(user, question)[: self.recipe.top_k]]

        def render(ids: list[int]) -> str:
            return "Conversation turns:\n" + "\n".join(f"- {idx.docs[i]}" for i in sorted(ids)) if ids else ""

        kept, context, tokens = fit_budget(ranked, render, self.config.recall.token_budget)
        ids = [idx.turns[i].id for i in sorted(kept)]
        return Retrieved(context=context, mem_len=tokens, turn_ids=ids, tree_turn_ids=ids,
                         level_counts={"turns": len(kept)})


def render_full(turns: Sequence[Turn], config: Config) -> str:
    """Every turn in time order, one header line per session with its date."""
    lines: list[str] = []
    current = None
    for t in turns:
        if t.session_id != current:
            current = t.session_id
            lines.append(f"Session {t.session_id} ({turn_date(t, config)}):")
        lines.append(turn_text(t))
    return "\n".join(lines)


#: the question's share of the window in ``full-context``, in tokens: every question up to this long gets the
#: same context, so one user's answer prompts share all but their last lines, which llama.cpp evaluates once
QUESTION_ALLOWANCE = 96
#: the longest "Today is …" line of the answer prompt (its date is counted at this width for every question)
_WIDEST_DAY = datetime(2026, 9, 30, 23, 59)


def window_budget(window: int, config: Config, question: str) -> int:
    """Context tokens that fit: ``(window − max answer tokens − prompt overhead) · (1 − margin)``, where the
    overhead counts the prompt without memories, the date at its widest and ``max(QUESTION_ALLOWANCE, the
    question's tokens)`` (cl100k tokens)."""
    overhead = sum(count_tokens(m.content) for m in answer_prompt.build_messages("", "", _WIDEST_DAY))
    overhead += max(QUESTION_ALLOWANCE, count_tokens(question))
    return max(0, int((window - config.llm.llm_max_tokens - overhead - 16) * (1 - WINDOW_MARGIN)))


class FullContext:
    """The whole history, truncated from the oldest turn to fit ``window`` tokens (binary search)."""

    def __init__(self, config: Config, window: int) -> None:
        self.config, self.window = config, window

    def retrieve(self, user: ImportedUser, question: str, question_time: datetime) -> Retrieved:
        turns = sorted(user.turns, key=lambda t: (t.event_time, t.session_id, t.seq))
        budget = window_budget(self.window, self.config, question)
        lo, hi = 0, len(turns)  # smallest start index whose suffix fits
        while lo < hi:
            mid = (lo + hi) // 2
            if count_tokens(render_full(turns[mid:], self.config)) <= budget:
                hi = mid
            else:
                lo = mid + 1
        kept = turns[lo:]
        context = render_full(kept, self.config)
        ids = [t.id for t in kept]
        return Retrieved(context=context, mem_len=count_tokens(context), turn_ids=ids, tree_turn_ids=ids,
                         truncated=lo > 0, kept_turns=len(kept), level_counts={"turns": len(kept)},
                         notes=[f"window {self.window} tokens, context budget {budget}; "
                                f"{lo} of {len(turns)} oldest turns dropped"])
