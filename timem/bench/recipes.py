"""Named, declarative benchmark recipes: the paper's ablations and our baselines.

A :class:`Recipe` is data: a retrieval *method*, :class:`~timem.config.Config` overrides and a few
recall options. The runner (:mod:`timem.bench.runner`) interprets it; nothing here runs code.

Methods:

* ``timem`` — the TiMem recall pipeline (:func:`timem.recall.recall`: planner, hybrid leaf
  selection ``s = λ·semantic + (1 − λ)·BM25`` (TiMem §3.3), ancestor propagation, gating, token
  budget). ``complexity`` fixes the complexity instead of the planner. ``context_levels`` below
  all five keeps only those levels in the context (re-budgeted, see the runner).
* ``flat`` — no tree walk, no planner, no gate: every level in ``context_levels`` is searched
  on its own with the same fused score and contributes its ``quotas["complex"]`` top nodes; the
  pool is ranked by fused score and cut by the token budget (:mod:`timem.bench.flat`).
* ``bm25-turns`` / ``dense-turns`` / ``hybrid-turns`` — baselines over the raw turns, each
  prefixed with its session date: rank-bm25 BM25Okapi, MiniLM cosine, or their fusion with the
  same λ; the top ``top_k`` turns, cut by the same token budget (:mod:`timem.bench.baselines`).
* ``full-context`` — every turn in time order, the oldest dropped until the prompt fits the
  model's window; reported as truncated when anything was dropped.

"Flat" versus "hierarchical" in the level ablation therefore means: levels searched
independently as one pool (flat) versus reached through the tree by TiMem's recall
(hierarchical). ``l1-hier`` runs the pipeline with L1-only quotas, so it differs from ``l1-flat``
by the planner's keyword query and the gate only; ``l2l5-hier`` uses L1 leaves as anchors for
ancestor propagation and drops them from the context.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from timem.config import PAPER_QUOTAS, SECTION_OF, Complexity, Config
from timem.errors import ConfigError

Method = Literal["timem", "flat", "bm25-turns", "dense-turns", "hybrid-turns", "full-context"]
ALL_LEVELS = (1, 2, 3, 4, 5)
L1_ONLY_QUOTAS = {c: {1: 20} for c in ("simple", "hybrid", "complex")}  # as in the published λ and granularity sweeps


class Recipe(BaseModel):
    """One named benchmark configuration (see the module docstring)."""

    model_config = ConfigDict(frozen=True)
    name: str
    method: Method
    group: str  #: the ablation it belongs to ("default", "planner", "gating", "levels", "lambda", ...)
    description: str
    #: settings by plain name (:data:`timem.config.SECTION_OF`), checked against their typed sections when the
    #: recipe is made: an unknown name or an invalid value is an error there, not at run time
    overrides: dict[str, Any] = Field(default_factory=dict)
    complexity: Complexity | None = None  #: timem only: fixed complexity instead of the planner
    context_levels: tuple[int, ...] = ALL_LEVELS  #: levels allowed in the context
    top_k: int = 40  #: raw-turn baselines: turns ranked before the token budget

    @field_validator("overrides")
    @classmethod
    def _typed(cls, v: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(v) - set(SECTION_OF))
        if unknown:
            raise ValueError(f"unknown setting(s) {unknown}; a recipe overrides settings by name, e.g. token_budget")
        Config(**v)  # each value against its section's type and bounds
        return v

    @property
    def needs_upper_levels(self) -> bool:
        """Whether the recipe needs L2–L5 memories in the store (i.e. an LLM at ingest time)."""
        if self.method == "flat":
            return any(lv > 1 for lv in self.context_levels)
        if self.method != "timem":
            return False
        quotas = self.overrides.get("quotas")
        upper_quota = quotas is None or any(lv > 1 and n > 0 for q in quotas.values() for lv, n in q.items())
        return upper_quota and any(lv > 1 for lv in self.context_levels)

    @property
    def uses_store(self) -> bool:
        """Whether the recipe reads memory nodes (baselines only read the dataset's turns)."""
        return self.method in ("timem", "flat")


def _r(name: str, method: Method, group: str, description: str, **kw: Any) -> Recipe:
    return Recipe(name=name, method=method, group=group, description=description, **kw)


_L1 = {"quotas": L1_ONLY_QUOTAS}
_PAPER = {"quotas": PAPER_QUOTAS}
# the level ablation needs L2-L5 in the context; the default quotas are L1-only
_TIMEM_INDEX = {"recall_index": "timem"}
_RECIPES: list[Recipe] = [
    _r("timem", "timem", "default", "recall with the configured defaults (turn leaves, relevance propagation "
       "over the segment tree, TIDER decay, relevant next-turn neighbours, condensed after 4 leaves, L1-only "
       "context quotas)"),
    # planner vs fixed complexity
    _r("planner-centroid", "timem", "planner", "centroid planner (no LLM)", overrides={"planner": "centroid"}),
    _r("planner-llm", "timem", "planner", "LLM planner", overrides={"planner": "llm"}),
    *[_r(f"fixed-{c}", "timem", "planner", f"no planner: every question treated as {c}", complexity=c)
      for c in ("simple", "hybrid", "complex")],
    # gating
    _r("gate-llm", "timem", "gating", "LLM gate (score gate in retrieval-only runs)", overrides={"gate": "llm"}),
    _r("gate-score", "timem", "gating", "score gate: fused >= gate_threshold", overrides={"gate": "score"}),
    _r("gate-off", "timem", "gating", "no gate: every leaf and ancestor up to the token budget",
       overrides={"gate": "off"}),
    # memory levels, flat vs hierarchical
    _r("l1-flat", "flat", "levels", "L1 only, flat: top L1 segments by fused score", context_levels=(1,)),
    _r("l1-hier", "timem", "levels", "L1 only through TiMem recall (planner keywords, gate), no ancestors",
       overrides=_L1, context_levels=(1,)),
    _r("l2l5-hier", "timem", "levels", "L2-L5 only: TiMem recall, L1 leaves used as anchors and dropped",
       overrides=_PAPER, context_levels=(2, 3, 4, 5)),
    _r("l1l5-flat", "flat", "levels", "L1-L5 flat: each level searched alone, pooled by fused score",
       overrides=_PAPER),
    _r("l1l5-hier", "timem", "levels", "L1-L5 hierarchical: TiMem recall with the paper's level quotas",
       overrides=_PAPER),
    # lambda sweep
    *[_r(f"lambda-{x:.1f}", "timem", "lambda", f"λ = {x:.1f} (semantic weight of the fused leaf score)",
         overrides={"recall_lambda": x}) for x in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)],
    *[_r(f"lambda-{x:.1f}-l1", "timem", "lambda (L1 only)", f"λ = {x:.1f}, L1-only quotas (no L2-L5 needed)",
         overrides={"recall_lambda": x, **_L1}, context_levels=(1,))
      for x in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)],
    # L1 granularity (a separate database per value)
    *[_r(f"gran-{n}", "timem", "granularity", f"{n} exchange(s) per L1 segment, full TiMem recall",
         overrides={"l1_segment_exchanges": n}) for n in (1, 2, 4, 8)],
    *[_r(f"gran-{n}-l1", "timem", "granularity (L1 only)", f"{n} exchange(s) per L1 segment, L1-only quotas",
         overrides={"l1_segment_exchanges": n, **_L1}, context_levels=(1,)) for n in (1, 2, 4, 8)],
    # tree-aware recall (issue 10). The ablations below were measured against the default of the time,
    # propagation over the TiMem tree; they pin recall_index="timem" so that their published rows stay
    # what they were (bench/results/recall-tree.md). "timem" itself now uses the segment tree.
    _r("timem-l1", "timem", "tree", "the default without relevance propagation: L1 leaves only, no tree used "
       "(its L1-only ablation)", overrides={"propagation": "off"}),
    _r("timem-index", "timem", "tree", "relevance propagation over the TiMem tree (L2 sessions, L3 days) instead "
       "of the segment tree: the default before the segment tree won on dev", overrides=_TIMEM_INDEX),
    *[_r(f"segtree-{d}", "timem", "tree", f"SegTreeMem relevance propagation {d} over the TiMem tree (H=2, α=0.2)",
         overrides={"propagation": d, **_TIMEM_INDEX}) for d in ("top-down", "bottom-up", "both")],
    _r("segtree-index", "timem", "tree", "SegTreeMem's own segment tree as the propagation index instead of "
       "the TiMem tree (top-down, H=2, α=0.2; timem.segtree)", overrides={"recall_index": "segtree"}),  # = the default
    _r("segtree-index-both", "timem", "tree", "the segment tree as the index, propagation in both directions",
       overrides={"recall_index": "segtree", "propagation": "both"}),
    _r("segtree-h1", "timem", "tree", "top-down propagation, one hop (sessions only)",
       overrides={"propagation_hops": 1, **_TIMEM_INDEX}),
    _r("segtree-noroute", "timem", "tree", "top-down propagation without routing leaves from the best session",
       overrides={"propagation_route": 0, **_TIMEM_INDEX}),
    _r("tider-semantic", "timem", "tree", "TIDER ablation: semantic + BM25 only (no time channel)",
       overrides={"time_channel": "off", **_TIMEM_INDEX}),
    _r("tider-channel", "timem", "tree", "TIDER ablation: + time channel and overlap bonus, no decay",
       overrides={"time_channel": "channel", **_TIMEM_INDEX}),
    _r("tider-decay", "timem", "tree", "TIDER ablation: + distance decay (= timem-index)",
       overrides={"time_channel": "decay", **_TIMEM_INDEX}),
    *[_r(f"tider-events-{n}", "timem", "tree", f"TIDER's event pool over the L1 leaves (7 days, cosine 0.85, "
         f"40 per event): the members of the best {n} event(s) join the leaf candidates (timem.recall.events)",
         overrides={"event_pool": n}) for n in (1, 3)],
    *[_r(f"prf-{n}", "timem", "tree", f"pseudo-relevance feedback: {n} words of the best 5 first-pass leaves "
         "added to the BM25 query (RM3-style)", overrides={"prf_terms": n}) for n in (3, 8)],
    _r("neighbours-none", "timem", "tree", "no neighbour turns",
       overrides={"recall_neighbours": "none", **_TIMEM_INDEX}),
    _r("neighbours-reply", "timem", "tree", "neighbour only after a leaf that asks a question",
       overrides={"recall_neighbours": "reply", **_TIMEM_INDEX}),
    _r("context-lines", "timem", "tree", "one date per memory line instead of one header per session",
       overrides={"context_layout": "lines", **_TIMEM_INDEX}),
    _r("unit-exchange", "timem", "tree", "exchange leaves (a turn and its reply) instead of turns",
       overrides={"l1_unit": "exchange", **_TIMEM_INDEX}),
    _r("timem-context", "timem", "tree", "the default with TiMem's level quotas: L2-L5 ancestors in the context",
       overrides={"quotas": PAPER_QUOTAS, **_TIMEM_INDEX}),
    _r("timem-paper", "timem", "tree", "TiMem as published and as it was here before: exchange leaves, λ 0.9, "
       "20 of 40 candidates, ancestors by quota, one date per line, no neighbours, time or propagation",
       overrides={"l1_unit": "exchange", "recall_lambda": 0.9, "recall_top_k": 20, "recall_candidates": 40,
                  "quotas": PAPER_QUOTAS, "context_layout": "lines", "recall_neighbours": "none",
                  "time_channel": "off", "propagation": "off", "gate_threshold": 0.35, "gate_floor": 0.0}),
    _r("memory-items-off", "timem", "memory", "the default without the memory layer (no items extracted or put "
       "first in the context; decay is off in benchmarks either way)", overrides={"memory_items": False}),
    _r("memory-items-decay", "timem", "memory", "the default with item decay as in chat (half-life 180 days)",
       overrides={"memory_decay_half_life_days": 180.0}),
    # scattered evidence (issue 23): condensed context and the neighbour rule; "whole-context" is the default
    # before them (its dev questions.jsonl equals the published one of 2026-12-02 but for the trace ids)
    _r("whole-context", "timem", "scattered", "the default before issue 23: every memory whole, the next turn "
       "after every leaf", overrides={"condense_after": "off", "recall_neighbours": "next", "second_hop": 0,
                                     "context_weight": 0.0}),
    _r("neighbours-relevant", "timem", "scattered", "only the 'relevant' neighbour rule (next turn after a "
       "question or when it is a leaf candidate), every memory whole",
       overrides={"condense_after": "off", "second_hop": 0, "context_weight": 0.0}),
    _r("condense-only", "timem", "scattered", "only the condensed context (after 4 leaves), next turn after "
       "every leaf", overrides={"recall_neighbours": "next", "second_hop": 0, "context_weight": 0.0}),
    _r("no-second-hop", "timem", "scattered", "the default without second-hop retrieval (the default of "
       "2026-12-02's condensed context)", overrides={"second_hop": 0, "context_weight": 0.0}),
    _r("no-context", "timem", "scattered", "the default without contextual matching (timem.recall.contextual; the "
       "default before 2026-12-07 evening)", overrides={"context_weight": 0.0}),
    _r("aspects", "timem", "scattered", "the default with rule-based aspect queries (timem.recall.aspects)",
       overrides={"aspect_queries": "rules"}),
    *[_r(f"condense-{n}", "timem", "scattered", f"condensed context after the first {n} leaves (default 4)",
         overrides={"condense_after": n}) for n in (0, 2, 6, 8)],
    # baselines
    _r("bm25-turns", "bm25-turns", "baseline", "BM25 (rank-bm25 BM25Okapi) over raw dated turns"),
    _r("dense-turns", "dense-turns", "baseline", "MiniLM cosine over raw dated turns"),
    _r("hybrid-turns", "hybrid-turns", "baseline", "λ·cosine + (1−λ)·BM25 over raw dated turns"),
    _r("full-context", "full-context", "baseline", "the whole history, oldest turns dropped to fit the window"),
]
RECIPES: dict[str, Recipe] = {r.name: r for r in _RECIPES}

#: Named lists of recipes for ``timem bench suite``.
SUITES: dict[str, list[str]] = {
    # everything that runs on verbatim L1 without an LLM
    "no-llm": ["l1-flat", "l1-hier",
               *[f"lambda-{x:.1f}-l1" for x in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)],
               *[f"gran-{n}-l1" for n in (1, 2, 4, 8)], "bm25-turns", "dense-turns", "hybrid-turns", "full-context"],
    # needs L2-L5 in the store (pass --db with an LLM-ingested database)
    "hierarchical": ["timem", "planner-centroid", "fixed-simple", "fixed-hybrid", "fixed-complex", "gate-score",
                     "gate-off", "l2l5-hier", "l1l5-flat", "l1l5-hier",
                     *[f"lambda-{x:.1f}" for x in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)]],
}
#: tree-aware recall (issue 10): the default, its ablations and the flat baselines; runs without an LLM
#: (the default consolidation without one is extractive)
SUITES["tree"] = ["timem", "timem-l1", *[f"segtree-{d}" for d in ("top-down", "bottom-up", "both")], "segtree-h1",
                  "segtree-index", "segtree-index-both", "timem-index",
                  "segtree-noroute", "tider-semantic", "tider-channel", "tider-events-1", "tider-events-3",
                  "neighbours-none", "neighbours-reply",
                  "context-lines", "unit-exchange", "timem-context", "timem-paper", "bm25-turns", "dense-turns",
                  "hybrid-turns"]
SUITES["retrieval"] = SUITES["no-llm"] + SUITES["hierarchical"]


def get_recipe(name: str) -> Recipe:
    """The recipe called ``name``. Raises :class:`ConfigError` listing the known names."""
    try:
        return RECIPES[name]
    except KeyError:
        if name.endswith(".toml"):
            raise ConfigError(f"{name!r} is a TOML file, not a recipe; pass settings files with --settings "
                              "(`timem bench --config` names a recipe, the deprecated spelling of --recipe)") from None
        raise ConfigError(f"unknown recipe {name!r}; known: {', '.join(RECIPES)} "
                          "(list them with `timem bench recipes`)") from None
