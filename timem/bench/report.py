"""Summaries (per category, markdown and CSV), plots (plotly HTML) and cross-run comparison tables.

Means are over the questions where a metric is defined: judge accuracy over judged questions
(an UNPARSEABLE verdict counts as wrong and is also counted in ``unparseable``); evidence
coverage over questions with gold evidence; answer-in-context over questions with a short gold
answer (not LongMemEval preference rubrics or abstention explanations). Percentages in markdown,
fractions in CSV.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import mean, median
from typing import Any

from timem.errors import MissingExtraError

COLUMNS = ["group", "n", "judge_acc", "unparseable", "f1", "rouge_l", "evidence_recall", "full_coverage",
           "tree_evidence_recall", "session_recall", "answer_in_context", "date_in_context", "mem_len", "llm_calls",
           "llm_tokens", "judge_tokens", "truncated"]
_PCT = {"judge_acc", "f1", "rouge_l", "evidence_recall", "full_coverage", "tree_evidence_recall", "session_recall",
        "answer_in_context", "date_in_context", "truncated"}
LOCOMO_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def _avg(rows: Sequence[dict[str, Any]], key: str, digits: int = 4) -> float | None:
    vals = [float(r[key]) for r in rows if r.get(key) is not None]
    return round(mean(vals), digits) if vals else None


def groups_for(rows: Sequence[dict[str, Any]], dataset: str) -> list[tuple[str, Callable[[dict[str, Any]], bool]]]:
    """Summary groups: each category in order, ``abstention`` (LongMemEval), then ``overall``."""
    cats = sorted({r["category"] for r in rows}, key=lambda c: (isinstance(c, str), c))
    out: list[tuple[str, Callable[[dict[str, Any]], bool]]] = []
    for c in cats:
        label = f"{c} {LOCOMO_NAMES.get(c, '')}".strip() if dataset == "locomo" else str(c)
        out.append((label, _in_category(c)))
    if dataset == "longmemeval" and any(r.get("abstention") for r in rows):
        out.append(("abstention", lambda r: bool(r.get("abstention"))))
    out.append(("overall", lambda r: True))
    return out


def _in_category(category: int | str) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r["category"] == category


def summarize(rows: Sequence[dict[str, Any]], dataset: str) -> list[dict[str, Any]]:
    """One summary dict per group (keys: :data:`COLUMNS`)."""
    table = []
    for label, pred in groups_for(rows, dataset):
        sel = [r for r in rows if pred(r)]
        judged = [r for r in sel if r.get("judge_label") is not None]
        table.append({
            "group": label, "n": len(sel),
            "judge_acc": round(mean(1.0 if r["judge_correct"] else 0.0 for r in judged), 4) if judged else None,
            "unparseable": sum(1 for r in judged if r["judge_label"] == "UNPARSEABLE") if judged else None,
            "f1": _avg(sel, "f1"), "rouge_l": _avg(sel, "rouge_l"),
            "evidence_recall": _avg(sel, "evidence_recall"), "full_coverage": _avg(sel, "full_coverage"),
            "tree_evidence_recall": _avg(sel, "tree_evidence_recall"), "session_recall": _avg(sel, "session_recall"),
            "answer_in_context": _avg(sel, "answer_in_context"), "date_in_context": _avg(sel, "date_in_context"),
            "mem_len": _avg(sel, "mem_len", 1),
            "llm_calls": _avg(sel, "llm_calls", 2), "llm_tokens": _avg(sel, "llm_tokens", 1),
            "judge_tokens": _avg(sel, "judge_tokens", 1), "truncated": _avg(sel, "truncated"),
        })
    return table


def _cell(key: str, v: Any) -> str:
    if v is None:
        return "–"
    if key in _PCT:
        return f"{100 * v:.1f}"
    return str(v)


def to_csv(table: Sequence[dict[str, Any]], columns: Sequence[str] = COLUMNS) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for row in table:
        w.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in columns})
    return buf.getvalue()


def to_markdown(table: Sequence[dict[str, Any]], columns: Sequence[str] = COLUMNS) -> str:
    """A markdown table; columns that are empty in every row are left out."""
    cols = [c for c in columns if c in ("group", "n") or any(r.get(c) is not None for r in table)]
    head = "| " + " | ".join(cols) + " |\n|" + "|".join("---" for _ in cols) + "|\n"
    return head + "".join("| " + " | ".join(_cell(c, r.get(c)) for c in cols) + " |\n" for r in table)


def summary_markdown(table: Sequence[dict[str, Any]], manifest: dict[str, Any]) -> str:
    recipe = manifest["recipe"]
    lines = [f"# {manifest['dataset']} · recipe `{recipe['name']}` · {manifest['mode']}", "",
             f"{recipe['description']} (method `{recipe['method']}`, group {recipe['group']}).", "",
             f"Data: `{Path(manifest['data_file']).name}` sha256 `{manifest['data_sha256'][:16]}…`, "
             f"selection {json.dumps(manifest['selection'])}; {manifest['n_questions']} questions.",
             f"Models: {json.dumps(manifest['models'])}.", "",
             "Percentages except n, unparseable, mem_len (cl100k tokens of context, mean), llm_calls / llm_tokens "
             "(mean per question, recall + answer) and judge_tokens.", "", to_markdown(table)]
    if manifest.get("notes"):
        lines += ["", "Notes:", *[f"- {n}" for n in manifest["notes"]]]
    return "\n".join(lines) + "\n"


def latency_table(timings: Sequence[dict[str, Any]]) -> str:
    """CSV: per stage, mean / median / p95 / max wall time in ms (volatile: not part of the reproducible outputs).

    p95 is the nearest-rank 95th percentile (the value below which 95 % of the calls fall)."""
    stages = sorted({k for t in timings for k in t["latency_ms"]})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["stage", "n", "mean_ms", "median_ms", "p95_ms", "max_ms"])
    for s in stages:
        vals = [t["latency_ms"][s] for t in timings if s in t["latency_ms"]]
        p95 = sorted(vals)[max(0, math.ceil(0.95 * len(vals)) - 1)]
        w.writerow([s, len(vals), round(mean(vals), 1), round(median(vals), 1), round(p95, 1), round(max(vals), 1)])
    return buf.getvalue()


def write_plots(path: Path, table: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]], title: str) -> None:
    """One HTML page: metrics per group (bars) and the Mem Len distribution; plotly.js beside it, offline."""
    try:
        import plotly.graph_objects as go
        from plotly.offline import get_plotlyjs
        from plotly.subplots import make_subplots
    except ImportError as exc:
        raise MissingExtraError("the benchmark's plots", "bench", "plotly") from exc

    metrics = [m for m in ("judge_acc", "f1", "rouge_l", "evidence_recall", "tree_evidence_recall", "answer_in_context")
               if any(r.get(m) is not None for r in table)]
    fig = make_subplots(rows=1, cols=2, column_widths=[0.65, 0.35],
                        subplot_titles=("metrics per category (%)", "Mem Len (cl100k tokens)"))
    groups = [r["group"] for r in table]
    for m in metrics:
        fig.add_trace(go.Bar(name=m, x=groups, y=[None if r.get(m) is None else 100 * r[m] for r in table]), 1, 1)
    fig.add_trace(go.Histogram(name="Mem Len", x=[r["mem_len"] for r in rows], nbinsx=30, showlegend=False), 1, 2)
    fig.update_layout(title=title, barmode="group", height=520)
    path.write_text(fig.to_html(include_plotlyjs="directory", div_id="timem-bench", full_html=True), encoding="utf-8")
    js = path.parent / "plotly.min.js"
    if not js.exists():
        js.write_text(get_plotlyjs(), encoding="utf-8")


def load_run(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """``(manifest, summary rows as read from summary.csv)`` of a finished run folder."""
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    with (run_dir / "summary.csv").open(encoding="utf-8") as fh:
        return manifest, list(csv.DictReader(fh))


def compare_markdown(run_dirs: Sequence[Path], metric: str = "evidence_recall") -> str:
    """A table with one row per run and one column per group for ``metric`` (plus Mem Len overall)."""
    runs = [load_run(d) for d in run_dirs]
    groups: list[str] = []
    for _, rows in runs:
        groups += [r["group"] for r in rows if r["group"] not in groups]
    if "overall" in groups:
        groups = [g for g in groups if g != "overall"] + ["overall"]
    head = ["recipe", "group", "mode", *groups, "Mem Len"]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for (man, rows), d in zip(runs, run_dirs, strict=True):
        by = {r["group"]: r for r in rows}
        cells = []
        for g in groups:
            v = by.get(g, {}).get(metric, "")
            cells.append(f"{100 * float(v):.1f}" if v not in ("", None) else "–")
        ml = by.get("overall", {}).get("mem_len", "")
        out.append("| " + " | ".join([f"[{man['recipe']['name']}]({d.name}/summary.md)", man["recipe"]["group"],
                                      man["mode"], *cells, ml or "–"]) + " |")
    return "\n".join(out) + "\n"


PUBLISHED = ("summary.md", "summary.csv", "manifest.json", "latency.csv")


def publish(run_dirs: Sequence[Path], dest: Path, title: str, metrics: Sequence[str]) -> Path:
    """Copy each run's summaries (not its per-question contexts) to ``dest/<run>/`` and write
    ``dest/README.md`` with one comparison table per metric; returns that README's path."""
    import shutil

    dest.mkdir(parents=True, exist_ok=True)
    copied = []
    for d in run_dirs:
        target = dest / d.name
        target.mkdir(parents=True, exist_ok=True)
        for name in PUBLISHED:
            if (d / name).exists():
                shutil.copyfile(d / name, target / name)
        copied.append(target)
    parts = [f"# {title}", "",
             "Generated by `timem bench publish` from the run folders; each row links to its summary "
             "(per category) and `manifest.json` (commit, config, models, prompt versions, data SHA-256). "
             "Percentages; Mem Len = mean cl100k tokens of the recalled context over all questions.", ""]
    for m in metrics:
        parts += [f"## {m}", "", compare_markdown(copied, m)]
    (dest / "README.md").write_text("\n".join(parts), encoding="utf-8")
    return dest / "README.md"
