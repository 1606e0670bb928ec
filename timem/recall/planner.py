"""Recall planner: complexity (simple / hybrid / complex), keywords and time window of a question.

TiMem §3.3 (complexity-aware recall): the complexity picks which tree levels are searched and how
many nodes each may contribute (``Config.recall.quotas``, defaults from the reference implementation).
Two planners share the :class:`Planner` protocol:

* :class:`CentroidPlanner` (offline default): nearest centroid of MiniLM embeddings of labelled
  example questions shipped in ``timem/recall/planner_examples.json`` (40 per class).
* :class:`LLMPlanner`: one schema-constrained LLM call (:mod:`timem.prompts.planner`).

Both resolve the time window deterministically (:mod:`timem.recall.time_window`).
:func:`evaluate_planner` measures a planner on ``planner_eval.json`` (90 held-out questions).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, tzinfo
from functools import lru_cache
from importlib import resources
from typing import Any, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from timem.config import Complexity, Config
from timem.embed.protocol import Embedder
from timem.errors import ConfigError, LLMError
from timem.llm.protocol import LLMClient
from timem.models import TimeSpan
from timem.prompts import planner as planner_prompt
from timem.recall import cjk
from timem.recall.keywords import MAX_KEYWORDS, clean_keywords, extract_keywords, person_names
from timem.recall.time_window import resolve_time_window

COMPLEXITIES: tuple[Complexity, ...] = ("simple", "hybrid", "complex")


class RecallPlan(BaseModel):
    """What the planner decided for one question.

    ``levels`` maps tree level (1..5) to its quota (max nodes), in level order, copied from
    ``Config.recall.quotas[complexity]``. ``time_window`` is half-open ``[start, end)`` in UTC.
    ``scores`` holds the centroid planner's cosine similarity per class (empty for the LLM planner).
    ``note`` says when a fallback happened (e.g. the LLM planner failed and the centroid planner decided).
    """

    model_config = ConfigDict(frozen=True)
    complexity: Complexity
    keywords: list[str] = Field(default_factory=list, max_length=MAX_KEYWORDS)
    time_expression: str | None = None
    time_window: TimeSpan | None = None
    levels: dict[int, int]
    planner: str  #: "centroid", "llm" or "override"
    scores: dict[str, float] = Field(default_factory=dict)
    note: str | None = None


def make_plan(complexity: Complexity, question: str, question_time: datetime, config: Config, planner: str, *,
              keywords: Sequence[str] | None = None, time_expression: str | None = None,
              participants: Sequence[str] = (), tz: tzinfo | None = None, **extra: Any) -> RecallPlan:
    """Assemble a :class:`RecallPlan`: levels and quotas from ``config.recall.quotas[complexity]``; keywords
    extracted deterministically when ``keywords`` is ``None``; the time window resolved from
    ``time_expression`` if given and resolvable, else from the question. A Chinese question with no such window
    also takes its time nouns as keywords (:func:`timem.recall.cjk.time_nouns`: 周末 of 我周末做了什么？); English
    questions are unchanged. ``tz``: the zone the question's dates are read in (:attr:`RecallState.tz
    <timem.recall.state.RecallState.tz>`); default ``config.time.tz``.

    Raises:
        ConfigError: ``config.recall.quotas`` has no entry for ``complexity`` or no L1 quota.
    """
    quotas = config.recall.quotas.get(complexity)
    if not quotas or quotas.get(1, 0) <= 0:
        raise ConfigError(f"quotas[{complexity!r}] must give L1 a positive quota (got {quotas!r}); "
                          "fix `quotas` in the config file.")
    found, tz = None, tz or config.time.tz
    if time_expression:
        found = resolve_time_window(time_expression, question_time, tz)
    found = found or resolve_time_window(question, question_time, tz)
    kws = list(keywords) if keywords is not None else extract_keywords(question, participants)
    if found is None:  # 我周末做了什么？: no window to look in, so a memory that says 周末 is what is asked about
        nouns = [w for w in cjk.time_nouns(question) if w not in kws]
        kws = [*kws[:MAX_KEYWORDS - len(nouns)], *nouns]
    return RecallPlan(complexity=complexity, keywords=kws[:MAX_KEYWORDS],
                      time_expression=found[0] if found else None, time_window=found[1] if found else None,
                      levels={lv: n for lv, n in sorted(quotas.items()) if n > 0}, planner=planner, **extra)


@runtime_checkable
class Planner(Protocol):
    """Plans recall for one question. ``name`` is recorded in the plan and the recall trace."""

    name: str

    def plan(self, question: str, question_time: datetime, config: Config, *,
             participants: Sequence[str] = (), user_id: str | None = None, tz: tzinfo | None = None) -> RecallPlan:
        """Raises :class:`LLMError` (LLM planner only) when the model call fails. ``tz``: as in :func:`make_plan`."""
        ...


@lru_cache(maxsize=4)
def _load_json(name: str) -> str:
    return resources.files("timem.recall").joinpath(name).read_text(encoding="utf-8")


def load_examples() -> dict[str, list[str]]:
    """The packaged labelled example questions: ``{"simple": [...], "hybrid": [...], "complex": [...]}``."""
    classes: dict[str, list[str]] = json.loads(_load_json("planner_examples.json"))["classes"]
    return classes


def load_eval_set() -> list[dict[str, str]]:
    """The packaged held-out evaluation questions: ``[{"question": ..., "complexity": ...}, ...]``."""
    items: list[dict[str, str]] = json.loads(_load_json("planner_eval.json"))["items"]
    return items


def mask_names(question: str, participants: Sequence[str]) -> str:
    """``question`` with person names (:func:`timem.recall.keywords.person_names`) replaced by "someone": the
    classifier sees the question's shape, not who, and the score gate a cosine the name does not lift."""
    names = person_names(question, participants)
    if not names:
        return question
    import re

    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                         + r")(['’]s)?\b", re.IGNORECASE)
    return pattern.sub(lambda m: "someone's" if m.group(2) else "someone", question)


_CENTROIDS: dict[tuple[str, str], tuple[list[Complexity], np.ndarray]] = {}
_CENTROIDS_LOCK = threading.Lock()
_PACKAGED = "<packaged planner_examples.json>"


def _centroids(embedder: Embedder, examples: Mapping[str, Sequence[str]] | None
               ) -> tuple[list[Complexity], np.ndarray]:
    """The classes in order and their centroids, ``(3, dim)`` float32 unit rows (see :class:`CentroidPlanner`).

    Raises:
        ConfigError: a class has no example.
    """
    ex = {c: list(qs) for c, qs in (examples or load_examples()).items()}
    missing = [c for c in COMPLEXITIES if not ex.get(c)]
    if missing:
        raise ConfigError(f"planner examples lack classes {missing}; each of {COMPLEXITIES} needs examples")
    labels = list(COMPLEXITIES)
    rows = []
    for c in labels:
        vecs = embedder.embed([mask_names(q, ()) for q in ex[c]])
        mean = vecs.mean(axis=0)
        rows.append(mean / np.linalg.norm(mean))
    return labels, np.stack(rows).astype(np.float32)


class CentroidPlanner:
    """Nearest-centroid complexity classifier over MiniLM embeddings of labelled example questions.

    Each class centroid is the re-normalised mean of its examples' unit vectors; a question goes to
    the class of highest cosine similarity. Person names are masked ("someone") before embedding,
    in the examples and the question alike. Centroids are computed once per embedder model per
    process (about one second for 120 examples on 2 cores).

    Args:
        embedder: any :class:`~timem.embed.protocol.Embedder` (MiniLM in practice).
        examples: ``{class: [questions]}``; default: the packaged examples.
    """

    name = "centroid"

    def __init__(self, embedder: Embedder, examples: Mapping[str, Sequence[str]] | None = None) -> None:
        self.embedder = embedder
        # the packaged examples are read and checked once per process (a recall makes a planner each time)
        key = (embedder.model_id, _PACKAGED if not examples else
               json.dumps({c: list(qs) for c, qs in examples.items()}, sort_keys=True))
        with _CENTROIDS_LOCK:  # computed once when the studio's warm-up and a first recall ask at once
            if key not in _CENTROIDS:
                _CENTROIDS[key] = _centroids(embedder, examples)
            self.labels, self.centroids = _CENTROIDS[key]

    @staticmethod
    def masked(question: str, participants: Sequence[str] = ()) -> str:
        """The text the classifier embeds: ``question`` with person names replaced by "someone"."""
        return mask_names(question, participants)

    def classify(self, question: str, participants: Sequence[str] = (), vector: np.ndarray | None = None
                 ) -> tuple[Complexity, dict[str, float]]:
        """``(complexity, {class: cosine similarity to its centroid})``.

        ``vector``: the embedding of :meth:`masked` ``(question)`` if the caller already has it.
        """
        vec = self.embedder.embed([self.masked(question, participants)])[0] if vector is None else vector
        sims = self.centroids @ vec
        scores = {c: round(float(s), 4) for c, s in zip(self.labels, sims, strict=True)}
        return self.labels[int(np.argmax(sims))], scores  # type: ignore[return-value]

    def plan(self, question: str, question_time: datetime, config: Config, *,
             participants: Sequence[str] = (), user_id: str | None = None,
             vector: np.ndarray | None = None, tz: tzinfo | None = None) -> RecallPlan:
        """Classify, extract keywords deterministically, resolve the time window. No LLM call. A Chinese question
        (:func:`timem.recall.cjk.is_chinese`) takes its complexity from :func:`timem.recall.cjk.complexity`
        (its centroid scores are still recorded; ``note`` says so).

        ``vector``: as in :meth:`classify` (lets the pipeline embed it together with the question).
        """
        complexity, scores = self.classify(question, participants, vector)
        note = None
        if cjk.is_chinese(question):  # the centroids are English questions: cue words decide (timem.recall.cjk)
            complexity, note = cjk.complexity(question), "Chinese question: complexity from cue words, not centroids"
        return make_plan(complexity, question, question_time, config, self.name,
                         participants=participants, scores=scores, note=note, tz=tz)


class LLMPlanner:
    """One schema-constrained LLM call (:mod:`timem.prompts.planner`, purpose ``"recall.plan"``).

    The model's keywords are cleaned of person names and stopwords (deterministic keywords are used
    if none remain); the model's time phrase is resolved by :func:`resolve_time_window`.

    Args:
        llm: any :class:`~timem.llm.protocol.LLMClient`.
        examples_per_class: labelled examples shown in the prompt (from the packaged examples).
    """

    name = "llm"

    def __init__(self, llm: LLMClient, examples_per_class: int = 3) -> None:
        self.llm = llm
        self.examples = ({c: qs[:examples_per_class] for c, qs in load_examples().items()}
                         if examples_per_class else None)

    def plan(self, question: str, question_time: datetime, config: Config, *,
             participants: Sequence[str] = (), user_id: str | None = None, tz: tzinfo | None = None) -> RecallPlan:
        """Raises :class:`LLMError` when the call fails or returns no valid JSON after retries. ``tz``: as in
        :func:`make_plan`."""
        msgs = planner_prompt.build_messages(question, question_time.astimezone(tz or config.time.tz), self.examples)
        resp = self.llm.complete_json(msgs, planner_prompt.PlannerResponse, purpose="recall.plan", user_id=user_id)
        kws = clean_keywords(resp.keywords, question, participants) or extract_keywords(question, participants)
        return make_plan(resp.complexity, question, question_time, config, self.name, keywords=kws,
                         time_expression=resp.time_expression, participants=participants, tz=tz)


def evaluate_planner(planner: Planner, items: Iterable[Mapping[str, str] | Any] | None = None,
                     question_time: datetime | None = None, config: Config | None = None) -> dict[str, Any]:
    """Accuracy of ``planner`` on labelled questions (default: the packaged held-out set).

    Args:
        items: dicts or objects with ``question`` and ``complexity``.
        question_time: passed to the planner (default: now, UTC); only affects time windows.

    Returns:
        ``{"planner", "n", "accuracy", "per_class": {c: {"n", "recall"}}, "confusion": {gold: {pred: n}},
        "errors": [{"question", "gold", "predicted"}]}``; a failed LLM call counts as prediction
        ``"error"``.
    """
    from datetime import UTC

    config = config or Config()
    question_time = question_time or datetime.now(UTC)
    rows = list(items if items is not None else load_eval_set())
    confusion: dict[str, dict[str, int]] = {c: dict.fromkeys((*COMPLEXITIES, "error"), 0) for c in COMPLEXITIES}
    errors = []
    for it in rows:
        q = it["question"] if isinstance(it, Mapping) else it.question
        gold = it["complexity"] if isinstance(it, Mapping) else it.complexity
        pred: str
        try:
            pred = planner.plan(q, question_time, config).complexity
        except LLMError:
            pred = "error"
        confusion[gold][pred] += 1
        if pred != gold:
            errors.append({"question": q, "gold": gold, "predicted": pred})
    n = len(rows)
    correct = sum(confusion[c][c] for c in COMPLEXITIES)
    per_class = {c: {"n": sum(confusion[c].values()),
                     "recall": round(confusion[c][c] / max(1, sum(confusion[c].values())), 4)} for c in COMPLEXITIES}
    return {"planner": planner.name, "n": n, "accuracy": round(correct / n, 4) if n else 0.0,
            "per_class": per_class, "confusion": confusion, "errors": errors}
