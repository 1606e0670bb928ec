"""Coverage against token budget (issue 23): a plotly HTML, a PNG and a markdown table from bench runs.

    bash bench/run_budget_curve.sh   # runs into bench/runs/curve/b<budget>/locomo-<recipe>-retrieval
    PYTHONPATH=. .venv/bin/python bench/budget_curve.py bench/runs/curve --out bench/results/budget-curve

Reads each run's ``questions.jsonl`` (full coverage: every gold turn in the context), marks the context sizes that
peers publish per question (mem0 ~7,000, Zep ~5,800, MemOS ~5,400 cl100k tokens) and writes ``curve.html``
(plotly.js from its CDN), ``curve.png`` (the same page rendered by headless Chromium, plotly.js from the installed
package) and ``curve.md``. Chromium: ``make browser-deps``.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import tempfile
from pathlib import Path

import plotly.graph_objects as go

PEERS = {"mem0": 7000, "Zep": 5800, "MemOS": 5400}
LABELS = {"timem": "TiMem default", "timem-l1": "L1-only ablation",
          "whole-context": "default before issue 23 (whole-context)", "bm25-turns": "BM25 over turns",
          "dense-turns": "dense over turns", "hybrid-turns": "hybrid over turns"}


def load(root: Path) -> dict[str, dict[int, tuple[float, float, float]]]:
    """``{recipe: {budget: (full coverage %, answer in context %, mean Mem Len)}}`` from the runs
    ``root/b<budget>/locomo-<recipe>-retrieval``."""
    out: dict[str, dict[int, tuple[float, float, float]]] = {}
    for qfile in sorted(root.glob("b*/locomo-*-retrieval/questions.jsonl")):
        budget = int(qfile.parent.parent.name[1:])
        recipe = qfile.parent.name.removeprefix("locomo-").removesuffix("-retrieval")
        rows = [json.loads(line) for line in qfile.open(encoding="utf-8")]
        full = [r["full_coverage"] for r in rows if r["full_coverage"] is not None]
        aic = [r["answer_in_context"] for r in rows if r.get("answer_in_context") is not None]
        out.setdefault(recipe, {})[budget] = (100 * sum(full) / len(full), 100 * sum(aic) / max(1, len(aic)),
                                              sum(r["mem_len"] for r in rows) / len(rows))
    return out


def figure(data: dict[str, dict[int, tuple[float, float, float]]]) -> go.Figure:
    fig = go.Figure()
    for recipe, points in data.items():
        xs = sorted(points)
        fig.add_trace(go.Scatter(x=xs, y=[round(points[b][0], 1) for b in xs], mode="lines+markers",
                                 name=LABELS.get(recipe, recipe)))
    for i, (name, tokens) in enumerate(PEERS.items()):
        fig.add_shape(type="line", x0=tokens, x1=tokens, y0=0, y1=100, line={"dash": "dot", "color": "grey"})
        fig.add_annotation(x=math.log10(tokens), y=8 + 7 * i, text=f"{name} ≈ {tokens:,}", showarrow=False,
                           xanchor="right", font={"color": "grey"})
    ticks = sorted({b for pts in data.values() for b in pts} | set(PEERS.values()))
    fig.update_layout(title="LoCoMo dev (conv-26, conv-30): every gold turn in the context, by context size",
                      xaxis_title="context budget (cl100k tokens, log scale)", yaxis_title="full coverage (%)",
                      xaxis={"type": "log", "tickvals": ticks, "ticktext": [f"{t:,}" for t in ticks],
                             "range": [math.log10(200), math.log10(8000)]},
                      yaxis_range=[0, 100], width=1100, height=620, template="plotly_white")
    return fig


def table(data: dict[str, dict[int, tuple[float, float, float]]]) -> str:
    budgets = sorted({b for pts in data.values() for b in pts})
    head = "| recipe (full coverage / answer in context, %) | " + " | ".join(f"{b:,}" for b in budgets) + " |"
    lines = [head, "|---|" + "---:|" * len(budgets)]
    for recipe, pts in data.items():
        cells = [f"{pts[b][0]:.1f} / {pts[b][1]:.1f}" if b in pts else "" for b in budgets]
        lines.append(f"| {LABELS.get(recipe, recipe)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def screenshot(fig: go.Figure, png: Path) -> None:
    """Render ``fig`` to ``png`` with headless Chromium (plotly.js next to the page, no network)."""
    browser = shutil.which("chromium") or shutil.which("google-chrome")
    if browser is None:
        raise SystemExit("no chromium found for the PNG; run `make browser-deps`")
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "curve.html"
        fig.write_html(page, include_plotlyjs="directory", config={"displayModeBar": False})
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--screenshot={png.resolve()}", "--window-size=1120,640", "--virtual-time-budget=5000",
                        page.as_uri()], check=True, capture_output=True, timeout=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path, help="folder with b<budget>/locomo-<recipe>-retrieval runs")
    ap.add_argument("--out", type=Path, required=True, help="output folder")
    args = ap.parse_args()
    data = load(args.runs)
    if not data:
        raise SystemExit(f"no runs under {args.runs}")
    args.out.mkdir(parents=True, exist_ok=True)
    fig = figure(data)
    fig.write_html(args.out / "curve.html", include_plotlyjs="cdn")
    screenshot(fig, args.out / "curve.png")
    (args.out / "curve.md").write_text(table(data), encoding="utf-8")
    print(table(data))


if __name__ == "__main__":
    main()
