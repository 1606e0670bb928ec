"""Recall trace -> tables for the studio's Recall inspector and the Chat page (no streamlit here).

Every function takes a :class:`~timem.recall.trace.RecallTrace` and a lookup of node id ->
:class:`~timem.models.MemoryNode` (erased nodes are missing: their preview then says so; a soft-deleted, i.e.
forgotten, node's preview says it was forgotten instead of quoting it) and returns a :class:`pandas.DataFrame`
ready for ``st.dataframe``. Scores are "higher is better"; latencies are milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from timem.models import MemoryNode, NodeStatus
from timem.recall.render import candidate_reasons
from timem.recall.trace import RecallTrace

MISSING = "(memory no longer exists)"
FORGOTTEN = "(forgotten since: the Memories page shows it, status deleted)"


def _preview(nodes: Mapping[str, MemoryNode], nid: str, width: int = 120) -> str:
    n = nodes.get(nid)
    if n is None:
        return MISSING
    if n.status == NodeStatus.DELETED:  # the person asked to forget it: not quoted again outside the Memories page
        return FORGOTTEN
    flat = " ".join(n.content.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _model(nodes: Mapping[str, MemoryNode], nid: str) -> str:
    n = nodes.get(nid)
    return n.model_id if n is not None else "—"


def _mode(nodes: Mapping[str, MemoryNode], nid: str) -> str:
    n = nodes.get(nid)
    return (n.mode or "—") if n is not None else "—"


def plan_table(trace: RecallTrace) -> pd.DataFrame:
    """One row per level the plan searches: ``level`` (``"L1"``..) and its ``quota`` (max memories)."""
    return pd.DataFrame([{"level": f"L{lv}", "quota": q} for lv, q in sorted(trace.plan.levels.items())])


def plan_facts(trace: RecallTrace) -> dict[str, str]:
    """The plan as short strings: complexity, planner, keywords, time window (UTC), class scores, note."""
    p = trace.plan
    window = (f"{p.time_window.start:%Y-%m-%d %H:%M} → {p.time_window.end:%Y-%m-%d %H:%M} UTC"
              if p.time_window else "none")
    facts = {"complexity": p.complexity, "planner": p.planner, "keywords": ", ".join(p.keywords) or "—",
             "time expression": p.time_expression or "—", "time window": window,
             "BM25 query": trace.bm25_query or "—"}
    if p.scores:
        facts["class scores"] = ", ".join(f"{k} {v:.3f}" for k, v in p.scores.items())
    if p.note:
        facts["note"] = p.note
    return facts


def candidate_table(trace: RecallTrace, nodes: Mapping[str, MemoryNode]) -> pd.DataFrame:
    """L1 candidates by rank: ``rank, kept, score, local, tree, semantic, bm25, cosine, bm25_raw, model_id,
    preview, why, channel, joined, node_id``.

    ``score`` is the final score the rank is given by (the fused λ-score with the speaker and TIDER time
    terms; with relevance propagation s̃ = s⁽⁰⁾ + Σₖ αᵏ s⁽ᵏ⁾, SegTreeMem Algorithm 2); ``local`` is
    s⁽⁰⁾ and ``tree`` what propagation added (both empty without propagation). ``why``: kept or dropped
    and the reason (:func:`timem.recall.render.candidate_reasons`). ``channel``: the extra query that placed the
    leaf (:mod:`timem.recall.aspects`: an aspect part or the second hop), whose ``score`` is then the slot it took,
    not ``local + tree``; empty for the question's own ranking. ``joined``: no search found the leaf, it joined as
    the neighbour of a search hit (contextual matching, :mod:`timem.recall.contextual`).
    """
    why = candidate_reasons(trace)
    rows = [{"rank": c.rank, "kept": c.kept, "score": c.fused, "local": c.local, "tree": c.propagated,
             "semantic": c.semantic, "bm25": c.bm25, "cosine": c.cosine, "bm25_raw": c.bm25_raw,
             "model_id": _model(nodes, c.node_id), "preview": _preview(nodes, c.node_id), "why": why[c.node_id],
             "channel": c.channel, "joined": c.context_only, "node_id": c.node_id}
            for c in sorted(trace.candidates, key=lambda c: c.rank)]
    return pd.DataFrame(rows, columns=["rank", "kept", "score", "local", "tree", "semantic", "bm25", "cosine",
                                       "bm25_raw", "model_id", "preview", "why", "channel", "joined", "node_id"])


def ancestor_table(trace: RecallTrace, nodes: Mapping[str, MemoryNode]) -> pd.DataFrame:
    """Ancestors met during propagation: ``level, added, reason, leaf_rank, model_id, preview, node_id``."""
    rows = [{"level": f"L{a.level}", "added": a.added, "reason": a.reason, "leaf_rank": a.leaf_rank,
             "reached_by": len(a.reached_by), "model_id": _model(nodes, a.node_id),
             "preview": _preview(nodes, a.node_id), "node_id": a.node_id} for a in trace.ancestors]
    return pd.DataFrame(rows, columns=["level", "added", "reason", "leaf_rank", "reached_by", "model_id",
                                       "preview", "node_id"])


def gate_table(trace: RecallTrace, nodes: Mapping[str, MemoryNode]) -> pd.DataFrame:
    """Gating decisions (including the token budget): ``level, kept, reason, mode, model_id, preview, node_id``
    (``mode``: how the memory was written, e.g. verbatim, extractive, abstractive)."""
    rows = [{"level": f"L{d.level}", "kept": d.kept, "reason": d.reason, "mode": _mode(nodes, d.node_id),
             "model_id": _model(nodes, d.node_id), "preview": _preview(nodes, d.node_id), "node_id": d.node_id}
            for d in trace.gate.decisions]
    return pd.DataFrame(rows, columns=["level", "kept", "reason", "mode", "model_id", "preview", "node_id"])


def latency_table(trace: RecallTrace) -> pd.DataFrame:
    """Wall time per stage in pipeline order: ``stage, ms``."""
    order = ["plan", "leaves", "ancestors", "gate", "items", "context", "answer", "total"]
    keys = [k for k in order if k in trace.latency_ms] + [k for k in trace.latency_ms if k not in order]
    return pd.DataFrame([{"stage": k, "ms": round(trace.latency_ms[k], 1)} for k in keys], columns=["stage", "ms"])


def llm_call_table(trace: RecallTrace) -> pd.DataFrame:
    """LLM calls of the recall (and answer): ``purpose, ms, prompt_tokens, completion_tokens, source, error``."""
    rows = [{"purpose": c.purpose, "ms": round(c.latency_ms, 1), "prompt_tokens": c.prompt_tokens,
             "completion_tokens": c.completion_tokens, "source": c.tokens_source, "error": c.error or ""}
            for c in trace.llm_calls]
    return pd.DataFrame(rows, columns=["purpose", "ms", "prompt_tokens", "completion_tokens", "source", "error"])


def summary(trace: RecallTrace) -> dict[str, object]:
    """Headline numbers: complexity, gate applied, kept memories, Mem Len (tokens), total ms, LLM tokens."""
    return {"complexity": trace.plan.complexity, "gate": trace.gate.applied,
            "memories": len(trace.node_ids), "Mem Len (tokens)": trace.context_tokens,
            "total ms": round(trace.latency_ms.get("total", 0.0), 1), "LLM tokens": trace.llm_tokens}
