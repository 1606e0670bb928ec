"""Retrievers over the memory store: TiMem recall (``timem``) and pooled per-level search (``flat``).

Every retriever returns a :class:`Retrieved`: the context handed to the answerer, its Mem Len
(cl100k tokens) and what it was made of (turn ids for evidence coverage, node ids, levels). The
baselines over raw turns live in :mod:`timem.bench.baselines` and return the same type.

Token budget (all methods but ``full-context``): memories are added in priority order while the
rendered context stays within ``Config.recall.token_budget`` tokens; one that does not fit is skipped and
a smaller later one may still fit — the rule of :func:`timem.recall.gating.apply_budget`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from pydantic import BaseModel, Field

from timem.bench.recipes import Recipe
from timem.config import Config
from timem.embed.protocol import Embedder
from timem.models import Level, MemoryNode
from timem.recall.context import fit_budget, render_context
from timem.recall.gating import GateMode
from timem.recall.keywords import extract_keywords
from timem.recall.leaves import fuse
from timem.recall.options import RecallOptions
from timem.recall.trace import LLMCall
from timem.recall.trace_store import save_trace
from timem.settings import StoreSettings
from timem.store.ports import MemoryStore

if TYPE_CHECKING:
    from timem.engine import MemoryEngine

T = TypeVar("T")


class Retrieved(BaseModel):
    """What one retrieval put in front of the answerer.

    ``turn_ids``: raw turns in the context, or the source turns of its L1 segments (the "leaves");
    ``tree_turn_ids``: also every turn under an L2–L5 node in the context.
    """

    context: str
    mem_len: int
    turn_ids: list[str] = Field(default_factory=list)
    tree_turn_ids: list[str] = Field(default_factory=list)
    node_ids: list[str] = Field(default_factory=list)
    level_counts: dict[str, int] = Field(default_factory=dict)
    complexity: str | None = None
    gate_applied: str | None = None
    trace_id: str | None = None
    llm_calls: list[LLMCall] = Field(default_factory=list)
    truncated: bool | None = None  #: full-context only
    kept_turns: int | None = None  #: full-context only: turns that fit the window
    notes: list[str] = Field(default_factory=list)


class TreeIndex:
    """Turn ids under memory nodes (walking ``child_ids`` down to L1 ``source_turn_ids``), memoised.

    ``nodes_by_id``: the nodes of the given ids, any status (a store's or the engine's ``nodes``).
    """

    def __init__(self, nodes_by_id: Callable[[list[str]], list[MemoryNode]]) -> None:
        self.nodes_by_id = nodes_by_id
        self._turns: dict[str, list[str]] = {}

    def turns_under(self, nodes: Sequence[MemoryNode]) -> list[str]:
        out: list[str] = []
        for n in nodes:
            out += self._under(n)
        return list(dict.fromkeys(out))

    def _under(self, node: MemoryNode) -> list[str]:
        if node.id not in self._turns:
            if int(node.level) == 1:
                self._turns[node.id] = list(node.source_turn_ids)
            else:
                kids = self.nodes_by_id(list(node.child_ids)) if node.child_ids else []
                self._turns[node.id] = [t for k in kids for t in self._under(k)]
        return self._turns[node.id]


def _describe(nodes: Sequence[MemoryNode], tree: TreeIndex) -> dict[str, Any]:
    leaves = [t for n in nodes if int(n.level) == 1 for t in n.source_turn_ids]
    counts: dict[str, int] = {}
    for n in nodes:
        counts[f"L{int(n.level)}"] = counts.get(f"L{int(n.level)}", 0) + 1
    return {"turn_ids": list(dict.fromkeys(leaves)), "tree_turn_ids": tree.turns_under(nodes),
            "node_ids": [n.id for n in nodes], "level_counts": dict(sorted(counts.items()))}


def trace_id_for(run_key: str, question_id: str) -> str:
    """A deterministic trace id (so that a re-run writes byte-identical per-question records)."""
    return "bench-" + hashlib.sha256(f"{run_key}|{question_id}".encode()).hexdigest()[:20]


class TimemRetriever:
    """TiMem recall through the engine facade (:meth:`timem.engine.MemoryEngine.recall`: its store, embedder
    and LLM, which is ``None`` in a retrieval-only run) under a recipe; traces saved with deterministic ids.

    With ``recipe.context_levels`` narrower than L1–L5, recall runs without a token budget, the
    other levels are dropped, and the budget is applied to what remains in recall's priority order.
    """

    def __init__(self, engine: MemoryEngine, config: Config, recipe: Recipe, run_key: str,
                 gate_override: GateMode | None = None, planner_override: str | None = None) -> None:
        self.engine, self.config, self.recipe = engine, config, recipe
        self.run_key, self.gate_override, self.planner_override = run_key, gate_override, planner_override
        self.tree = TreeIndex(lambda ids: engine.nodes(ids=ids, status=None))
        self.restrict = set(recipe.context_levels) != {1, 2, 3, 4, 5}

    def retrieve(self, user_id: str, question_id: str, question: str, question_time: datetime,
                 participants: Sequence[str]) -> Retrieved:
        cfg = self.config.with_overrides(token_budget=10**9) if self.restrict else self.config
        options = RecallOptions(complexity=self.recipe.complexity, gate=self.gate_override,
                                planner=self.planner_override, participants=tuple(participants), persist=False,
                                config=cfg)
        res = self.engine.recall(user_id, question, question_time, options)
        nodes, context, tokens = res.nodes, res.context, res.mem_len
        trace = res.trace
        notes = list(trace.notes)
        if self.restrict:
            allowed = [n for n in nodes if int(n.level) in self.recipe.context_levels]
            nodes, context, tokens = fit_budget(
                allowed, lambda ns: render_context(ns, self.config.time.tz, self.config.recall.context_layout),
                self.config.recall.token_budget)
            notes.append(f"context restricted to levels {list(self.recipe.context_levels)}, then budgeted")
            trace = trace.model_copy(update={"node_ids": [n.id for n in nodes], "context": context,
                                             "context_tokens": tokens, "notes": notes})
        trace = trace.model_copy(update={"trace_id": trace_id_for(self.run_key, question_id)})
        # a run names every trace in its questions.jsonl: keep them all (no retention rule, unlike a chat)
        save_trace(self.engine.store, trace, StoreSettings(trace_keep_per_user=None, trace_max_age_days=None))
        return Retrieved(context=context, mem_len=tokens, complexity=trace.plan.complexity,
                         gate_applied=trace.gate.applied, trace_id=trace.trace_id, llm_calls=list(trace.llm_calls),
                         notes=notes, **_describe(nodes, self.tree))


class FlatRetriever:
    """Each level of ``recipe.context_levels`` searched on its own (no planner, no tree walk, no gate).

    Per level, the top ``Config.recall.recall_candidates`` by cosine and by BM25 (query: the question and
    its deterministic keywords) are fused with :func:`timem.recall.leaves.fuse`
    (``λ·semantic + (1 − λ)·bm25``, max-normalised per level) and the level's
    ``quotas["complex"]`` best are kept; the pool is ranked by fused score (ties: lower level, id)
    and cut by the token budget.
    """

    def __init__(self, store: MemoryStore, embedder: Embedder, config: Config, recipe: Recipe) -> None:
        self.store, self.embedder, self.config, self.recipe = store, embedder, config, recipe
        self.tree = TreeIndex(lambda ids: store.nodes(ids=ids, status=None))

    def retrieve(self, user_id: str, question_id: str, question: str, question_time: datetime,
                 participants: Sequence[str]) -> Retrieved:
        cfg = self.config
        qvec = np.asarray(self.embedder.embed([question])[0])
        query = " ".join([question, *extract_keywords(question, participants)])
        quotas = cfg.recall.quotas.get("complex", {})
        pool: list[tuple[float, int, str]] = []
        for level in self.recipe.context_levels:
            quota = min(cfg.recall.recall_top_k, quotas.get(level, 0)) if level == 1 else quotas.get(level, 0)
            if quota <= 0:
                continue
            vec = dict(self.store.search_vector(user_id, qvec, level, cfg.recall.recall_candidates))
            lex = dict(self.store.search_bm25(user_id, query, level, cfg.recall.recall_candidates))
            fused = fuse(vec, lex, cfg.recall.recall_lambda, top_k=quota)
            pool += [(c.fused, level, c.node_id) for c in fused if c.kept]
        pool.sort(key=lambda t: (-t[0], t[1], t[2]))
        by_id = {n.id: n for n in self.store.nodes(user_id=user_id, ids=[p[2] for p in pool])} if pool else {}
        ranked = [by_id[p[2]] for p in pool if p[2] in by_id]
        tz, layout = cfg.time.tz, cfg.recall.context_layout
        nodes, context, tokens = fit_budget(ranked, lambda ns: render_context(ns, tz, layout), cfg.recall.token_budget)
        return Retrieved(context=context, mem_len=tokens,
                         notes=[f"flat over levels {list(self.recipe.context_levels)}"], **_describe(nodes, self.tree))


def level_counts(store: MemoryStore, user_id: str) -> dict[int, int]:
    """Active nodes per level of one user."""
    return {int(lv): len(store.nodes(user_id=user_id, level=int(lv))) for lv in Level}
