"""Prototypes of issue 23 (bench/results/scattered-evidence.md): recall's budget fill patched, dev bench re-run.

    PYTHONPATH=. .venv/bin/python bench/scatter_prototypes.py NAME BUDGET [key=value ...]

runs ``timem bench locomo tests/data/locomo-dev.json --recipe timem --retrieval-only --llm none`` on an ingested
database (``db=``, default /tmp/d0/t.duckdb) into /tmp/exp/NAME with :func:`timem.recall.gating.apply_budget`
replaced by a variant. Keys: ``leaf_cap`` / ``nb_cap`` (cut leaves / neighbour turns to their best passage of
that many tokens), ``trim_after`` (the first N leaves and their neighbours stay whole), ``sess`` (greedy
reorder: fused x sess^(leaves already taken from the same session)), ``beta`` (fused / tokens^beta), ``mmr``
(fused x ((1 - mmr) + mmr x share of new words)), ``nb_top`` (neighbours only for the first N leaves), ``nbq``
(a neighbour only after a question or when it is a leaf candidate), ``filler`` (drop greeting-only sentences),
``set=k=v,...`` (config overrides). The winners became settings (``condense_after``,
``recall_neighbours = "relevant"``); this script keeps the losers reproducible. The runs in the results file
patched the default of commit 2df2d84 (whole memories, next-turn neighbours); on a later commit pass
``recipe=whole-context`` to start from the same recall.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

import timem.recall.gating as gating
import timem.recall.pipeline as pipeline
from timem.bench.cli import bench_app
from timem.recall.context import best_passage
from timem.tokens import count_tokens

NAME, BUDGET, *PAIRS = sys.argv[1:]
P = dict(x.split("=", 1) for x in PAIRS)
ORIGINAL = gating.apply_budget
FILLER = set("""wow awesome great cool thanks thank hey hi hello glad amazing nice really so just totally yeah yes yep
 oh sounds sound love lovely good wonderful incredible fantastic super happy hear that's thats it's its you i mel pal
 buddy congrats congratulations ha haha lol man dude omg ok okay sure absolutely definitely true agree same too also
 stuff means mean lot appreciate bye soon talk later care take""".split())
NAMES = {"caroline", "melanie", "mel", "jon", "gina", "caro"}
SENTENCE, WORD, LONG_WORD = re.compile(r"(?<=[.!?])\s+"), re.compile(r"[a-z']+"), re.compile(r"[a-z]{4,}")


def without_filler(node: Any) -> Any:
    """``node`` without its sentences that hold only greetings, names and stop words (the last one stays)."""
    if int(node.level) != 1:
        return node
    out = []
    for line in node.content.split("\n"):
        speaker, sep, text = line.partition(": ")
        if not sep or len(speaker) > 40:
            out.append(line)
            continue
        sents = [x for x in SENTENCE.split(text) if x.strip()]
        keep = [x for x in sents if any(w not in ENGLISH_STOP_WORDS and w not in FILLER and w not in NAMES
                                        for w in WORD.findall(x.lower()))]
        out.append(f"{speaker}: " + " ".join(keep or (sents[:1] if P["filler"] == "first" else sents[-1:])))
    return node.model_copy(update={"content": "\n".join(out)})


def greedy(ranked: list[Any], value: Any) -> list[Any]:
    """Reorder ``ranked`` greedily by ``value(candidate, chosen so far)``, ranks renumbered."""
    pool, out = list(ranked), []
    while pool:
        best = max(pool, key=lambda c: (value(c, out), -c.rank))
        pool.remove(best)
        out.append(best)
    return [c.model_copy(update={"rank": i}) for i, c in enumerate(out, 1)]


def variant(kept, why, leaves, ancestors, nodes, budget, tz, layout="grouped", neighbours=(), interleave=True,
            question=""):
    ranked = sorted(leaves, key=lambda c: c.rank)
    if "sess" in P:
        s = float(P["sess"])
        ranked = greedy(ranked, lambda c, out: c.fused * s ** sum(
            nodes[o.node_id].session_id == nodes[c.node_id].session_id for o in out))
    if "beta" in P:
        ranked = sorted(ranked, key=lambda c: -c.fused / max(8, count_tokens(nodes[c.node_id].content)) ** float(
            P["beta"]))
        ranked = [c.model_copy(update={"rank": i}) for i, c in enumerate(ranked, 1)]
    if "nbq" in P:
        cand = {c.node_id for c in leaves}
        neighbours = [t for t in neighbours if "?" in nodes[t[0]].content or t[1] in cand]
    if "mmr" in P:
        lam = float(P["mmr"])

        def words(nid: str) -> set[str]:
            return set(LONG_WORD.findall(nodes[nid].content.lower()))

        def novelty(c: Any, out: list[Any]) -> float:
            seen = set().union(*(words(o.node_id) for o in out)) if out else set()
            ws = words(c.node_id)
            return c.fused * ((1 - lam) + lam * len(ws - seen) / max(1, len(ws)))

        ranked = greedy(ranked, novelty)
    if "nb_top" in P:
        top = {c.node_id for c in ranked[: int(P["nb_top"])]}
        neighbours = [t for t in neighbours if t[0] in top]
    if "leaf_cap" in P or "nb_cap" in P:
        pulled, leaf_ids = {nid for _, nid, _ in neighbours}, {c.node_id for c in leaves}
        whole = {c.node_id for c in ranked[: int(P.get("trim_after", 0))]}
        whole |= {nid for leaf, nid, _ in neighbours if leaf in whole}
        nodes = dict(nodes)
        for nid in list(nodes):
            if nid in whole:
                continue
            if nid in leaf_ids and "leaf_cap" in P:
                nodes[nid] = best_passage(nodes[nid], question, int(P["leaf_cap"]))
            elif nid in pulled and "nb_cap" in P:
                nodes[nid] = best_passage(nodes[nid], question, int(P["nb_cap"]))
    if "filler" in P:
        nodes = {k: without_filler(v) for k, v in nodes.items()}
    return ORIGINAL(kept, why, ranked, ancestors, nodes, budget, tz, layout, neighbours, interleave, question)


pipeline.apply_budget = variant
args = ["locomo", "tests/data/locomo-dev.json", "--recipe", P.get("recipe", "timem"), "--retrieval-only",
        "--llm", "none", "--set", f"token_budget={BUDGET}", "--db", P.get("db", "/tmp/d0/t.duckdb"),
        "--out", f"/tmp/exp/{NAME}"]
for pair in filter(None, P.get("set", "").split(",")):
    args += ["--set", pair]
bench_app(args)
