"""Plain-text rendering of a recall trace (``timem ask --trace``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import tzinfo
from zoneinfo import ZoneInfo

from timem.models import MemoryNode
from timem.recall.trace import RecallTrace

_DATE_HEAD = re.compile(r"^On \d{1,2} \w+ \d{4} \(\w+\) \d{2}:\d{2}:\s*")  # verbatim L1's first line


def candidate_reasons(trace: RecallTrace) -> dict[str, str]:
    """Why each L1 candidate was kept or dropped, by node id: outside the top k by score, or the
    gate's (or token budget's) last decision about it."""
    top_k = trace.settings.get("recall_top_k", sum(c.kept for c in trace.candidates))
    last = {d.node_id: d for d in trace.gate.decisions}
    out = {}
    for c in trace.candidates:
        if c.duplicate_of is not None:
            out[c.node_id] = f"dropped: near-duplicate of {c.duplicate_of}"
        elif not c.kept:
            out[c.node_id] = f"dropped: rank {c.rank} is outside the top {top_k} by score"
        elif (d := last.get(c.node_id)) is None:
            out[c.node_id] = f"in the top {top_k}; no gate decision recorded"
        else:
            out[c.node_id] = f"{'kept' if d.kept else 'dropped'}: {d.reason}"
    return out


def first_words(node: MemoryNode | None, width: int = 60) -> str:
    """The start of a memory on one line, without a verbatim L1's date line; erased memories say so."""
    if node is None:
        return "(memory no longer exists)"
    flat = " ".join(_DATE_HEAD.sub("", node.content.strip()).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def render_trace(trace: RecallTrace, max_candidates: int = 40, nodes: Mapping[str, MemoryNode] | None = None,
                 tz: tzinfo | None = None) -> str:
    """A readable multi-section report: plan, candidates, ancestors, memory items (with what each superseded),
    gate, the memories the condensed context cut (:mod:`timem.recall.condense`), context, latency, LLM use.

    With ``nodes`` (node id -> node; erased ones may be missing), each candidate line also shows the
    memory's date (in ``tz``, default the trace's ``timezone`` setting) and first words; every line
    says why the candidate was kept or dropped.
    """
    tz = tz or ZoneInfo(trace.settings.get("timezone", "UTC"))
    reasons = candidate_reasons(trace)
    p = trace.plan
    out = [f"recall trace {trace.trace_id}  user={trace.user_id}  asked at {trace.question_time.isoformat()}",
           f"query: {trace.query}",
           f"plan ({p.planner}): complexity={p.complexity} keywords={p.keywords} "
           f"levels={{{', '.join(f'L{k}: {v}' for k, v in p.levels.items())}}}"
           + (f" time window={p.time_window.start.astimezone(tz).date()}..{p.time_window.end.astimezone(tz).date()}"
              if p.time_window else ""),
           f"bm25 query: {trace.bm25_query}",
           "", f"candidates (L1; {len(trace.candidates)}): rank  score  local  tree   semantic  bm25  "
               + ("date              first words  |  " if nodes is not None else "") + "why  [node]"]
    for c in sorted(trace.candidates, key=lambda c: c.rank)[:max_candidates]:
        memory = ""
        if nodes is not None:
            n = nodes.get(c.node_id)
            date = f"{n.span_start.astimezone(tz):%Y-%m-%d %H:%M}" if n is not None else "----------------"
            memory = f"{date}  {first_words(n)}  |  "
        local = "    -" if c.local is None else f"{c.local:5.3f}"
        tree = "    -" if c.propagated is None else f"{c.propagated:5.3f}"
        cut = f"; condensed to <= {trace.condensed[c.node_id]} tokens" if c.node_id in trace.condensed else ""
        out.append(f"  {c.rank:>4}  {c.fused:5.3f}  {local}  {tree}  {c.semantic:8.3f}  {c.bm25:4.2f}  {memory}"
                   f"{reasons[c.node_id]}{cut}  [{c.node_id}]")
    if len(trace.candidates) > max_candidates:
        out.append(f"  ... {len(trace.candidates) - max_candidates} more (all in --json / the Recall inspector); "
                   f"a component is 0 when the node was not in that list's top "
                   f"{trace.settings.get('recall_candidates', '?')}")
    out += ["", f"ancestors ({sum(a.added for a in trace.ancestors)} added of {len(trace.ancestors)} met):"]
    for a in trace.ancestors:
        out.append(f"  L{a.level} {a.node_id} via leaf rank {a.leaf_rank}: {'added' if a.added else 'skipped'}"
                   + (f" ({a.reason})" if a.reason else ""))
    if trace.items:
        out += ["", f"memory items ({len(trace.items)}, first in the context):"]
        for u in trace.items:
            decay = f" decay={u.decay:.3f}" if u.decay is not None else ""
            out.append(f"  {u.item_id}: {u.subject}'s {u.attribute} = {u.value}  cosine={u.cosine:.3f}"
                       f"{' named' if u.named else ''}{decay}  sources={u.source_ids}")
            for s in u.superseded:
                how = "corrected by" if s.corrected else f"superseded {s.valid_to:%Y-%m-%d} by" if s.valid_to else "by"
                out.append(f"      {s.value} ({s.item_id}) {how} {s.superseded_by}")
    g = trace.gate
    out += ["", f"gate: asked={g.mode} applied={g.applied}" + (f" fallback: {g.fallback}" if g.fallback else "")]
    for d in g.decisions:
        out.append(f"  {'KEEP' if d.kept else 'drop'} L{d.level} {d.node_id}: {d.reason}")
    if trace.condensed:
        out += ["", f"condensed ({len(trace.condensed)} memories cut to the passage sharing most content words with "
                    f"the question; stems {trace.condense_stems}):"]
        out += [f"  {nid}: <= {cap} tokens" for nid, cap in trace.condensed.items()]
    out += ["", f"context ({trace.context_tokens} cl100k tokens = Mem Len):", trace.context or "(empty)", "",
            "latency ms: " + ", ".join(f"{k}={v:.0f}" for k, v in trace.latency_ms.items()),
            f"LLM calls: {len(trace.llm_calls)}, tokens: {trace.llm_tokens}"]
    out += [f"note: {n}" for n in trace.notes]
    return "\n".join(out)
