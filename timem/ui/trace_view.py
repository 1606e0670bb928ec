"""Render one recall trace (plan, candidates, ancestors, gating, context, latency) with streamlit."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from timem.models import MemoryNode
from timem.recall.trace import RecallTrace
from timem.ui.feedback import plural
from timem.ui.state import StudioContext
from timem.viz import trace_tables as tt


def trace_nodes(ctx: StudioContext, trace: RecallTrace) -> dict[str, MemoryNode]:
    """Every node the trace mentions that still exists in ``ctx``'s database (any status), by id."""
    ids = {c.node_id for c in trace.candidates} | {a.node_id for a in trace.ancestors} | set(trace.node_ids)
    if not ids or ctx.engine is None:
        return {}
    return {n.id: n for n in ctx.engine.nodes(trace.user_id, ids=sorted(ids), status=None)}


def _was(s, ctx: StudioContext) -> str:
    """A superseded item as ``"espresso (until 2024-04-21)"`` or ``"Porto (corrected)"``."""
    if s.corrected or s.valid_to is None:
        return f"{s.value} (corrected)" if s.corrected else s.value
    return f"{s.value} (until {s.valid_to.astimezone(ctx.tz):%Y-%m-%d})"


def render_trace(ctx: StudioContext, trace: RecallTrace, *, key: str, compact: bool = False) -> None:
    """The full trace: headline metrics (three to a row, two when ``compact``), notes, then one tab per stage.

    Args:
        ctx: the context whose database the trace was recalled from (its nodes are looked up there).
        key: a unique prefix for widget keys (several traces can be on one page).
        compact: fewer columns in the tables and metrics (for side-by-side comparison, in half the width).
    """
    nodes = trace_nodes(ctx, trace)
    head = tt.summary(trace)
    # a metric needs ~130 px for a value of seven characters ("complex", "15785.8" ms): six to a row (three when
    # compact) cut it to "com…" in the chat's message and in the inspector at 1280 px
    cols = st.columns(2 if compact else 3)
    for i, (label, value) in enumerate(head.items()):
        cols[i % len(cols)].metric(label, value)
    for note in trace.notes:
        st.caption(f":material/info: {note}")
    if trace.answer_error:
        st.warning(f"answer failed: {trace.answer_error}")
    tabs = st.tabs(["Plan", "Candidates", "Ancestors", "Gate", "Context", "Latency"])
    with tabs[0]:
        quotas = " · ".join(f"{r.level} {r.quota}" for r in tt.plan_table(trace).itertuples())
        facts = {**tt.plan_facts(trace), "levels and quotas": quotas}
        st.markdown("  \n".join(f"**{k}**: {v}" for k, v in facts.items()))
    with tabs[1]:
        df = tt.candidate_table(trace, nodes)
        if compact:
            df = df[["rank", "kept", "score", "local", "tree", "semantic", "bm25", "preview"]]
        if df["local"].isna().all():
            df = df.drop(columns=["local", "tree"])
        st.caption(f"{len(df)} L1 candidates; top k kept by score (λ = {trace.settings.get('recall_lambda', '?')}: "
                   "fused = λ·semantic + (1−λ)·BM25, both max-normalised, with the speaker and time terms"
                   + ("; with relevance propagation score = local + tree, what the tree added)."
                      if "local" in df.columns else ")."))
        st.dataframe(df, hide_index=True, key=f"{key}_cands",
                     column_config={"score": st.column_config.NumberColumn("score", format="%.3f")})
    with tabs[2]:
        df = tt.ancestor_table(trace, nodes)
        st.caption(f"{int(df['added'].sum()) if len(df) else 0} ancestors added of {len(df)} met.")
        st.dataframe(df, hide_index=True, key=f"{key}_anc")
    with tabs[3]:
        st.caption(f"gate mode {trace.gate.mode}, applied {trace.gate.applied}"
                   + (f" — {trace.gate.fallback}" if trace.gate.fallback else ""))
        st.dataframe(tt.gate_table(trace, nodes), hide_index=True, key=f"{key}_gate")
    with tabs[4]:
        if trace.items:  # the memory layer's items head the context; what each superseded
            st.caption(f"{len(trace.items)} memory item(s) first in the context (superseded values are history)")
            st.dataframe(pd.DataFrame([{
                "item": f"{u.subject}'s {u.attribute}", "value": u.value,
                "valid": f"{u.valid_from.astimezone(ctx.tz):%Y-%m-%d} – "
                         + (f"{u.valid_to.astimezone(ctx.tz):%Y-%m-%d}" if u.valid_to else "now"),
                "superseded": "; ".join(_was(s, ctx) for s in u.superseded),
                "cosine": u.cosine, "decay": u.decay, "id": u.item_id} for u in trace.items]),
                hide_index=True, key=f"{key}_items")
        used = plural(len(trace.node_ids), "memory", "memories")
        st.caption(f"Mem Len: {trace.context_tokens} tokens (cl100k), {used}")
        st.code(trace.context or "(empty context)", language=None, wrap_lines=True)
        if trace.answer:
            st.markdown(f"**Answer**: {trace.answer}")
    with tabs[5]:
        st.dataframe(tt.latency_table(trace), hide_index=True, key=f"{key}_lat")
        calls = tt.llm_call_table(trace)
        if len(calls):
            st.dataframe(calls, hide_index=True, key=f"{key}_calls")
