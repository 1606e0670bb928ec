"""Plain-text rendering of a recall trace (``timem ask --trace``)."""

from __future__ import annotations

from timem.recall.trace import RecallTrace


def render_trace(trace: RecallTrace, max_candidates: int = 40) -> str:
    """A readable multi-section report: plan, candidates, ancestors, gate, context, latency, LLM use."""
    p = trace.plan
    out = [f"recall trace {trace.trace_id}  user={trace.user_id}  asked at {trace.question_time.isoformat()}",
           f"query: {trace.query}",
           f"plan ({p.planner}): complexity={p.complexity} keywords={p.keywords} "
           f"levels={{{', '.join(f'L{k}: {v}' for k, v in p.levels.items())}}}"
           + (f" time window={p.time_window.start.date()}..{p.time_window.end.date()}" if p.time_window else ""),
           f"bm25 query: {trace.bm25_query}",
           "", f"candidates (L1; {len(trace.candidates)}): rank  fused  semantic  bm25  kept  node"]
    for c in sorted(trace.candidates, key=lambda c: c.rank)[:max_candidates]:
        out.append(f"  {c.rank:>4}  {c.fused:5.3f}  {c.semantic:8.3f}  {c.bm25:4.2f}  {'yes' if c.kept else ' - '}  "
                   f"{c.node_id}")
    if len(trace.candidates) > max_candidates:
        out.append(f"  ... {len(trace.candidates) - max_candidates} more (all in --json / the Recall inspector); "
                   "a component is 0 when the node was not in that list's top 40")
    out += ["", f"ancestors ({sum(a.added for a in trace.ancestors)} added of {len(trace.ancestors)} met):"]
    for a in trace.ancestors:
        out.append(f"  L{a.level} {a.node_id} via leaf rank {a.leaf_rank}: {'added' if a.added else 'skipped'}"
                   + (f" ({a.reason})" if a.reason else ""))
    g = trace.gate
    out += ["", f"gate: asked={g.mode} applied={g.applied}" + (f" fallback: {g.fallback}" if g.fallback else "")]
    for d in g.decisions:
        out.append(f"  {'KEEP' if d.kept else 'drop'} L{d.level} {d.node_id}: {d.reason}")
    out += ["", f"context ({trace.context_tokens} cl100k tokens = Mem Len):", trace.context or "(empty)", "",
            "latency ms: " + ", ".join(f"{k}={v:.0f}" for k, v in trace.latency_ms.items()),
            f"LLM calls: {len(trace.llm_calls)}, tokens: {trace.llm_tokens}"]
    out += [f"note: {n}" for n in trace.notes]
    return "\n".join(out)
