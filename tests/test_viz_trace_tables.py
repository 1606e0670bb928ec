"""Recall trace -> inspector tables (timem.viz.trace_tables) on a real recall over the bundled demo."""

from __future__ import annotations

import pytest
from helpers import TIMEM_QUOTAS
from studio_support import DEMO_USER, build_demo_db, open_engine

from timem.recall import recall
from timem.recall.options import RecallOptions
from timem.viz import trace_tables as tt


@pytest.fixture(scope="module")
def traced(tmp_path_factory, embedder):
    work = tmp_path_factory.mktemp("trace")
    # TiMem's quotas: the plan has L1-L5 and ancestors are added; without propagation the fused score is the
    # max-normalised λ-mix (propagation adds the tree's share on top, beyond 1)
    eng = open_engine(build_demo_db(work / "demo.duckdb", embedder), work, embedder, with_llm=False,
                      propagation="off", **TIMEM_QUOTAS)
    res = recall(eng.store, eng.embedder, None, eng.config, DEMO_USER, "Which tea did Mia bring from Shanghai?",
                 options=RecallOptions(complexity="complex", persist=False))
    nodes = {n.id: n for n in eng.store.nodes(DEMO_USER, status=None)}
    propagated = eng.recall(DEMO_USER, "Which tea did Mia bring from Shanghai?", persist=False,
                            config=eng.config.with_overrides(propagation="top-down"))
    yield res.trace, nodes, propagated.trace
    eng.close()


def test_candidate_table_ranked_with_component_scores(traced):
    trace, nodes, propagated = traced
    df = tt.candidate_table(trace, nodes)
    assert list(df["rank"]) == sorted(df["rank"]) and len(df) == len(trace.candidates)
    assert {"semantic", "bm25", "score", "local", "tree", "kept"} <= set(df.columns)
    assert df["score"].between(0, 1).all() and df["local"].isna().all()  # no propagation: score is the fused score
    df = tt.candidate_table(propagated, nodes)
    assert df["local"].notna().all() and (df["tree"] != 0).any()  # with propagation: score = local + tree
    # a leaf a channel placed (the second hop) takes a slot, and the leaves below it the scores of the slots they
    # moved to (timem.recall.aspects): score = local + tree holds above the first placed leaf
    placed = df.loc[df["channel"].notna(), "rank"]
    above = df[df["rank"] < (placed.min() if len(placed) else len(df) + 1)]
    assert len(above) >= 4 and ((above["local"] + above["tree"] - above["score"]).abs() < 1e-3).all()
    assert list(df["score"]) == sorted(df["score"], reverse=True)
    assert "Longjing" in " ".join(df["preview"].head(5))  # the Shanghai tea leaf ranks near the top


def test_ancestor_gate_latency_and_summary(traced):
    trace, nodes, _ = traced
    anc = tt.ancestor_table(trace, nodes)
    assert set(anc["level"]) <= {"L2", "L3", "L4", "L5"} and anc["added"].any()
    gate = tt.gate_table(trace, nodes)
    assert len(gate) == len(trace.gate.decisions) and gate["kept"].sum() == len(trace.node_ids)
    lat = tt.latency_table(trace)
    assert list(lat["stage"])[-1] == "total" and lat["stage"].iloc[0] == "plan"
    head = tt.summary(trace)
    assert head["Mem Len (tokens)"] == trace.context_tokens and head["complexity"] == "complex"
    facts = tt.plan_facts(trace)
    assert facts["planner"] == "override" and "BM25 query" in facts
    assert list(tt.plan_table(trace)["level"]) == ["L1", "L2", "L3", "L4", "L5"]
    assert tt.llm_call_table(trace).empty  # no LLM


def test_missing_nodes_are_named_not_crashed(traced):
    trace, _, _ = traced
    df = tt.candidate_table(trace, {})
    assert set(df["preview"]) == {tt.MISSING}
    assert set(tt.ancestor_table(trace, {})["model_id"]) == {"—"}
