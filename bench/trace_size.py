"""Recall-trace size and file growth (issue 26 part 5): how much each persisted recall adds to the DuckDB file.

Works on a copy of a store built beforehand, e.g. (LoCoMo dev conv-26, extractive L2-L5, no LLM)::

    timem ingest /work/shared/data/locomo/locomo-dev.json --format locomo --sample conv-26 --llm none \\
        --mode extractive --db /tmp/t.duckdb
    PYTHONPATH=. .venv/bin/python bench/trace_size.py /tmp/t.duckdb --sample conv-26

1. **Persisted recalls.** Every question of the sample is recalled with the default recipe (no LLM:
   centroid planner, score gate) and its trace persisted, as `timem ask` and the chat do. Reported: the
   stored size of each trace (``octet_length(body)``: the compact document, zlib-compressed) as median /
   p95 / max, next to the whole trace as JSON (what was stored before, uncompressed) and the whole trace
   zlib-compressed; and the file growth per recall (file size after ``CHECKPOINT``, before and after).
2. **A long chat under retention.** ``--chat-writes`` (default 10,000) trace writes for one user through
   :meth:`Store.save_trace` with the default retention (``trace_keep_per_user``, ``trace_max_age_days``),
   replaying the documents of step 1 under fresh ids (a write costs the same whatever recall produced
   it), then the same writes with no retention; the file size and trace count every ``--every`` writes.

Results go to ``--out`` (markdown, appended) with the command and commit. Not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _pct(xs: list[int], p: float) -> int:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def _size(store) -> int:
    store.checkpoint()
    wal = Path(str(store.path) + ".wal")
    return os.path.getsize(store.path) + (wal.stat().st_size if wal.exists() else 0)


def persisted_recalls(eng, locomo: Path, sample: str, limit: int | None
                      ) -> tuple[dict[str, object], list[dict]]:
    from timem.datasets.locomo import load_locomo

    (user,) = load_locomo(locomo, [sample], eng.config.time.tz)
    questions = user.questions[:limit] if limit else user.questions
    before_n, before_bytes = eng.store.trace_bytes()
    size0 = _size(eng.store)
    whole, whole_z, ids = [], [], []
    t0 = time.perf_counter()
    for q in questions:
        tr = eng.recall(user.user_id, q.question, q.question_time, participants=user.participants).trace
        raw = json.dumps(tr.model_dump(mode="json"), default=str).encode()
        whole.append(len(raw))
        whole_z.append(len(zlib.compress(raw, 6)))
        ids.append(tr.trace_id)
    seconds = time.perf_counter() - t0
    size1 = _size(eng.store)
    rows = dict(eng.store.con.execute("SELECT id, octet_length(body) FROM recall_traces WHERE id IN "
                                      "(SELECT unnest(?::VARCHAR[]))", [ids]).fetchall())
    sizes = [int(rows[i]) for i in ids]
    docs = eng.store.traces(user.user_id, limit=len(ids))
    inline = sum("text" in d["context"] for d in docs)
    return {
        "user": user.user_id, "recalls": len(ids), "seconds": round(seconds, 1), "traces_before": before_n,
        "stored_median": statistics.median(sizes), "stored_p95": _pct(sizes, 95), "stored_max": max(sizes),
        "whole_json_median": statistics.median(whole), "whole_json_max": max(whole),
        "whole_zlib_median": statistics.median(whole_z),
        "file_before": size0, "file_after": size1, "growth_per_recall": round((size1 - size0) / len(ids)),
        "contexts_kept_as_text": inline, "stored_bytes_before": before_bytes,
    }, docs


def chat_writes(store, docs: list[dict], writes: int, every: int, keep: int | None,
                age: float | None) -> list[tuple[int, int, int]]:
    """``(writes so far, traces stored, file bytes)`` every ``every`` writes."""
    user = docs[0]["user_id"]
    out = [(0, store.trace_bytes()[0], _size(store))]
    for i in range(1, writes + 1):
        doc = dict(docs[i % len(docs)], trace_id=f"chat-{keep}-{i}")
        store.save_trace(doc["trace_id"], user, str(doc["query"]), doc, keep_per_user=keep, max_age_days=age)
        if i % every == 0:
            out.append((i, store.trace_bytes()[0], _size(store)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db", type=Path, help="a store built beforehand (copied; the original is not touched)")
    ap.add_argument("--locomo", type=Path, default=REPO.parent / "shared" / "data" / "locomo" / "locomo-dev.json")
    ap.add_argument("--sample", default="conv-26")
    ap.add_argument("--questions", type=int, default=None, help="first N questions (default all)")
    ap.add_argument("--chat-writes", type=int, default=10_000)
    ap.add_argument("--every", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "trace-size.md")
    args = ap.parse_args()

    from timem.config import load_config
    from timem.engine import MemoryEngine
    from timem.settings import StoreSettings

    tmp = Path(tempfile.mkdtemp(prefix="trace-size-"))
    try:
        path = tmp / "t.duckdb"
        shutil.copy(args.db, path)
        cfg = load_config(env={}, db_path=path, llm_backend="none")
        eng = MemoryEngine.open(cfg, with_llm=False)
        res, docs = persisted_recalls(eng, args.locomo, args.sample, args.questions)
        print(json.dumps(res, indent=1), flush=True)
        eng.close()
        curves = {}
        for label, keep, age in (("default retention", StoreSettings().trace_keep_per_user,
                                  StoreSettings().trace_max_age_days), ("no retention", None, None)):
            shutil.copy(args.db, path)
            Path(str(path) + ".wal").unlink(missing_ok=True)
            eng = MemoryEngine.open(cfg, with_llm=False)
            t0 = time.perf_counter()
            curves[label] = chat_writes(eng.store, docs, args.chat_writes, args.every, keep, age)
            curves[label + " seconds"] = round(time.perf_counter() - t0, 1)
            print(label, curves[label], flush=True)
            eng.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "timem", "bench"], capture_output=True,
                           text=True).stdout.strip()
    _write(args, res, curves, commit + (" (+ uncommitted changes)" if dirty else ""))


def _write(args: argparse.Namespace, res: dict, curves: dict, commit: str) -> None:
    mb = 1024 * 1024
    lines = [f"\n## {time.strftime('%Y-%m-%d %H:%M')} · commit `{commit}` · {args.sample}, default recipe, no LLM\n",
             "```bash", "PYTHONPATH=. .venv/bin/python bench/trace_size.py " + " ".join(sys.argv[1:]), "```", "",
             f"{res['recalls']} persisted recalls of {res['user']}'s questions ({res['seconds']} s; the store held "
             f"{res['traces_before']} traces before).", "",
             "| bytes per trace | median | p95 | max |", "|---|---:|---:|---:|",
             f"| stored (compact, zlib) | {res['stored_median']:,.0f} | {res['stored_p95']:,} "
             f"| {res['stored_max']:,} |",
             f"| whole trace as JSON (stored before) | {res['whole_json_median']:,.0f} | | {res['whole_json_max']:,} |",
             f"| whole trace, zlib | {res['whole_zlib_median']:,.0f} | | |", "",
             f"File growth per persisted recall: **{res['growth_per_recall']:,} bytes** "
             f"({res['file_before'] / mb:.1f} -> {res['file_after'] / mb:.1f} MB after CHECKPOINT). "
             f"Contexts kept as text (the rebuild would not give them exactly): {res['contexts_kept_as_text']}.", "",
             f"A chat of {args.chat_writes:,} trace writes for one user (the documents above under fresh ids), file "
             "size after CHECKPOINT:", "",
             "| writes | traces (default retention) | file MB | traces (no retention) | file MB |",
             "|---:|---:|---:|---:|---:|"]
    for (w, n, size), (_, n2, size2) in zip(curves["default retention"], curves["no retention"], strict=True):
        lines.append(f"| {w:,} | {n:,} | {size / mb:.1f} | {n2:,} | {size2 / mb:.1f} |")
    lines += ["", f"Write time for all: {curves['default retention seconds']} s with retention, "
              f"{curves['no retention seconds']} s without (loaded 2-core machine; not a latency measurement)."]
    if not args.out.exists():
        lines.insert(0, "# Recall-trace size and file growth (issue 26 part 5; `bench/trace_size.py`)\n")
    with args.out.open("a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"appended to {args.out}")


if __name__ == "__main__":
    main()
