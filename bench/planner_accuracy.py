"""Recall planner accuracy (issue 3 §1): centroid classifier vs LLM planner on the held-out set.

The held-out set is ``timem/recall/planner_eval.json`` (90 questions, 30 per class, written apart
from the 120 examples the centroid classifier is built from). Both planners see the same questions;
a failed LLM call counts as a wrong answer (``"error"``).

Usage (LLM answers are cached in ``--cache``, so a rerun is instant and an interrupted run resumes):

    .venv/bin/python bench/planner_accuracy.py                      # embedded local model
    .venv/bin/python bench/planner_accuracy.py --llm openai         # TIMEM_OPENAI_* endpoint

Writes ``bench/results/planner-accuracy.md`` and ``.json``. Not a test: nothing asserts accuracy.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime
from pathlib import Path

from timem.config import load_config
from timem.embed.minilm import MiniLMEmbedder
from timem.llm.factory import describe_llm, make_llm
from timem.recall.planner import COMPLEXITIES, CentroidPlanner, LLMPlanner, evaluate_planner, load_eval_set
from timem.store import open_store

RESULTS = Path(__file__).parent / "results"
QUESTION_TIME = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)  # fixed, so cached LLM prompts match on rerun


def _table(results: list[dict]) -> str:
    head = "| planner | accuracy | " + " | ".join(f"{c} recall" for c in COMPLEXITIES) + " | seconds |"
    rows = [head, "|" + "---|" * (len(COMPLEXITIES) + 3)]
    for r in results:
        per = " | ".join(f"{r['per_class'][c]['recall']:.2f} (n={r['per_class'][c]['n']})" for c in COMPLEXITIES)
        rows.append(f"| {r['planner']} | **{r['accuracy']:.3f}** ({round(r['accuracy'] * r['n'])}/{r['n']}) | "
                    f"{per} | {r['seconds']} |")
    return "\n".join(rows)


def _confusion(r: dict) -> str:
    preds = [p for p in (*COMPLEXITIES, "error") if any(r["confusion"][g][p] for g in COMPLEXITIES)]
    rows = ["| gold \\ predicted | " + " | ".join(preds) + " |", "|" + "---|" * (len(preds) + 1)]
    rows += [f"| {g} | " + " | ".join(str(r["confusion"][g][p]) for p in preds) + " |" for g in COMPLEXITIES]
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llm", default="local", choices=["local", "openai"])
    ap.add_argument("--cache", type=Path, default=Path("bench/runs/planner-cache.duckdb"))
    ap.add_argument("--out", type=Path, default=RESULTS / "planner-accuracy")
    args = ap.parse_args()
    cfg = load_config(llm_backend=args.llm)
    embedder = MiniLMEmbedder()
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    store = open_store(args.cache, embedder.model_id, embedder.dim)
    items = load_eval_set()
    results = []
    try:
        for name, planner in (("centroid", CentroidPlanner(embedder)), ("llm", LLMPlanner(make_llm(cfg, store)))):
            t = time.perf_counter()
            r = evaluate_planner(planner, items, question_time=QUESTION_TIME, config=cfg)
            r["seconds"] = round(time.perf_counter() - t, 1)
            r["planner"] = name if name == "centroid" else f"llm ({describe_llm(cfg)})"
            results.append(r)
            print(f"{r['planner']}: {r['accuracy']:.3f} in {r['seconds']} s", flush=True)
    finally:
        store.close()
    doc = {"measured_at": datetime.now(UTC).isoformat(timespec="seconds"), "n_questions": len(items),
           "results": results}
    args.out.with_suffix(".json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    md = [f"# Recall planner accuracy ({len(items)} held-out questions)", "",
          ("Command: `.venv/bin/python bench/planner_accuracy.py` "
          f"(measured {doc['measured_at']}; raw numbers and every error in `planner-accuracy.json`)."), "",
          _table(results), ""]
    for r in results:
        md += [f"## {r['planner']}: confusion", "", _confusion(r), ""]
    args.out.with_suffix(".md").write_text("\n".join(md))
    print(args.out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
