"""Print the markdown table of bench/results/recall-tree.md from the published tree-suite runs.

    .venv/bin/python bench/tree_table.py bench/results/locomo-dev-recall-tree
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ORDER = ["timem", "timem-l1", "timem-index", "segtree-top-down", "segtree-bottom-up", "segtree-both", "segtree-h1",
         "segtree-noroute", "segtree-index", "segtree-index-both",
         "tider-semantic", "tider-channel", "neighbours-none", "neighbours-reply", "context-lines", "unit-exchange",
         "timem-context", "timem-paper", "bm25-turns", "dense-turns", "hybrid-turns"]


def _pct(v: str | None) -> str:
    return "–" if v in (None, "") else f"{100 * float(v):.1f}"


def main(root: Path) -> None:
    print("| recipe | budget | full coverage | evidence recall | answer in context | date in context (cat. 2) "
          "| multi-hop full cov. | Mem Len |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in ORDER:
        for b in ("b500", "b1000"):
            d = root / b / f"locomo-{name}-retrieval"
            if not (d / "summary.csv").exists():
                continue
            rows = {r["group"]: r for r in csv.DictReader((d / "summary.csv").open())}
            o, t, m = rows["overall"], rows.get("2 temporal", {}), rows.get("1 multi-hop", {})
            print(f"| {name} | {b[1:]} | {_pct(o['full_coverage'])} | {_pct(o['evidence_recall'])} | "
                  f"{_pct(o['answer_in_context'])} | {_pct(t.get('date_in_context'))} | "
                  f"{_pct(m.get('full_coverage'))} | "
                  f"{float(o['mem_len']):.0f} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
