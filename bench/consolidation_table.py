"""Print the rows of bench/results/consolidation.md from a run of bench/run_consolidation_modes.sh.

    .venv/bin/python bench/consolidation_table.py /work/runs/modes "1.5b:hybrid 1.5b:abstractive none:extractive"

A run ``model:mode:conv-30`` reads the files of a ``CONVS=conv-30`` run (names ending ``-conv-30``).

Reads, per ``model:mode``: the ``ingest.jsonl`` rows the run appended (by their note), the density JSON
(``MODEL-MODE.density.json``) and the recall run folders (``recall-MODEL-MODE-RECIPE-BUDGET``).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "ingest.jsonl"
RECIPES = ("timem-index", "timem-context")


def _ingest_rows(model: str, mode: str) -> list[dict]:
    note = f"issue 11 mode table: {model} {mode}"
    rows = [json.loads(line) for line in RESULTS.read_text().splitlines() if line.strip()]
    latest: dict[str, dict] = {}
    for r in rows:
        if r.get("note") == note:
            latest[r["sample"]] = r  # the last run of each conversation
    return [latest[k] for k in sorted(latest)]


def _pct(v: float | str | None) -> str:
    return "–" if v in (None, "") else f"{100 * float(v):.1f}"


def main(out: Path, runs: list[str]) -> None:
    print("| model · mode | wall time conv-26 / conv-30 | LLM calls (per turn) | peak RSS | "
          "nodes L2/L3/L4/L5 | mean tokens L2/L3/L4/L5 | answer in L2, cat 1 / cat 4 / all | answer in L3, all |")
    print("|---|---|---|---|---|---|---|---|")
    recall_rows = []
    for run in runs:
        model, mode, *conv = run.split(":")
        tag = f"-{conv[0]}" if conv else ""
        ing = [r for r in _ingest_rows(model, mode) if not conv or r["sample"] == conv[0]]
        walls = " / ".join(f"{r['wall_s'] / 60:.1f} min" for r in ing) or "–"
        calls = sum(r["llm_calls"] for r in ing)
        turns = sum(r["turns"] for r in ing) or 1
        rss = max((r["peak_rss_mb"] for r in ing), default=0)
        dens = json.loads((out / f"{model}-{mode}{tag}.density.json").read_text())
        nodes = {lv: sum(d["levels"][lv]["nodes"] for d in dens.values()) for lv in ("L2", "L3", "L4", "L5")}
        toks = {lv: sum(d["levels"][lv]["mean_tokens"] * d["levels"][lv]["nodes"] for d in dens.values())
                / max(1, nodes[lv]) for lv in nodes}
        agg = {}
        for cat in ("cat 1", "cat 4", "all"):
            n = sum(d["density"][cat]["n"] for d in dens.values())
            agg[cat] = {lv: sum((d["density"][cat][lv] or 0) * d["density"][cat]["n"] for d in dens.values())
                        for lv in ("L2", "L3")} | {"n": n}
        l2 = " / ".join(f"{round(agg[c]['L2'])}/{agg[c]['n']}" for c in ("cat 1", "cat 4", "all"))
        print(f"| {model} · {mode}{tag} | {walls} | {calls} ({calls / turns:.3f}) | {rss / 1024:.1f} GB | "
              f"{'/'.join(str(nodes[lv]) for lv in nodes)} | {'/'.join(f'{toks[lv]:.0f}' for lv in toks)} | "
              f"{l2} | {round(agg['all']['L3'])}/{agg['all']['n']} |")
        for recipe in RECIPES:
            for budget in (500, 1000):
                d = out / f"recall-{model}-{mode}{tag}-{recipe}-{budget}"
                if not (d / "summary.csv").exists():
                    continue
                rows = {r["group"]: r for r in csv.DictReader((d / "summary.csv").open())}
                o = rows["overall"]
                recall_rows.append(f"| {model} · {mode}{tag} | {recipe} | {budget} | {_pct(o['full_coverage'])} | "
                                   f"{_pct(o['evidence_recall'])} | {_pct(o['answer_in_context'])} | "
                                   f"{float(o['mem_len']):.0f} |")
    print()
    print("| tree | recipe | budget | full coverage | evidence recall | answer in context | Mem Len |")
    print("|---|---|---:|---:|---:|---:|---:|")
    print("\n".join(recall_rows))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2].split())
