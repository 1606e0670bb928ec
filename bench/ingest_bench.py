"""Ingest benchmark (issue 2 §9): wall time, LLM calls per turn, peak RSS, DuckDB bytes per turn.

Usage (a fresh DuckDB file per run; the LLM cache lives in it, so every call is a real call):

    .venv/bin/python bench/ingest_bench.py tests/data/locomo-dev.json --sample conv-26 --llm local
    .venv/bin/python bench/ingest_bench.py tests/data/locomo-dev.json --sample conv-26 --llm none

``--llm none`` measures the verbatim L1 path (turns -> exchanges -> embedded L1 segments) alone.
Results are appended to ``bench/results/ingest.jsonl`` and printed as one markdown row.
Not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from timem.config import load_config
from timem.datasets import load_dataset
from timem.engine import MemoryEngine
from timem.errors import ConsolidationIncomplete

RESULTS = Path(__file__).parent / "results" / "ingest.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=Path)
    ap.add_argument("--format", default="locomo")
    ap.add_argument("--sample", default=None)
    ap.add_argument("--llm", default="local", choices=["local", "openai", "none"])
    ap.add_argument("--l1-mode", default="verbatim", choices=["verbatim", "llm"])
    ap.add_argument("--mode", default=None, choices=["extractive", "hybrid", "abstractive"],
                    help="L2-L5 consolidation mode (default: the backend's, extractive for local/none)")
    ap.add_argument("--local-model", default=None, choices=["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"],
                    help="embedded model (default: the configured one, 1.5B)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="any other config field, e.g. memory_extractor=rules (repeatable)")
    ap.add_argument("--db", type=Path, default=None, help="default: a new temp file")
    ap.add_argument("--note", default="")
    args = ap.parse_args()

    db = args.db or Path(tempfile.mkdtemp()) / "bench.duckdb"
    fresh_db = not db.exists()
    overrides: dict[str, str] = dict(kv.split("=", 1) for kv in args.set)
    overrides |= {k: v for k, v in (("consolidation_mode", args.mode), ("local_model", args.local_model)) if v}
    cfg = load_config(db_path=str(db), llm_backend=args.llm, l1_mode=args.l1_mode, **overrides)
    users = load_dataset(args.file, args.format, sample_ids=args.sample.split(",") if args.sample else None,
                         tz=cfg.time.tz)
    n_turns = sum(len(s.turns) for u in users for s in u.sessions)
    t_open = time.perf_counter()
    engine = MemoryEngine.open(cfg)
    open_s = time.perf_counter() - t_open
    before = engine.stats()  # a reused --db: count only this run's calls and tokens
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    failed: list[str] = []
    try:
        report = engine.ingest(users)
    except ConsolidationIncomplete as exc:  # a real outcome (windows whose answer was unusable): recorded
        report, failed = exc.report, [f"L{lv} {key}" for lv, key, _ in exc.failures]
    wall = time.perf_counter() - t0
    stats = {k: (v - before.get(k, 0) if isinstance(v, int) else v) for k, v in engine.stats().items()}
    per_purpose = engine.llm_usage(started)
    engine.close()
    row = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], check=False, capture_output=True,
                                 text=True).stdout.strip(),
        "machine": f"{platform.machine()} {platform.node()}", "file": args.file.name, "sample": args.sample,
        "llm": args.llm, "l1_mode": args.l1_mode,
        "mode": cfg.consolidation.consolidation_mode, "set": args.set,
        "local_model": cfg.llm.local_model if args.llm == "local" else None, "turns": n_turns,
        "nodes": report.nodes_added,
        "wall_s": round(wall, 1), "open_s": round(open_s, 1), "turns_per_s": round(n_turns / wall, 1),
        "llm_calls": stats["llm_calls"], "llm_calls_per_turn": round(stats["llm_calls"] / n_turns, 3),
        "prompt_tokens": stats["prompt_tokens"], "completion_tokens": stats["completion_tokens"],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "llm_by_purpose": per_purpose,
        "db_bytes_per_turn": round(db.stat().st_size / n_turns) if fresh_db else None, "note": args.note,
        "failed_windows": failed,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as fh:
        fh.write(json.dumps(row) + "\n")
    print("| sample | llm | turns | wall s | turns/s | LLM calls/turn | peak RSS MB | DB bytes/turn |")
    print(f"| {args.sample} | {args.llm} | {n_turns} | {row['wall_s']} | {row['turns_per_s']} | "
          f"{row['llm_calls_per_turn']} | {row['peak_rss_mb']} | {row['db_bytes_per_turn']} |")


if __name__ == "__main__":
    main()
