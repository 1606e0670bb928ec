"""Held-out proxy of learned fusion for the condensed part of the context (issue 23, "Learned fusion").

    PYTHONPATH=. .venv/bin/python bench/fusion_proxy.py --db /tmp/h44/t.duckdb [--keep 4] [--budget 500]

The default recall runs once per LoCoMo dev question (no LLM); its trace gives every leaf candidate that passed the
score gate, in the fused order, with the scores it already computes. A logistic regression (scikit-learn, fixed
solver, no randomness) over those scores is trained on one conversation's questions and scored on the other's,
both folds: label = the leaf or the turn after it is a gold turn. The held-out order keeps the fused order's first
``--keep`` leaves (the whole-text part of a condensed context, which a full reorder lost before) and sorts the rest
by the model. Proxy metric, as in the earlier attempt: a question is covered within K units when every gold turn is
among the first K leaves or their next turns. Prints, per K, full coverage of the fused and the learned order over
the held-out folds together, and per fold. It measures an order, not a context: no budget, no condensing.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from entity_probe import capturing_retriever, dev_setup
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from timem.bench.runner import question_time, resolve_config, select_questions
from timem.recall.evaluate import evidence_ids

FEATURES = ("fused", "semantic", "bm25", "cosine", "bm25_raw", "has_bm25", "time_bonus", "time_factor", "local",
            "propagated", "inv_rank", "context_only", "name_only", "channel", "log_tokens", "asks", "speaker_named")


def _features(c: Any, content: str, question: str) -> list[float]:
    """The candidate's row of :data:`FEATURES` (its trace fields; the node's text for the last three)."""
    speaker = content.split("\n")[-1].split(":", 1)[0].strip().lower() if ":" in content else ""
    return [c.fused, c.semantic, c.bm25, c.cosine or 0.0, c.bm25_raw or 0.0, float((c.bm25_raw or 0.0) > 0),
            c.time_bonus, c.time_factor, c.local or 0.0, c.propagated or 0.0, 1.0 / c.rank, float(c.context_only),
            float(c.name_only), float(c.channel is not None), math.log1p(len(content.split())),
            float("?" in content), float(bool(speaker) and speaker in question.lower())]


def collect(db: str, data: str, budget: int) -> list[dict[str, Any]]:
    """One record per question with gold turns: user, gold refs, and the gate-passed leaves in fused order, each
    with its features and the refs of its turns and of the turn after it."""
    recipe, embedder, store, base, users, spec = dev_setup(data, db, budget)
    cfg, _ = resolve_config(base, recipe, True)
    retr, last = capturing_retriever(cfg, store, embedder, recipe, "fusion-proxy")
    out = []
    for user, q in select_questions(users, spec):
        gold = evidence_ids(q.evidence)
        retr.retrieve(user.user_id, q.question_id, q.question, question_time(user, q), user.participants)
        if not gold:
            continue
        trace = last["r"].trace
        passed = {d.node_id for d in trace.gate.decisions if d.kept or "dropped by token budget" in d.reason}
        leaves = sorted((c for c in trace.candidates if c.node_id in passed), key=lambda c: c.rank)
        nodes = {n.id: n for n in store.nodes(user_id=user.user_id, ids=[c.node_id for c in leaves])}
        ref = {t.id: str(t.source_ref) for t in user.turns}
        rows = []
        for c in leaves:
            node = nodes.get(c.node_id)
            if node is None:
                continue
            turns = [ref[t] for t in node.source_turn_ids if t in ref]
            nxt = []
            for t in node.source_turn_ids[-1:]:
                head, _, seq = t.rpartition(":")
                nxt = [ref[f"{head}:{int(seq) + 1}"]] if seq.isdigit() and f"{head}:{int(seq) + 1}" in ref else []
            rows.append({"x": _features(c, node.content, q.question), "turns": turns, "next": nxt})
        out.append({"user": user.user_id, "gold": set(gold), "leaves": rows})
    store.close()
    return out


def covered_within(order: list[dict[str, Any]], gold: set[str], k: int) -> bool:
    """Every gold turn among the first ``k`` leaves of ``order`` or the turns after them."""
    seen = {t for leaf in order[:k] for t in leaf["turns"] + leaf["next"]}
    return gold <= seen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--data", default="tests/data/locomo-dev.json")
    ap.add_argument("--budget", type=int, default=500)
    ap.add_argument("--keep", type=int, default=4, help="leaves of the fused order kept in place (0: reorder all)")
    ap.add_argument("--ks", default="4,6,8,10,12")
    args = ap.parse_args()
    records = collect(args.db, args.data, args.budget)
    users = sorted({r["user"] for r in records})
    ks = [int(k) for k in args.ks.split(",")]
    for keep in sorted({0, args.keep}):
        hits = {("fused", k): 0 for k in ks} | {("learned", k): 0 for k in ks}
        per_fold = []
        for held in users:
            train = [leaf for r in records if r["user"] != held for leaf in r["leaves"]]
            x = np.array([leaf["x"] for leaf in train])
            y = np.array([bool(set(leaf["turns"] + leaf["next"]) & r["gold"])
                          for r in records if r["user"] != held for leaf in r["leaves"]])
            scaler = StandardScaler().fit(x)
            model = LogisticRegression(C=1.0, max_iter=2000, solver="lbfgs").fit(scaler.transform(x), y)
            test = [r for r in records if r["user"] == held]
            fold = {("fused", k): 0 for k in ks} | {("learned", k): 0 for k in ks}
            for r in test:
                leaves = r["leaves"]
                if leaves:
                    p = model.predict_proba(scaler.transform(np.array([leaf["x"] for leaf in leaves])))[:, 1]
                    rest = sorted(range(keep, len(leaves)), key=lambda i: (-p[i], i))
                    learned = leaves[:keep] + [leaves[i] for i in rest]
                else:
                    learned = []
                for k in ks:
                    fold[("fused", k)] += covered_within(leaves, r["gold"], k)
                    fold[("learned", k)] += covered_within(learned, r["gold"], k)
            per_fold.append((held, len(test), fold))
            for key, v in fold.items():
                hits[key] += v
        n = len(records)
        print(f"keep the fused first {keep}: held-out folds together, {n} questions with gold turns")
        for k in ks:
            f, lrn = 100 * hits[("fused", k)] / n, 100 * hits[("learned", k)] / n
            folds = "; ".join(f"{u} (n={m}) {100 * fo[('fused', k)] / m:.1f} -> {100 * fo[('learned', k)] / m:.1f}"
                              for u, m, fo in per_fold)
            print(f"  K={k:2d}: fused {f:.1f}  learned {lrn:.1f}  ({lrn - f:+.1f})   per fold: {folds}")


if __name__ == "__main__":
    main()
