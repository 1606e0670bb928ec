"""How often the answer check (:mod:`timem.recall.answer_check`) would replace a *right* answer, without an LLM.

    PYTHONPATH=. .venv/bin/python bench/answer_check_gold.py RUN/questions.jsonl [--out FILE.md]

RUN is a retrieval-only run of ``timem bench locomo`` (it holds each question's recalled context). The LoCoMo gold
answer stands in for a model's right answer: it is checked against the context and the question as a model's answer
would be. Among the questions whose gold evidence is all in the context (``full_coverage``), a flagged gold answer is
a right answer the check would turn into "I don't know", so that share is the check's cost on answerable questions.
The gold answers are the annotators' wording, not a model's ("Sweden" where a model may say "your home country"),
so this is an estimate, not a measurement of answers. Each gold answer is checked by
:func:`timem.recall.answer_check.check_answer` as ``timem ask`` checks an answer, inside a sentence ("The answer is
GOLD.", an upper bound: its first word then counts as a name) or, with ``--as-written``, as it is.
Category 5 (adversarial) is left out.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from timem.recall.answer_check import check_answer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("questions", type=Path, help="questions.jsonl of a retrieval-only LoCoMo run")
    ap.add_argument("--out", type=Path, default=None, help="write the table as markdown here too")
    ap.add_argument("--as-written", action="store_true", help="check GOLD as written, not inside a sentence")
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if int(r["category"]) != 5 and r.get("full_coverage") is not None]
    total: Counter[str] = Counter()
    flagged: Counter[str] = Counter()
    examples: list[str] = []
    for r in rows:
        for scope in ("all", "full coverage") if r["full_coverage"] == 1.0 else ("all",):
            key = f"{scope} · {r['category_name']}"
            total[key] += 1
            total[scope] += 1
            # as `timem ask` checks an answer (no asker, no assistant lines known, nothing pinned); GOLD as written,
            # and inside a sentence ("The answer is GOLD."), where its capitalised first word counts as a name too
            gold = str(r["gold"]) if args.as_written else f"The answer is {r['gold']}."
            note = check_answer(gold, r["question"], r["context"], [], None, "names")[1]
            names = note.split(" names ", 1)[1].split(";")[0] if note else ""
            if names:
                flagged[key] += 1
                flagged[scope] += 1
                if scope == "all":
                    examples.append(f"- {r['category_name']}, full coverage {r['full_coverage']:.0f}: {r['question']} "
                                    f"→ gold {str(r['gold'])!r}: {names}")
    lines = ["| questions | n | gold answer flagged | share |", "|---|---:|---:|---:|"]
    for key in sorted(total, key=lambda k: (" · " in k, k)):
        lines.append(f"| {key} | {total[key]} | {flagged[key]} | {100 * flagged[key] / total[key]:.1f} % |")
    text = "\n".join([*lines, "", "Flagged (every question):", "", *(examples or ["- none"])]) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
