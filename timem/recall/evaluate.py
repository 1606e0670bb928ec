"""Offline recall quality on LoCoMo-style questions: evidence coverage and answer-in-context.

For each question, recall runs for the given user; then

* **evidence coverage**: the gold evidence ``dia_id``s (e.g. ``"D1:3"``) covered by the recalled
  L1 leaves, through their source turns (``node.source_turn_ids`` -> ``turn.source_ref``);
  ``full`` when every gold id is covered;
* **answer in context**: the normalised gold answer (lower case, punctuation and the articles
  a/an/the removed, spaces collapsed — the SQuAD normalisation) occurs, on word boundaries, in
  the normalised context;
* **Mem Len**: cl100k tokens of the context.

Results are aggregated per category: LoCoMo's numbered ones (1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop; 5 adversarial is excluded by default) or LongMemEval's question types (text, e.g.
``temporal-reasoning``; all of them are scored, abstention questions included, whose evidence is empty).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from statistics import mean
from typing import Any

from timem.config import Config
from timem.embed.protocol import Embedder
from timem.llm.protocol import LLMClient
from timem.models import Level
from timem.recall.options import RecallOptions
from timem.recall.pipeline import RecallResult, recall
from timem.store.ports import MemoryStore

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
#: The categories :func:`evaluate_recall` scores unless told otherwise (5, adversarial, is left out).
DEFAULT_CATEGORIES: tuple[int, ...] = (1, 2, 3, 4)
_PUNCT = re.compile(f"[{re.escape(string.punctuation)}‘’“”–—]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: Any) -> str:
    """Lower case, punctuation removed (replaced by a space), articles removed, whitespace collapsed."""
    s = _PUNCT.sub(" ", str(text).lower())
    return " ".join(_ARTICLES.sub(" ", s).split())


def answer_in_context(gold: Any, context: str) -> bool:
    """True when the normalised ``gold`` answer is non-empty and occurs, word-aligned, in the normalised context."""
    g = normalize_answer(gold)
    return bool(g) and f" {g} " in f" {normalize_answer(context)} "


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_MONTH_RE = "(" + "|".join(_MONTHS) + ")"
_DATE_PATTERNS = (  # most specific first; each match is blanked before the next pattern runs
    re.compile(rf"\b(\d{{1,2}}) {_MONTH_RE} (\d{{4}})\b"),
    re.compile(rf"\b{_MONTH_RE} (\d{{1,2}}) (\d{{4}})\b"),
    re.compile(rf"\b{_MONTH_RE} (\d{{4}})\b"),
    re.compile(rf"\b(\d{{1,2}}) {_MONTH_RE}\b"),
    re.compile(r"\b((?:19|20)\d{2})\b"),
)


def gold_dates(gold: Any) -> list[str]:
    """The absolute date expressions of a gold answer, normalised as the context is (:func:`normalize_answer`).

    Day-month-year ("7 May 2023", "May 7, 2023" -> ``"7 may 2023"``), month-year (``"june 2023"``),
    day-month without a year (``"13 august"``) and bare years (``"2022"``); relative wording
    around them ("The week before 9 June 2023") is ignored. Empty when the answer has no date
    ("4 years", "a few years ago").
    """
    text = normalize_answer(gold)
    found: list[str] = []
    for i, pat in enumerate(_DATE_PATTERNS):
        for m in pat.finditer(text):
            g = m.groups()
            found.append(f"{g[1]} {g[0]} {g[2]}" if i == 1 else " ".join(g))
        text = pat.sub(" # ", text)
    return list(dict.fromkeys(found))


def date_in_context(gold: Any, context: str) -> bool | None:
    """Whether every absolute date of the gold answer (:func:`gold_dates`) occurs, word-aligned, in the
    normalised context; ``None`` when the gold answer states no date.

    This is the "gold date in context" measure for LoCoMo temporal questions: their answers are
    mostly a date or a phrase anchored on one ("The sunday before 25 May 2023"), and the context
    states dates as session headers ("[Thu 25 May 2023, 13:14]") and resolved relative dates
    ("last Sunday [= 21 May 2023]"), in other words than the gold's, so the verbatim
    :func:`answer_in_context` under-counts them.
    """
    dates = gold_dates(gold)
    if not dates:
        return None
    ctx = f" {normalize_answer(context)} "
    return all(f" {d} " in ctx for d in dates)


def evidence_ids(evidence: Iterable[str] | str | None) -> list[str]:
    """Gold evidence ids, split where the data packs several into one string (``"D8:6; D9:17"``)."""
    if evidence is None:
        return []
    items = [evidence] if isinstance(evidence, str) else list(evidence)
    out: list[str] = []
    for item in items:
        for part in re.split(r"[;,\s]+", str(item)):
            if part and part not in out:
                out.append(part)
    return out


def gold_evidence(q: Any) -> list[str]:
    """The gold evidence of a question as turn ``source_ref`` values: LongMemEval's answer turns
    (``extra["evidence_turns"]``, e.g. ``"answer_x_1:0"``; its ``evidence`` names whole sessions) when the
    question has them, else the dataset's evidence ids (LoCoMo ``dia_id`` values such as ``"D1:3"``)."""
    extra = q.get("extra") if isinstance(q, dict) else getattr(q, "extra", None)
    if isinstance(extra, dict) and "evidence_turns" in extra:
        return list(extra["evidence_turns"])
    return evidence_ids(q.get("evidence") if isinstance(q, dict) else getattr(q, "evidence", None))


def covered_evidence(store: MemoryStore, user_id: str, result: RecallResult, evidence: Sequence[str]) -> list[str]:
    """The gold ids among ``evidence`` reached by the recalled L1 leaves' source turns."""
    turn_ids = [t for n in result.nodes if n.level == Level.SEGMENT for t in n.source_turn_ids]
    refs = {t.source_ref for t in store.turns(user_id, ids=turn_ids)} if turn_ids else set()
    return [e for e in evidence if e in refs]


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    with_ev = [r for r in rows if r["evidence"]]
    with_ans = [r for r in rows if r["answer_in_context"] is not None]
    return {
        "n": len(rows),
        "n_evidence": len(with_ev),  #: the questions the evidence columns average over
        "n_answer": len(with_ans),  #: the questions answer_in_context averages over
        "evidence_recall": round(mean(r["evidence_recall"] for r in with_ev), 4) if with_ev else None,
        "full_coverage": round(mean(r["full_coverage"] for r in with_ev), 4) if with_ev else None,
        "answer_in_context": round(mean(r["answer_in_context"] for r in with_ans), 4) if with_ans else None,
        "mean_mem_len": round(mean(r["mem_len"] for r in rows), 1) if rows else None,
    }


def _category(q: Any) -> int | str:
    """A LoCoMo category number, or a LongMemEval question type (text)."""
    raw = (q.get("category", 0) if isinstance(q, dict) else getattr(q, "category", 0)) or 0
    return int(raw) if isinstance(raw, int) or str(raw).isdigit() else str(raw)


def _scored(category: int | str, categories: Sequence[int]) -> bool:
    return isinstance(category, str) or category in categories


def _label(category: int | str) -> str:
    return category if isinstance(category, str) else f"{category} {CATEGORIES.get(category, '?')}"


def scored_questions(questions: Iterable[Any], categories: Sequence[int] = DEFAULT_CATEGORIES) -> list[Any]:
    """The questions :func:`evaluate_recall` scores with these LoCoMo ``categories`` (every LongMemEval question
    type is scored), in order: e.g. the total of a progress bar over them."""
    return [q for q in questions if _scored(_category(q), categories)]


#: how :func:`evaluate_recall` recalls by default: as configured, traces not saved
EVALUATION_OPTIONS = RecallOptions(persist=False)


def evaluate_recall(store: MemoryStore, embedder: Embedder, llm: LLMClient | None, config: Config, user_id: str,
                    questions: Iterable[Any], *, categories: Sequence[int] = DEFAULT_CATEGORIES,
                    options: RecallOptions = EVALUATION_OPTIONS) -> dict[str, Any]:
    """Recall every question of one user (conversation) and score coverage per category.

    Args:
        questions: objects (or dicts) with ``question``, ``answer``, ``category``, ``evidence`` and
            ``question_time`` (UTC-aware or ``None``); ``question_id`` is reported when present
            (e.g. :class:`timem.datasets.base.Question`).
        categories: LoCoMo categories to include (default 1-4; 5 adversarial excluded); every LongMemEval
            question type is included.
        options: how each question is recalled (:class:`RecallOptions`); ``persist`` is off by default (evaluation
            runs are bulk), set it to save each recall trace.

    Returns:
        ``{"user_id", "n", "overall": summary, "per_category": {"1 multi-hop": summary, ...},
        "questions": [per-question rows]}``, where a summary is ``{"n", "n_evidence", "n_answer",
        "evidence_recall", "full_coverage", "answer_in_context", "mean_mem_len"}``: the evidence columns
        average over the ``n_evidence`` questions that have gold evidence, answer_in_context over the
        ``n_answer`` that have a gold answer (``None`` when there are none); Mem Len over all ``n``.
    """
    rows: list[dict[str, Any]] = []
    for q in questions:
        get = q.get if isinstance(q, dict) else lambda k, d=None, _q=q: getattr(_q, k, d)
        category = _category(q)
        if not _scored(category, categories):
            continue
        res = recall(store, embedder, llm, config, user_id, str(get("question")), get("question_time"), options)
        gold_ev = gold_evidence(q)
        covered = covered_evidence(store, user_id, res, gold_ev)
        gold = get("answer")
        rows.append({
            "question_id": get("question_id"), "question": get("question"), "category": category,
            "complexity": res.trace.plan.complexity, "evidence": gold_ev, "covered": covered,
            "missing": [e for e in gold_ev if e not in covered],
            "evidence_recall": len(covered) / len(gold_ev) if gold_ev else None,
            "full_coverage": bool(gold_ev) and len(covered) == len(gold_ev),
            "answer_in_context": answer_in_context(gold, res.context) if gold not in (None, "") else None,
            "mem_len": res.mem_len, "trace_id": res.trace.trace_id,
        })
    per_cat = {_label(c): _summary([r for r in rows if r["category"] == c])
               for c in sorted({r["category"] for r in rows}, key=lambda c: (isinstance(c, str), str(c).zfill(3)))}
    return {"user_id": user_id, "n": len(rows), "overall": _summary(rows), "per_category": per_cat, "questions": rows}


def recall_tables(results: Sequence[dict[str, Any]]) -> str:
    """:func:`evaluate_recall` results as aligned text tables (rich), one per user: per category and overall, n,
    questions with evidence, evidence recall, full coverage, questions with an answer, answer in context, Mean Mem
    Len (tokens). Columns fit the longest category name (LongMemEval's question types are long)."""
    import io

    from rich.console import Console
    from rich.table import Table

    def f(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    out = io.StringIO()
    console = Console(file=out, width=400, no_color=True, highlight=False, legacy_windows=False)
    for r in results:
        table = Table(title=f"{r['user_id']}: {r['n']} questions", title_justify="left", box=None, pad_edge=False)
        for name in ("category", "n", "n ev", "ev.recall", "full cov", "n ans", "ans∈ctx", "Mem Len"):
            table.add_column(name, justify="left" if name == "category" else "right", no_wrap=True)
        for name, sm in [*r["per_category"].items(), ("all", r["overall"])]:
            table.add_row(str(name), str(sm["n"]), str(sm["n_evidence"]), f(sm["evidence_recall"]),
                          f(sm["full_coverage"]), str(sm["n_answer"]), f(sm["answer_in_context"]),
                          f"{sm['mean_mem_len'] or 0:.0f}")
        console.print(table)
    console.print("(evidence columns average over the 'n ev' questions with gold evidence, ans∈ctx over the 'n ans' "
                  "with a gold answer)", soft_wrap=True)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())
