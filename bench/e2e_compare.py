"""Compare two end-to-end LoCoMo runs (``timem bench locomo … --llm local``) on the same questions: judge accuracy,
token F1, full evidence coverage, answer in context and Mem Len, overall and per category, and how many questions
each judged right alone. Prints markdown tables.

    .venv/bin/python bench/e2e_compare.py RUN_A/questions.jsonl RUN_B/questions.jsonl [--names default bm25-turns]

The runs must hold the same questions in the same order (the first N of the file); a longer run A is cut to B's
length. Not a test.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def agg(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means in % (Mem Len in tokens) over ``rows``; full coverage over the rows that have evidence."""
    k = len(rows)
    cov = [r["full_coverage"] for r in rows if r.get("full_coverage") is not None]
    return {"n": k, "judge_acc": round(100 * sum(bool(r["judge_correct"]) for r in rows) / k, 1),
            "f1": round(100 * sum(r["f1"] for r in rows) / k, 1),
            "full_coverage": round(100 * sum(cov) / len(cov), 1) if cov else None,
            "answer_in_context": round(100 * sum(r["answer_in_context"] for r in rows) / k, 1),
            "mem_len": round(sum(r["mem_len"] for r in rows) / k, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--names", nargs=2, default=["default (`timem`)", "`bm25-turns`"])
    args = ap.parse_args()
    b = load(args.b)
    a = load(args.a)[: len(b)]
    if [x["question_id"] for x in a] != [x["question_id"] for x in b]:
        raise SystemExit("the two runs do not hold the same questions in the same order")
    print("| recipe | questions | judge acc | token F1 | full coverage | answer in context | Mem Len |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, rows in zip(args.names, (a, b), strict=True):
        s = agg(rows)
        print(f"| {name} | {s['n']} | {s['judge_acc']} | {s['f1']} | {s['full_coverage']} | {s['answer_in_context']} "
              f"| {s['mem_len']} |")
    print()
    print(f"| category | n | judge acc {args.names[0]} / {args.names[1]} | token F1 |")
    print("|---|---:|---:|---:|")
    for cat in sorted({r["category_name"] for r in b}):
        sa, sb = agg([r for r in a if r["category_name"] == cat]), agg([r for r in b if r["category_name"] == cat])
        print(f"| {cat} | {sa['n']} | {sa['judge_acc']} / {sb['judge_acc']} | {sa['f1']} / {sb['f1']} |")
    both = sum(1 for x, y in zip(a, b, strict=True) if x["judge_correct"] and y["judge_correct"])
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x["judge_correct"] and not y["judge_correct"])
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y["judge_correct"] and not x["judge_correct"])
    print(f"\njudged right by both {both}, only by {args.names[0]} {only_a}, only by {args.names[1]} {only_b}")


if __name__ == "__main__":
    main()
