"""Dev loop of issue 23's retrieval side: recall variants on an ingested LoCoMo dev database, one process.

    PYTHONPATH=. .venv/bin/python bench/entity_probe.py --db /tmp/ent/t.duckdb --budget 500 \
        --variant '{}' --variant '{"aspect_queries": "rules"}' [--misses]

Each variant (a JSON object of setting overrides on the ``timem`` recipe, retrieval only, no LLM) runs every
question through the bench's retriever and scoring (:class:`timem.bench.retrieval.TimemRetriever`,
:func:`timem.bench.runner._score`) and prints the row of ``bench/results/scattered-evidence.md``
(:func:`bench.scatter_table.cells`) and where the missing gold turns were among the leaf candidates (in the
top 60 / a candidate below / no candidate). ``--misses`` lists, per missing gold turn, its question and rank.
``--llm local`` gives the variants the embedded model (``aspect_queries=llm``); ``--categories`` and
``--max-questions`` take a slice. It writes no run folder: publish a winner with ``timem bench locomo`` (the
database must have been ingested by it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scatter_table import cells

from timem.bench.recipes import get_recipe
from timem.bench.retrieval import TimemRetriever
from timem.bench.runner import RunSpec, _score, question_time, resolve_config, select_questions
from timem.config import load_config
from timem.datasets import load_dataset
from timem.embed.minilm import MiniLMEmbedder
from timem.engine import MemoryEngine
from timem.llm.factory import make_llm
from timem.store import open_store


def dev_setup(data: str, db: str, budget: int) -> tuple[Any, MiniLMEmbedder, Any, Any, list[Any], RunSpec]:
    """What the dev probes share: the ``timem`` recipe, MiniLM, the store at ``db``, the base config (no LLM,
    ``budget`` tokens), the dataset's users and the retrieval-only run spec."""
    recipe = get_recipe("timem")
    embedder = MiniLMEmbedder()
    store = open_store(db, embedder.model_id, embedder.dim)
    base = load_config(None, llm_backend="none", token_budget=budget)
    users = load_dataset(Path(data), "locomo", tz=base.time.tz)
    spec = RunSpec(dataset="locomo", data_file=Path(data), recipe=recipe, out_dir=Path("/tmp"), retrieval_only=True)
    return recipe, embedder, store, base, users, spec


def capturing_retriever(cfg: Any, store: Any, embedder: Any, recipe: Any, run_key: str) -> tuple[Any, dict[str, Any]]:
    """A bench retriever over a new engine with ``cfg``, and a dict whose ``"r"`` holds the engine's last
    :class:`~timem.recall.pipeline.RecallResult` (its trace: candidates, gate, context ids) after each question."""
    from timem.bench.retrieval import TimemRetriever
    from timem.engine import MemoryEngine

    engine = MemoryEngine(cfg, store, embedder, None)
    last: dict[str, Any] = {}
    original = engine.recall

    def capture(*a: Any, **k: Any) -> Any:
        last["r"] = original(*a, **k)
        return last["r"]

    engine.recall = capture  # type: ignore[method-assign]
    return TimemRetriever(engine, cfg, recipe, run_key=run_key), last


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="tests/data/locomo-dev.json")
    ap.add_argument("--db", required=True)
    ap.add_argument("--budget", type=int, default=500)
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--misses", action="store_true")
    ap.add_argument("--llm", choices=["none", "local"], default="none",
                    help="an LLM for the variants that use one (aspect_queries=llm); the planner and gate stay as "
                         "the recipe sets them")
    ap.add_argument("--categories", default="", help="only these LoCoMo categories, e.g. 1,3 (default: all)")
    ap.add_argument("--max-questions", type=int, default=0, help="only the first N questions (after --categories)")
    ap.add_argument("--dump", help="write one JSON line per question and variant here (question, gold, covered, "
                    "the channel-placed leaves)")
    args = ap.parse_args()
    recipe, embedder, store, base, users, spec = dev_setup(args.data, args.db, args.budget)
    items = select_questions(users, spec)
    if args.categories:
        keep = {int(c) for c in args.categories.split(",")}
        items = [(u, q) for u, q in items if q.category in keep]
    if args.max_questions:
        items = items[:args.max_questions]
    llm = make_llm(base.with_overrides(llm_backend="local"), store) if args.llm == "local" else None
    dump = open(args.dump, "w") if args.dump else None
    for var in args.variant or ["{}"]:
        cfg, _ = resolve_config(base.with_overrides(**json.loads(var)), recipe, True)
        engine = MemoryEngine(cfg, store, embedder, llm)
        last: dict[str, Any] = {}
        original = engine.recall

        def capture(*a: Any, _orig: Any = original, _last: dict[str, Any] = last, **k: Any) -> Any:
            _last["r"] = _orig(*a, **k)
            return _last["r"]

        engine.recall = capture  # type: ignore[method-assign]
        retr = TimemRetriever(engine, cfg, recipe, run_key="probe")
        rows, where, misses = [], Counter[str](), []
        for user, q in items:
            r = retr.retrieve(user.user_id, q.question_id, q.question, question_time(user, q), user.participants)
            row = {"category": q.category, "mem_len": r.mem_len, **_score(spec, user, q, r)}
            rows.append(row)
            ref = {t.id: t.source_ref for t in user.turns}
            trace = last["r"].trace
            cand_nodes = {n.id: n for n in store.nodes(user_id=user.user_id,
                                                       ids=[c.node_id for c in trace.candidates])}
            rank_of: dict[str, int] = {}
            for c in trace.candidates:
                for t in cand_nodes[c.node_id].source_turn_ids if c.node_id in cand_nodes else []:
                    rank_of.setdefault(str(ref.get(t)), c.rank)
            for g in row["evidence"]:
                if g in row["covered"]:
                    continue
                rk = rank_of.get(g)
                where["top60" if rk is not None and rk <= 60 else "below" if rk is not None else "none"] += 1
                misses.append((q.question, g, rk))
            if dump is not None:
                placed = [{"rank": c.rank, "channel": c.channel, "kept": c.kept,
                           "turns": [str(ref.get(t)) for t in cand_nodes[c.node_id].source_turn_ids]
                           if c.node_id in cand_nodes else []}
                          for c in trace.candidates if c.channel]
                dump.write(json.dumps({"variant": var, "question": q.question, "category": q.category,
                                       "evidence": row["evidence"], "covered": sorted(row["covered"]),
                                       "placed": placed}) + "\n")
        print(f"{var:50s} | " + " | ".join(cells(rows)) + f" | missing {sum(where.values())}: {dict(where)}",
              flush=True)
        if args.misses:
            for qq, g, rk in misses:
                print(f"    {g:7s} rank {rk}  {qq}")
    store.close()
    if dump is not None:
        dump.close()


if __name__ == "__main__":
    main()
