"""Fact density of consolidated memories on LoCoMo: is the gold answer in the node above its evidence?

For every question of categories 1 (multi-hop) and 4 (single-hop) with evidence, the L2 session
nodes holding an evidence turn (evidence ``dia_id`` -> turn ``source_ref`` -> L1 segment ->
its active parent) are joined, and the question counts as *dense* when its SQuAD-normalised gold
answer occurs in that text (:func:`timem.recall.evaluate.answer_in_context`). The same for the L3
day nodes above them, and for the L1 segments themselves (the ceiling: the evidence text as
stored). Also reports active nodes and mean cl100k tokens per level.

No LLM and no recall: it reads the tree as written. Usage::

    python bench/consolidation_density.py --db /tmp/wtb.duckdb \
        --data tests/data/locomo-dev.json [--json]
"""

from __future__ import annotations

import argparse
import json
from statistics import mean
from typing import Any

from timem.config import load_config
from timem.datasets import load_dataset
from timem.embed.minilm import MODEL_ID
from timem.models import MemoryNode
from timem.recall.evaluate import answer_in_context, evidence_ids
from timem.store import open_store
from timem.store.ports import MemoryStore
from timem.tokens import count_tokens

CATEGORIES = (1, 4)


def _parents(store: MemoryStore, user: str, nodes: list[MemoryNode]) -> list[MemoryNode]:
    """The active parents of ``nodes`` (deduplicated, in time order)."""
    pids = {p for p in store.parent_ids([n.id for n in nodes]).values() if p}
    return store.nodes(user, ids=sorted(pids)) if pids else []


def density(store: MemoryStore, user: str, questions: list[Any]) -> dict[str, Any]:
    """Per category and overall: questions, and the share dense at L1 (ceiling), L2 and L3."""
    turns = {t.source_ref: t.id for t in store.turns(user) if t.source_ref}
    seg_of: dict[str, MemoryNode] = {t: n for n in store.nodes(user, 1) for t in n.source_turn_ids}
    rows = []
    for q in questions:
        if q.category not in CATEGORIES or q.answer in (None, ""):
            continue
        segs = {seg_of[turns[e]].id: seg_of[turns[e]] for e in evidence_ids(q.evidence)
                if e in turns and turns[e] in seg_of}
        if not segs:
            continue
        l1 = sorted(segs.values(), key=lambda n: n.span_start)
        l2 = _parents(store, user, l1)
        l3 = _parents(store, user, l2)
        rows.append({"category": q.category, **{
            f"L{lv}": answer_in_context(q.answer, "\n".join(n.content for n in ns))
            for lv, ns in ((1, l1), (2, l2), (3, l3))}})
    out: dict[str, Any] = {}
    for name, part in [*((f"cat {c}", [r for r in rows if r["category"] == c]) for c in CATEGORIES), ("all", rows)]:
        out[name] = {"n": len(part), **{lv: round(mean(r[lv] for r in part), 3) if part else None
                                         for lv in ("L1", "L2", "L3")}}
    return out


def level_stats(store: MemoryStore, user: str) -> dict[str, dict[str, float]]:
    """Active nodes and mean cl100k tokens per level, with the modes found there."""
    out = {}
    for lv in range(1, 6):
        ns = store.nodes(user, lv)
        out[f"L{lv}"] = {"nodes": len(ns), "mean_tokens": round(mean(count_tokens(n.content) for n in ns), 1)
                         if ns else 0.0, "modes": sorted({n.mode for n in ns})}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--data", required=True, help="LoCoMo JSON (the users must be ingested into --db)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cfg = load_config(env={}, db_path=args.db)
    store = open_store(args.db, MODEL_ID, 384)
    try:
        result = {}
        for u in load_dataset(args.data, "locomo", tz=cfg.time.tz):
            result[u.user_id] = {"density": density(store, u.user_id, u.questions),
                                 "levels": level_stats(store, u.user_id)}
    finally:
        store.close()
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for user, r in result.items():
        print(f"{user}: " + ", ".join(f"{k} {v['nodes']} ({v['mean_tokens']} tok, {'/'.join(v['modes'])})"
                                      for k, v in r["levels"].items()))
        for name, d in r["density"].items():
            print(f"  {name:<6} n={d['n']:>3}  answer in L1 {d['L1']}  L2 {d['L2']}  L3 {d['L3']}")


if __name__ == "__main__":
    main()
