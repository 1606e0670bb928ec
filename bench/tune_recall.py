"""Dev-loop sweep of recall settings on the LoCoMo dev conversations (retrieval only, no LLM).

Ingests the file once into ``--db`` (verbatim L1 in the given unit; with ``--mode extractive`` also
L2-L5 without an LLM), then runs every ``--variant`` (a JSON object of config overrides) at every
``--budgets`` value through the same retriever and scoring as ``timem bench`` and prints one line
each: full coverage, evidence recall, answer-in-context, date-in-context on temporal questions,
Mem Len, recall p95. It writes no run folder; publish chosen settings with ``timem bench``.

    python bench/tune_recall.py --db /tmp/turn.duckdb --base '{"l1_unit": "turn"}' \
        --variant '{"recall_lambda": 0.5}' --variant '{"recall_lambda": 0.3}' --budgets 500,1000
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from statistics import mean

from timem.bench.recipes import ALL_LEVELS, Recipe
from timem.bench.retrieval import TimemRetriever
from timem.bench.runner import RunSpec, _score, question_time, select_questions
from timem.config import load_config
from timem.datasets import load_dataset
from timem.embed.minilm import MiniLMEmbedder
from timem.engine import MemoryEngine
from timem.store import open_store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="tests/data/locomo-dev.json")
    ap.add_argument("--db", required=True)
    ap.add_argument("--base", default="{}", help="JSON config overrides for ingest and every variant")
    ap.add_argument("--variant", action="append", default=[], help="JSON config overrides (repeatable)")
    ap.add_argument("--budgets", default="500,1000")
    ap.add_argument("--levels", default="1", help="context levels, e.g. 1 or 1,2,3,4,5")
    ap.add_argument("--upper", action="store_true", help="consolidate L2-L5 at ingest (needs a no-LLM mode)")
    ap.add_argument("--dump", help="write the per-question rows of the last variant to this JSONL file")
    args = ap.parse_args()
    base = load_config(None, llm_backend="none", **json.loads(args.base))
    users = load_dataset(Path(args.data), "locomo", tz=base.time.tz)
    embedder = MiniLMEmbedder(batch_size=base.embedding.embed_batch_size)
    store = open_store(args.db, embedder.model_id, embedder.dim)
    t0 = time.perf_counter()
    MemoryEngine(base, store, embedder, None).ingest(users, flush=True, upper_levels=args.upper)
    print(f"ingest {time.perf_counter() - t0:.1f} s; {store.stats()['nodes_per_level']}")
    levels = tuple(int(x) for x in args.levels.split(","))
    quotas = None if levels != (1,) else {c: {1: base.recall.recall_top_k} for c in ("simple", "hybrid", "complex")}
    spec = RunSpec(dataset="locomo", data_file=Path(args.data), recipe=None, out_dir=Path("/tmp"))  # type: ignore[arg-type]
    items = select_questions(users, spec)
    for var in args.variant or ["{}"]:
        over = json.loads(var)
        for budget in (int(b) for b in args.budgets.split(",")):
            extra = ({"quotas": quotas} if quotas and "quotas" not in over and "quotas" not in json.loads(args.base)
                     else {})
            cfg = base.with_overrides(**{"gate": "score", "planner": "centroid", "token_budget": budget, **extra,
                                         **over})
            recipe = Recipe(name="tune", method="timem", group="tune", description="",
                            context_levels=levels or ALL_LEVELS)
            retr = TimemRetriever(MemoryEngine(cfg, store, embedder, None), cfg, recipe, run_key="tune")
            rows, lat = [], []
            for user, q in items:
                t1 = time.perf_counter()
                r = retr.retrieve(user.user_id, q.question_id, q.question, question_time(user, q), user.participants)
                lat.append((time.perf_counter() - t1) * 1000)
                rows.append({"category": q.category, "question": q.question, "gold": q.answer, "context": r.context,
                             "mem_len": r.mem_len, **_score(spec, user, q, r)})

            def avg(key: str, sel=rows) -> float:
                vals = [float(x[key]) for x in sel if x.get(key) is not None]
                return 100 * mean(vals) if vals else float("nan")

            cat2 = [x for x in rows if x["category"] == 2]
            p95 = sorted(lat)[math.ceil(0.95 * len(lat)) - 1]
            print(f"{var:60s} B={budget:5d} full={avg('full_coverage'):5.1f} ev={avg('evidence_recall'):5.1f} "
                  f"ans={avg('answer_in_context'):5.1f} date2={avg('date_in_context', cat2):5.1f} "
                  f"c1={avg('full_coverage', [x for x in rows if x['category'] == 1]):5.1f} "
                  f"c4={avg('full_coverage', [x for x in rows if x['category'] == 4]):5.1f} "
                  f"len={mean(x['mem_len'] for x in rows):6.1f} p95={p95:5.0f}ms", flush=True)
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(x, ensure_ascii=False, default=str) + "\n" for x in rows)
    store.close()


if __name__ == "__main__":
    main()
