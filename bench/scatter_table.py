"""One row of bench/results/scattered-evidence.md from a LoCoMo run folder's ``questions.jsonl``.

    PYTHONPATH=. .venv/bin/python bench/scatter_table.py RUN_DIR [RUN_DIR ...] [--label NAME ...]

Columns (questions of categories 1-4 with gold turns; %): full coverage, evidence recall, answer in context (of
those with a short gold answer), full coverage of questions with one / at least two gold turns, of multi-hop (1),
temporal (2), open-domain (3) and single-hop (4) questions, gold turns in the context per 100 context tokens
(sum over questions), and the mean context tokens (Mem Len). Every number comes from the fields the bench runner
wrote (:func:`timem.bench.runner._score`), none is recomputed from the context.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

CATEGORY = {1: "mh", 2: "tmp", 3: "od", 4: "sh"}


def _pct(rows: list[dict[str, Any]], key: str) -> str:
    vals = [float(r[key]) for r in rows if r.get(key) is not None]
    return f"{100 * sum(vals) / len(vals):.1f}" if vals else "–"


def cells(rows: list[dict[str, Any]]) -> list[str]:
    """The row's cells (full, ev. rec., AiC, 1 g, 2+ g, mh, od, sh, tmp, ev./100 t, Mem Len) of the per-question
    rows (``questions.jsonl`` records: ``category``, ``evidence``, ``covered``, ``full_coverage``,
    ``evidence_recall``, ``answer_in_context``, ``mem_len``)."""
    gold = [r for r in rows if r.get("evidence")]
    one = [r for r in gold if len(r["evidence"]) == 1]
    many = [r for r in gold if len(r["evidence"]) >= 2]
    by_cat = {name: [r for r in gold if int(r["category"]) == c] for c, name in CATEGORY.items()}
    covered = sum(len(r["covered"]) for r in gold)
    tokens = sum(int(r["mem_len"]) for r in gold)
    out = [_pct(gold, "full_coverage"), _pct(gold, "evidence_recall"), _pct(gold, "answer_in_context"),
             _pct(one, "full_coverage"), _pct(many, "full_coverage"), _pct(by_cat["mh"], "full_coverage"),
             _pct(by_cat["od"], "full_coverage"), _pct(by_cat["sh"], "full_coverage"),
             _pct(by_cat["tmp"], "full_coverage"), f"{100 * covered / max(1, tokens):.3f}",
             f"{sum(int(r['mem_len']) for r in rows) / max(1, len(rows)):.0f}"]
    return out


def row(run: Path) -> str:
    """The table row (``| full | ev. rec. | AiC | 1 g | 2+ g | mh | od | sh | tmp | ev./100 t | Mem Len |``)."""
    rows = [json.loads(x) for x in (run / "questions.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    return "| " + " | ".join(cells(rows)) + " |"


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(f"{arg}: {row(Path(arg))}")
