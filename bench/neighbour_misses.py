"""Issue 23, retrieval side: where the missing gold turns' neighbours were (is contextual matching worth it?).

    PYTHONPATH=. .venv/bin/python bench/neighbour_misses.py --db /tmp/h23/t.duckdb --budget 500 \
        [--variant '{}'] [--list]

Runs every LoCoMo dev question through the bench's retriever (as :mod:`bench.entity_probe` does, retrieval only, no
LLM; ``--variant``: setting overrides as JSON) and, for each gold turn missing from the context, reads the recall
trace: the rank of the gold turn's own L1 leaf among the leaf candidates (top 60 / a candidate below / none), and
the ranks of its previous and next L1 segment of the same session (``MemoryStore.adjacent_segments``) and whether
those neighbours are in the context. Prints the counts by group; ``--list`` prints every miss with those ranks.
The database must have been ingested by ``timem bench locomo`` (the ``--db`` of a run).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from entity_probe import capturing_retriever, dev_setup

from timem.bench.runner import _score, question_time, resolve_config, select_questions

TOP = 60  #: the leaf candidates kept (``recall_top_k``)


def _bucket(rank: int | None) -> str:
    return "none" if rank is None else "top10" if rank <= 10 else f"top{TOP}" if rank <= TOP else "below"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="tests/data/locomo-dev.json")
    ap.add_argument("--db", required=True)
    ap.add_argument("--budget", type=int, default=500)
    ap.add_argument("--variant", default="{}")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    recipe, embedder, store, base, users, spec = dev_setup(args.data, args.db, args.budget)
    cfg, _ = resolve_config(base.with_overrides(**json.loads(args.variant)), recipe, True)
    retr, last = capturing_retriever(cfg, store, embedder, recipe, "neighbours")
    leaf_of: dict[str, dict[str, str]] = {}  # user -> gold ref -> L1 node id
    counts: Counter[tuple[str, ...]] = Counter()
    lines = []
    for user, q in select_questions(users, spec):
        if user.user_id not in leaf_of:
            ref = {t.id: str(t.source_ref) for t in user.turns}
            leaf_of[user.user_id] = {ref[t]: x.id for x in store.nodes(user_id=user.user_id, level=1)
                                     for t in x.source_turn_ids if t in ref}
        r = retr.retrieve(user.user_id, q.question_id, q.question, question_time(user, q), user.participants)
        row = _score(spec, user, q, r)
        trace = last["r"].trace
        rank = {c.node_id: c.rank for c in trace.candidates}
        in_ctx = set(trace.node_ids)
        missing = [g for g in row["evidence"] if g not in row["covered"]]
        gold_ids = {g: leaf_of[user.user_id].get(g) for g in missing}
        adj = store.adjacent_segments(user.user_id, [i for i in gold_ids.values() if i])
        for g, nid in gold_ids.items():
            prev, nxt = adj.get(nid, (None, None)) if nid else (None, None)
            own = _bucket(rank.get(nid)) if nid else "no leaf"
            pb, nb = _bucket(rank.get(prev)) if prev else "edge", _bucket(rank.get(nxt)) if nxt else "edge"
            p_ctx, n_ctx = bool(prev and prev in in_ctx), bool(nxt and nxt in in_ctx)
            counts[(own, "prev " + pb, "next " + nb, f"prev in ctx {p_ctx}", f"next in ctx {n_ctx}")] += 1
            lines.append(f"{g:7s} own {own:6s} rank {rank.get(nid)!s:4s} prev {pb:6s} {rank.get(prev)!s:4s}"
                         f"{'*' if p_ctx else ' '} next {nb:6s} {rank.get(nxt)!s:4s}{'*' if n_ctx else ' '} "
                         f"{q.question}")
    store.close()
    total = sum(counts.values())
    print(f"{total} missing gold turns at {args.budget} tokens, variant {args.variant}")
    for own in ("top10", f"top{TOP}", "below", "none", "no leaf"):
        sub = {k: v for k, v in counts.items() if k[0] == own}
        n = sum(sub.values())
        if not n:
            continue
        agg: Counter[str] = Counter()
        for k, v in sub.items():
            for part in k[1:]:
                agg[part] += v
        any_nb = sum(v for k, v in sub.items() if k[1] in ("prev top10", f"prev top{TOP}")
                     or k[2] in ("next top10", f"next top{TOP}"))
        print(f"  own {own}: {n}; a neighbour in the top {TOP}: {any_nb}; " + ", ".join(
            f"{p} {agg[p]}" for p in sorted(agg)))
    if args.list:
        print("\n".join(lines))


if __name__ == "__main__":
    main()
