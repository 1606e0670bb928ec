"""What a benchmark run is (:mod:`timem.bench.runner`): its spec, its result, and the questions it asks of the
data (LoCoMo categories 1-4, or 1-5 with ``include_adversarial``; every LongMemEval question), each at its question
time. :mod:`timem.bench.runner` re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from timem.bench.recipes import Recipe
from timem.config import Config
from timem.datasets.base import ImportedUser, Question

Dataset = Literal["locomo", "longmemeval"]


@dataclass
class RunSpec:
    """What to run. ``judge_config`` = ``None`` judges with the answering LLM."""

    dataset: Dataset
    data_file: Path
    recipe: Recipe
    out_dir: Path
    samples: list[str] | None = None
    limit: int | None = None
    max_questions: int | None = None
    include_adversarial: bool = False
    retrieval_only: bool = False
    db: Path | None = None
    window: int | None = None
    judge_config: Config | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class RunResult:
    """A finished run: its folder, the per-category table (the overall row last), the manifest and the question
    records."""

    out_dir: Path
    table: list[dict[str, Any]]
    manifest: dict[str, Any]
    rows: list[dict[str, Any]]


def select_questions(users: list[ImportedUser], spec: RunSpec) -> list[tuple[ImportedUser, Question]]:
    """The (user, question) pairs a run asks, in file order: LoCoMo categories 1-4 (and 5 with
    ``include_adversarial``), every LongMemEval question; the first ``max_questions`` if set."""
    cats = {1, 2, 3, 4} | ({5} if spec.include_adversarial else set())
    items = [(u, q) for u in users for q in u.questions
             if spec.dataset != "locomo" or int(q.category) in cats]
    return items[: spec.max_questions] if spec.max_questions else items


def question_time(user: ImportedUser, q: Question) -> datetime:
    """When ``q`` is asked: its own date, else (LoCoMo has none) the time of the conversation's last turn."""
    return q.question_time or max(t.event_time for t in user.turns)
