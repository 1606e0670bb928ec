"""Recall facade: plan -> leaf selection -> ancestor propagation -> gating -> context (-> answer).

TiMem §3.3 (complexity-aware hierarchical recall). Every stage is recorded in a
:class:`~timem.recall.trace.RecallTrace`, persisted per query. The user filter is applied inside
every store query (vector, BM25, parent lookups), so no other user's node can be recalled.

Substitutions are recorded in ``trace.notes`` and never silent:

* ``planner="llm"`` without an LLM, or an LLM planner call that fails -> the centroid planner;
* ``gate="llm"`` without an LLM -> the score gate (gate failures: see :mod:`timem.recall.gating`).

An explicit ``RecallOptions(planner="llm")`` / ``RecallOptions(gate="llm")`` without an LLM raises
:class:`ConfigError` instead, because the caller asked for it by name. The stages are functions of this module
(``_modes``, ``_plan``, ``_select``, ``_gate``, ``_items``, ``_context``), run and timed by :func:`run_recall`.
The answer step after them is :mod:`timem.recall.answering`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import BaseModel

from timem.config import Complexity, Config
from timem.embed.protocol import Embedder
from timem.errors import ConfigError, InputError, LLMError
from timem.llm.protocol import LLMClient
from timem.models import MemoryNode
from timem.recall import cjk
from timem.recall.ancestors import AncestorRecord, fetch_lineage, lift_ancestors
from timem.recall.aspects import merge_channels
from timem.recall.condense import condense, refill
from timem.recall.context import count_context_tokens
from timem.recall.density import caption_rewrite, legend, speaker_initials, with_initials
from timem.recall.gating import GateMode, GateOutcome, apply_budget, run_gate
from timem.recall.items import ItemRecall, recall_items
from timem.recall.keywords import person_names
from timem.recall.leaves import Candidate, LeafSelection, select_leaves
from timem.recall.localiser import localise_question
from timem.recall.options import DEFAULT_OPTIONS, RecallOptions
from timem.recall.planner import CentroidPlanner, LLMPlanner, RecallPlan, make_plan
from timem.recall.propagation import propagate_leaves
from timem.recall.recording import RecordingLLM
from timem.recall.segtree import propagate_segtree
from timem.recall.state import RecallState
from timem.recall.trace import RecallTrace
from timem.recall.trace_store import save_trace
from timem.store.ports import MemoryStore
from timem.tokens import content_stems
from timem.tree.windows import speaker_zone, to_utc


class RecallResult(BaseModel):
    """The recalled context (dated lines, grouped by level), its nodes in priority order, and the trace."""

    context: str
    nodes: list[MemoryNode]
    trace: RecallTrace

    @property
    def mem_len(self) -> int:
        """cl100k tokens of :attr:`context`."""
        return self.trace.context_tokens


def elapsed_ms(t0: float) -> float:
    """Milliseconds since ``t0`` (a ``time.perf_counter()`` reading), to 0.01 ms."""
    return round((time.perf_counter() - t0) * 1000, 2)


def _plan(state: RecallState, complexity_override: Complexity | None, planner_name: str) -> RecallPlan:
    """The recall plan; the centroid planner also computes the question's embedding (one batch) into the state."""
    config, llm, query, qt, participants, notes = (state.config, state.llm, state.query, state.question_time,
                                                   state.participants, state.notes)
    if complexity_override is not None:
        return make_plan(complexity_override, query, qt, config, "override", participants=participants, tz=state.tz)
    if planner_name == "llm":
        if llm is None:
            notes.append("planner 'llm' configured but no LLM available; centroid planner used")
        else:
            try:
                return LLMPlanner(llm).plan(query, qt, config, participants=participants, user_id=state.user_id,
                                            tz=state.tz)
            except LLMError as exc:
                notes.append(f"LLM planner failed ({exc}); centroid planner used")
    planner = CentroidPlanner(state.embedder)
    masked_text = planner.masked(query, participants)
    if masked_text == query:  # no name to mask: one text (a batch of two equal texts gives the same vector twice)
        masked_vec = state.query_vec = state.embedder.embed([query])[0]
    else:
        masked_vec, state.query_vec = state.embedder.embed([masked_text, query])  # one batch
    state.masked = (masked_text, masked_vec)
    plan = planner.plan(query, qt, config, participants=participants, user_id=state.user_id, vector=masked_vec,
                        tz=state.tz)
    return plan.model_copy(update={"note": notes[-1]}) if notes else plan


def _modes(config: Config, llm: LLMClient | None, options: RecallOptions) -> tuple[str, GateMode]:
    """The planner and gate of this recall (``options`` over ``config.recall``): ``(planner name, gate mode)``.

    Raises:
        ConfigError: an unknown planner, gate or complexity, or an LLM planner / gate asked for by name without an LLM.
    """
    planner_name = options.planner or config.recall.planner
    gate_mode: GateMode = options.gate or config.recall.gate
    if planner_name not in ("centroid", "llm"):
        raise ConfigError(f"unknown planner {planner_name!r}; use centroid or llm.")
    if gate_mode not in ("llm", "score", "off"):
        raise ConfigError(f"unknown gate {gate_mode!r}; use llm, score or off.")
    if options.complexity is not None and options.complexity not in ("simple", "hybrid", "complex"):
        raise ConfigError(f"unknown complexity {options.complexity!r}; use simple, hybrid or complex.")
    if llm is None and "llm" in (options.planner, options.gate):
        raise ConfigError("an LLM planner or gate was requested but no LLM is configured; set llm_backend "
                          "(local or openai) or choose planner=centroid / gate=score.")
    return planner_name, gate_mode


def _select(state: RecallState, plan: RecallPlan) -> LeafSelection:
    """Leaf selection (with the LLM time localiser if configured), then relevance propagation over the tree
    (``Config.recall.propagation``, ``recall_index``) re-ranking the leaves; the selection's notes go to the state."""
    rc = state.config.recall
    loc = localise_question(state) if rc.time_channel != "off" and rc.time_localiser == "llm" else None
    leaves = select_leaves(state, plan, loc)
    top_k = min(rc.recall_top_k, plan.levels.get(1, rc.recall_top_k))
    if rc.propagation != "off":
        if rc.recall_index == "segtree":  # SegTreeMem's own tree (timem.recall.segtree)
            leaves, _upper = propagate_segtree(state, leaves, top_k)
        else:
            leaves, _upper = propagate_leaves(state, leaves, top_k)
    if rc.aspect_queries != "off" or rc.second_hop > 0 or rc.entity_leaves > 0 or rc.rocchio_leaves > 0:
        # extra channels (timem.recall.aspects, timem.recall.entities)
        leaves = merge_channels(state, leaves, top_k, plan.complexity)
    state.notes += leaves.notes
    return leaves


def _gate(state: RecallState, gate_mode: GateMode, plan: RecallPlan, leaves: LeafSelection,
          ancestors: list[AncestorRecord], nodes: dict[str, MemoryNode]
          ) -> tuple[set[str], dict[str, str], GateOutcome]:
    """Gating of the kept leaves and their ancestors (``nodes``: by id): ``(kept ids, reason per id, outcome)``; a
    fallback (no LLM for the LLM gate, a failed gate call) is noted in the state."""
    gate_fallback = None
    if gate_mode == "llm" and state.llm is None:
        gate_fallback = "gate 'llm' configured but no LLM available; score gate applied"
        state.notes.append(gate_fallback)
    kept, why, outcome = run_gate(state, gate_mode, plan.complexity, leaves.kept, ancestors, nodes, gate_fallback,
                                  window=leaves.time.detect)
    if outcome.fallback and outcome.fallback != gate_fallback:
        state.notes.append(outcome.fallback)
    return kept, why, outcome


def _items(state: RecallState, plan: RecallPlan) -> tuple[ItemRecall, int]:
    """The memory layer's items for the question (:mod:`timem.recall.items`; none when it is off) and the cl100k
    tokens their block takes in the context (0 without lines)."""
    items = ItemRecall()
    if state.config.memory.memory_items:  # the memory layer's items go first
        items = recall_items(state, plan.time_window)
        state.notes += items.notes
    return items, count_context_tokens(items.block) + 2 if items.lines else 0


def _with_fact_evidence(gated: tuple[set[str], dict[str, str], GateOutcome], items: ItemRecall,
                        nodes: dict[str, MemoryNode]) -> tuple[set[str], dict[str, str], GateOutcome]:
    """The gate's kept set plus the kept leaves (``nodes``) that a current item line of the context was read from:
    the statement behind "[fact, valid … – now] Ana's home city: Hamburg". A trial asked "Where does Ana live?":
    the item said Hamburg, but the gate kept only "I live in Berlin." and the embedded model answered Berlin."""
    kept, why, outcome = gated
    evidence = {s for u in items.used if u.valid_to is None for s in u.source_ids if s in nodes and s not in kept}
    if not evidence:
        return gated
    return kept | evidence, {**why, **dict.fromkeys(evidence, "the source of a fact line in the context")}, outcome


@dataclass(frozen=True)
class _Context:
    """The context stage's result: the nodes shown in order, the context text and its cl100k tokens, the gate's
    outcome with its budget decisions, the condensed nodes' token caps by id and the question's stems."""

    chosen: list[MemoryNode]
    text: str
    tokens: int
    outcome: GateOutcome
    caps: dict[str, int]
    stems: set[str]


def _context(state: RecallState, leaves: LeafSelection, ancestors: list[AncestorRecord],
             nodes: dict[str, MemoryNode], gated: tuple[set[str], dict[str, str], GateOutcome],
             items: ItemRecall, item_tokens: int) -> _Context:
    """Neighbour leaves, condensing (``Config.recall.condense_after``) and the token budget; the items' block first.
    ``nodes`` (by id, as stored) gets the neighbours added."""
    store, config, user_id, query, rc = state.store, state.config, state.user_id, state.query, state.config.recall
    kept, why, outcome = gated
    pulled = neighbour_leaves(store, config, user_id, [c for c in leaves.kept if c.node_id in kept], nodes,
                              {c.node_id for c in leaves.kept if not c.context_only}, state.unseen)
    caps, stems = dict[str, int](), set[str]()
    if rc.condense_after != "off" or rc.caption_cut != "off":
        stems = content_stems(query, person_names(query, state.participants))
    # whole: each memory's text before condensing (captions and speakers as shown); shown: what the context shows
    whole = caption_rewrite(nodes, rc.caption_form, rc.caption_cut, stems)
    initials = speaker_initials(whole.values()) if rc.speaker_labels == "initials" else {}
    if initials:
        whole = {nid: with_initials(n, initials) for nid, n in whole.items()}
    legend_tokens = count_context_tokens(legend(initials)) + 1 if initials else 0
    shown = whole
    if rc.condense_after != "off":
        shown, caps = condense(whole, [c.node_id for c in sorted(leaves.kept, key=lambda c: c.rank)], pulled, query,
                               stems, rc.condense_after, rc.condense_leaf_tokens, rc.condense_neighbour_tokens,
                               rc.caption_form if rc.caption_cut == "condensed" else None)
    budget = max(0, rc.token_budget - item_tokens - legend_tokens)
    chosen, context, tokens, decisions = apply_budget(kept, why, leaves.kept, ancestors, shown, budget, state.tz,
                                                      rc.context_layout, pulled, rc.neighbour_priority == "interleave",
                                                      query)
    if caps and rc.condense_refill:
        chosen, context, tokens = refill(chosen, whole, caps, query, budget, state.tz, rc.context_layout,
                                         context, tokens)
    outcome = outcome.model_copy(update={"decisions": decisions})
    used = {sp: i for sp, i in initials.items() if any(f"\n{i}: " in "\n" + n.content for n in chosen)}
    if used and context:
        context = legend(used) + "\n" + context
        tokens = count_context_tokens(context)
    if items.lines:
        context = items.block + ("\n\n" + context if context else "")
        tokens = count_context_tokens(context)
    return _Context(chosen, context, tokens, outcome, caps, stems)


def run_recall(store: MemoryStore, embedder: Embedder, llm: RecordingLLM | None, config: Config, user_id: str,
               query: str, question_time: datetime | None, options: RecallOptions) -> RecallResult:
    """The stages, timed: plan -> leaves -> ancestors -> gate -> items -> context, then the trace (not persisted;
    call inside ``store.snapshot()``, as :func:`recall` and :func:`timem.recall.answering.answer` do).

    Raises:
        InputError: the question is empty.
    """
    if not query.strip():
        raise InputError("the question is empty; ask something", field="query")
    t_all = time.perf_counter()
    user_zone = config.time.tz_for(user_id)
    qt = datetime.now(UTC) if question_time is None else to_utc(question_time, user_zone)
    planner_name, gate_mode = _modes(config, llm, options)
    state = RecallState(store, embedder, llm, config, user_id, query, qt, options.participants,
                        exclude_turns=frozenset(options.exclude_turns), zone=speaker_zone(question_time, user_zone))
    latency: dict[str, float] = {}

    t0 = time.perf_counter()
    plan = _plan(state, options.complexity, planner_name)
    latency["plan"] = elapsed_ms(t0)
    if state.tz != config.time.tz:  # the trace keeps the question time in UTC: say where its dates were read
        state.notes.append(f"question dates read at {qt.astimezone(state.tz):%Y-%m-%d %H:%M} {state.tz} (the "
                           "question time's offset, else the user's zone)")

    t0 = time.perf_counter()
    leaves = _select(state, plan)
    latency["leaves"] = elapsed_ms(t0)

    t0 = time.perf_counter()
    lineage = fetch_lineage(store, user_id, leaves.kept, plan)  # the kept leaves' nodes come with it
    added, ancestors = lift_ancestors(store, user_id, leaves.kept, plan, lineage)
    latency["ancestors"] = elapsed_ms(t0)

    t0 = time.perf_counter()
    nodes = {c.node_id: lineage[0][c.node_id] for c in leaves.kept if c.node_id in lineage[0]}
    nodes.update({n.id: n for n in added})
    gated = _gate(state, gate_mode, plan, leaves, ancestors, nodes)
    latency["gate"] = elapsed_ms(t0)

    t0 = time.perf_counter()
    items, item_tokens = _items(state, plan)
    gated = _with_fact_evidence(gated, items, nodes)
    latency["items"] = elapsed_ms(t0)

    t0 = time.perf_counter()
    ctx = _context(state, leaves, ancestors, nodes, gated, items, item_tokens)
    latency["context"] = elapsed_ms(t0)
    latency["total"] = elapsed_ms(t_all)

    trace = RecallTrace(
        trace_id=uuid.uuid4().hex, user_id=user_id, query=query, question_time=qt, created_at=datetime.now(UTC),
        settings={**config.trace_settings(), "vector_index": store.vector_index}, plan=plan,
        bm25_query=leaves.bm25_query, candidates=leaves.candidates,
        ancestors=ancestors, gate=ctx.outcome, node_ids=[n.id for n in ctx.chosen], context=ctx.text,
        context_tokens=ctx.tokens, items=items.used,
        condensed={n.id: ctx.caps[n.id] for n in ctx.chosen if n.id in ctx.caps}, condense_stems=sorted(ctx.stems),
        latency_ms=latency, llm_calls=list(llm.calls) if llm else [], notes=state.notes)
    trace.attach_sources(nodes)  # so that the trace persists its context as ids (timem.recall.trace_store)
    return RecallResult(context=ctx.text, nodes=ctx.chosen, trace=trace)


def neighbour_leaves(store: MemoryStore, config: Config, user_id: str, kept_leaves: Sequence[Candidate],
                     nodes: dict[str, MemoryNode], candidates: Collection[str] = (),
                     unseen: Callable[[MemoryNode], bool] | None = None) -> list[tuple[str, str, str]]:
    """The adjacent segments of kept leaves (``Config.recall.recall_neighbours``) as ``(leaf, neighbour, reason)``,
    in leaf rank order; their nodes are added to ``nodes`` (one store query each way, user filter in SQL). A
    neighbour that is a Chinese acknowledgement (:func:`timem.recall.cjk.is_acknowledgement`) is not pulled.
    ``candidates``: the leaf candidates' ids, for the ``"relevant"`` rule (a next turn that is itself one).
    ``unseen``: neighbours it is true of are not pulled (:meth:`RecallState.unseen`: after the question, or the
    chat message being answered)."""
    if config.recall.recall_neighbours == "none" or not kept_leaves:
        return []
    adj = store.adjacent_segments(user_id, [c.node_id for c in kept_leaves])
    out: list[tuple[str, str, str]] = []
    for c in sorted(kept_leaves, key=lambda c: c.rank):
        prev, nxt = adj.get(c.node_id, (None, None))
        mode, asks = config.recall.recall_neighbours, "?" in nodes[c.node_id].content
        if mode == "reply" and not asks:
            continue
        if mode == "relevant" and not asks and nxt not in candidates:
            continue
        if nxt:
            out.append((c.node_id, nxt, f"next turn after leaf rank {c.rank}"))
        if prev and config.recall.recall_neighbours == "both":
            out.append((c.node_id, prev, f"turn before leaf rank {c.rank}"))
    missing = [nid for _, nid, _ in out if nid not in nodes]
    if missing:
        nodes.update({n.id: n for n in store.nodes(user_id=user_id, ids=missing)})
    # a Chinese reply that only acknowledges (助手: 好的，我记住了。) adds nothing (timem.recall.cjk); English unchanged
    return [t for t in out if t[1] not in nodes or not (cjk.is_acknowledgement(nodes[t[1]].content)
                                                        or (unseen is not None and unseen(nodes[t[1]])))]


def recall(store: MemoryStore, embedder: Embedder, llm: LLMClient | None, config: Config, user_id: str, query: str,
           question_time: datetime | None = None, options: RecallOptions = DEFAULT_OPTIONS) -> RecallResult:
    """Recall memories of ``user_id`` for ``query`` and persist the trace (unless ``options.persist`` is false).

    Args:
        llm: used by the LLM planner / gate when configured; ``None`` for offline runs.
        config: the settings (``options.config`` replaces them when set).
        question_time: when the question is asked; naive means wall time in the user's zone
            (``config.time.tz_for(user_id)``); default now. Relative time phrases ("yesterday", "on Monday") and
            calendar windows are read in its own UTC offset when it has one other than UTC, else in the user's
            zone (:func:`timem.tree.windows.speaker_zone`, docs/time.md).
        options: complexity, gate and planner overrides, participants, persist (:class:`RecallOptions`; its
            ``asker`` is not used by a recall).

    Raises:
        InputError: the query is empty or whitespace only (nothing is recalled or stored).
        ConfigError: an LLM planner or gate was requested by override without an LLM, or bad quotas.
        EmbeddingError: the query cannot be embedded.
    """
    config = options.config or config
    rec = RecordingLLM(llm) if llm is not None else None
    with store.snapshot():  # the recall's reads in one view: one transaction, one nodes-version read (issue 26 §3)
        result = run_recall(store, embedder, rec, config, user_id, query, question_time, options)
    if options.persist:
        persist(store, result.trace, config)
    return result


def persist(store: MemoryStore, trace: RecallTrace, config: Config) -> None:
    """Save a recall's ``trace`` (:func:`timem.recall.trace_store.save_trace`, with ``config.store``'s retention) and
    record the access of the items it gave (decay bookkeeping, at its question time), in one transaction: one
    commit (a DuckDB commit syncs its write-ahead log to disk, ~2-6 ms on this project's machines) instead of two."""
    with store.transaction():
        save_trace(store, trace, config.store)
        if trace.items:
            store.touch_items([u.item_id for u in trace.items], trace.question_time)
