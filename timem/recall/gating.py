"""Gating: decide which recalled memories reach the context, then cap it by the token budget.

Modes (``Config.recall.gate``; TiMem §3.3 complexity-aware gating):

* ``"llm"``: one schema-constrained call (:mod:`timem.prompts.gate`, purpose ``"recall.gate"``)
  sees the question, its complexity and the numbered candidates (leaves by rank, then added
  ancestors) and returns the numbers to keep. Fallbacks, recorded in :attr:`GateOutcome.fallback`
  and never silent:

  - the model keeps nothing (or only invalid numbers): the leaves are kept in fused order and the
    token budget cuts them (``applied="top-leaves"``); ancestors are dropped;
  - the call fails (:class:`~timem.errors.LLMError`): the score gate is applied instead
    (``applied="score"``); recall still succeeds.

* ``"score"`` (no LLM): leaves with fused score ``>= Config.recall.gate_threshold`` are kept; an
  ancestor is kept if any kept leaf reached it during propagation.
* ``"off"``: everything is kept.

In every mode :func:`apply_budget` then adds kept memories in priority order (each leaf by rank,
followed by the ancestors it brought, then neighbour turns) while the rendered context stays
within ``Config.recall.token_budget`` cl100k tokens; a memory that does not fit is dropped (reason
``"token budget"``) and smaller later ones may still fit.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, tzinfo
from typing import Literal

from pydantic import BaseModel, Field

from timem.errors import LLMError
from timem.llm.protocol import LLMClient
from timem.models import MemoryNode
from timem.prompts import gate as gate_prompt
from timem.recall import cjk
from timem.recall.ancestors import AncestorRecord
from timem.recall.context import Layout, date_label, quarter_passage
from timem.recall.context_fit import fit_context
from timem.recall.keywords import person_names
from timem.recall.leaves import Candidate
from timem.recall.state import RecallState
from timem.recall.time_channel import topical

GateMode = Literal["llm", "score", "off"]


class GateDecision(BaseModel):
    """The fate of one memory: kept or dropped, and why."""

    node_id: str
    level: int
    kept: bool
    reason: str


class GateOutcome(BaseModel):
    """What the gate did. ``mode`` was asked for; ``applied`` is what actually decided
    (``"llm"``, ``"score"``, ``"off"``, ``"top-leaves"``, or ``"none"`` when there was no candidate
    and nothing was called); ``fallback`` says why they differ."""

    mode: GateMode
    applied: str
    fallback: str | None = None
    decisions: list[GateDecision] = Field(default_factory=list)
    invalid_numbers: list[int] = Field(default_factory=list)  #: numbers the model returned that match no memory


def score_gate(leaves: Sequence[Candidate], ancestors: Sequence[AncestorRecord], threshold: float,
               floor: float = 0.0, outside: Collection[str] = (), outside_floor: float = 0.0
               ) -> tuple[set[str], dict[str, str]]:
    """``(kept ids, reason per id)`` of the no-LLM gate (see the module docstring).

    ``threshold`` is relative (fused scores are max-normalised, so the best candidate always
    passes it); ``floor`` is absolute: a leaf also needs a keyword match (raw BM25 > 0, not from a person's name
    alone: :attr:`Candidate.name_only`, whose cosine is then the one with the names masked, nor from characters
    split from a word of a Chinese question alone: :attr:`Candidate.parts_only`) or a raw
    cosine similarity ``>= floor``, so an unrelated or empty-content question ("???") gets little
    or no context, and each dropped leaf says so. A leaf inside a time window the question names (TIDER's overlap
    bonus, :attr:`Candidate.time_bonus`: said then, or mentioning a date then) needs neither: "What did I do on 7
    May?" asks for what was said that day, whatever its words (the floor dropped "I watched a documentary about
    volcanoes", cosine 0.226, and kept the assistant's "Nice!" of that exchange).

    ``outside``: ids of leaves outside the time window the question names that share no content word with it beyond
    its time (:func:`run_gate`); they need a raw cosine ``>= outside_floor`` instead (``Config.recall.
    gate_floor_outside_window``): "What did I do on 10 April?" matches any "Today I …" line by its shape, cosine
    0.29-0.50, and the plain floor kept nearly every line said before the question time.
    """
    kept, why = set(), {}
    for c in leaves:
        keyword = (c.bm25_raw or 0.0) > 0 and not c.name_only and not c.parts_only
        cosine = c.masked_cosine if c.name_only else c.cosine
        strict = c.node_id in outside and c.time_bonus <= 0
        if strict:
            relevant = cosine is not None and cosine >= outside_floor
        else:
            relevant = keyword or c.time_bonus > 0 or (cosine is not None and cosine >= floor)
        ok = c.fused >= threshold and relevant
        name, masked = (" but a name", " (names masked)") if c.name_only else ("", "")
        if c.parts_only:
            name = " but characters of a word of the question"
        lacks = (f"; outside the question's time window, no content word of the question and cosine{masked} "
                 f"{cosine or 0.0:.3f} < floor outside the window {outside_floor}") if strict else (
            f"; no keyword match{name} and cosine{masked} {cosine or 0.0:.3f} < relevance floor {floor}")
        why[c.node_id] = (f"fused {c.fused:.3f} {'>=' if c.fused >= threshold else '<'} threshold {threshold}"
                          + ("" if relevant else lacks))
        if ok:
            kept.add(c.node_id)
    for a in ancestors:
        if not a.added:
            continue
        via = [leaf for leaf in a.reached_by if leaf in kept]
        why[a.node_id] = f"reached from kept leaf {via[0]}" if via else "no kept leaf leads to it"
        if via:
            kept.add(a.node_id)
    return kept, why


def llm_gate(llm: LLMClient, question: str, complexity: str, leaves: Sequence[Candidate],
             nodes: dict[str, MemoryNode], ancestor_ids: Sequence[str], question_time: datetime, tz: tzinfo,
             user_id: str) -> tuple[set[str], dict[str, str], list[int]]:
    """``(kept ids, reason per id, invalid numbers)`` from one gate call.

    Raises:
        LLMError: the call failed or gave no valid :class:`~timem.prompts.gate.GateResponse`.
    """
    order = [c.node_id for c in sorted(leaves, key=lambda c: c.rank)] + list(ancestor_ids)
    items = [gate_prompt.GateItem(i, int(nodes[nid].level), date_label(nodes[nid], tz), nodes[nid].content)
             for i, nid in enumerate(order, start=1)]
    msgs = gate_prompt.build_messages(question, complexity, items, question_time.astimezone(tz))  # type: ignore[arg-type]
    resp = llm.complete_json(msgs, gate_prompt.GateResponse, purpose="recall.gate", user_id=user_id)
    valid = {n for n in resp.keep if 1 <= n <= len(order)}
    invalid = sorted({n for n in resp.keep if n not in valid})
    kept = {order[n - 1] for n in valid}
    why = {nid: f"LLM gate {'kept' if nid in kept else 'dropped'} [{i}]" for i, nid in enumerate(order, start=1)}
    return kept, why, invalid


def run_gate(state: RecallState, mode: GateMode, complexity: str, leaves: Sequence[Candidate],
             ancestors: Sequence[AncestorRecord], nodes: dict[str, MemoryNode], fallback: str | None = None,
             window: bool = False) -> tuple[set[str], dict[str, str], GateOutcome]:
    """Apply ``mode`` with its documented fallbacks, with the state's LLM, question, question time and the
    ``Config.recall.gate_threshold`` / ``gate_floor`` (``gate_floor_cjk`` for a Chinese question) of the score gate;
    ``fallback`` pre-records why a mode was
    replaced upstream (e.g. no LLM configured). ``window``: the question names a time window (TIDER's localiser
    found one) and a leaf lies in it; the score gate then holds a leaf outside it to
    ``Config.recall.gate_floor_outside_window`` unless it shares a content word with the question beyond its time and
    the persons it names (:func:`timem.recall.time_channel.topical`). A window nothing lies in changes nothing ("Where
    did Caroline move from 4 years ago?": "I've known these friends for 4 years, since I moved" was said in 2023, and
    "move" is a stop word). Returns
    ``(kept ids, reason per id, outcome without decisions)``.
    """
    llm, question, question_time, user_id = state.llm, state.query, state.question_time, state.user_id
    tz, threshold, floor = state.tz, state.config.recall.gate_threshold, state.config.recall.gate_floor
    if cjk.is_chinese(question):  # MiniLM's cosines of Chinese text are high for anything (timem.recall.cjk)
        floor = state.config.recall.gate_floor_cjk
    outside: set[str] = set()  # leaves outside the question's window with no content word of it (docstring)
    if window and any(c.time_bonus > 0 for c in leaves) and not cjk.is_chinese(question):
        names = frozenset(person_names(question, state.participants))  # who is asked about is no topic
        outside = {c.node_id for c in leaves if c.time_bonus <= 0 and c.node_id in nodes
                   and not topical(question, nodes[c.node_id].content, names)}
    outside_floor = state.config.recall.gate_floor_outside_window
    added = [a.node_id for a in ancestors if a.added]
    if not leaves:
        return set(), {}, GateOutcome(mode=mode, applied="none", fallback=fallback)
    if mode == "off":
        ids = [c.node_id for c in leaves] + added
        return set(ids), dict.fromkeys(ids, "gate off"), GateOutcome(mode=mode, applied="off", fallback=fallback)
    if mode == "llm" and llm is not None:
        try:
            kept, why, invalid = llm_gate(llm, question, complexity, leaves, nodes, added, question_time, tz, user_id)
        except LLMError as exc:
            kept, why = score_gate(leaves, ancestors, threshold, floor, outside, outside_floor)
            return kept, why, GateOutcome(mode=mode, applied="score",
                                          fallback=f"LLM gate failed ({exc}); score gate applied instead")
        if not kept:
            why = {c.node_id: "LLM gate kept nothing; fallback keeps top-scored leaves" for c in leaves}
            why.update(dict.fromkeys(added, "LLM gate kept nothing; fallback drops ancestors"))
            return ({c.node_id for c in leaves}, why,
                    GateOutcome(mode=mode, applied="top-leaves", invalid_numbers=invalid,
                                fallback="LLM gate returned no valid id; kept the top-scored leaves up to the budget"))
        return kept, why, GateOutcome(mode=mode, applied="llm", invalid_numbers=invalid)
    kept, why = score_gate(leaves, ancestors, threshold, floor, outside, outside_floor)
    return kept, why, GateOutcome(mode=mode, applied="score", fallback=fallback)


def apply_budget(kept: set[str], why: dict[str, str], leaves: Sequence[Candidate], ancestors: Sequence[AncestorRecord],
                 nodes: dict[str, MemoryNode], budget: int, tz: tzinfo, layout: Layout = "grouped",
                 neighbours: Sequence[tuple[str, str, str]] = (), interleave: bool = True, question: str = ""
                 ) -> tuple[list[MemoryNode], str, int, list[GateDecision]]:
    """Fit the kept memories into ``budget`` tokens (see the module docstring).

    Priority: each leaf by rank followed by the ancestors it brought; ``neighbours`` are
    ``(leaf id, neighbour id, reason)`` triples (the adjacent turns of kept leaves), placed right
    after their leaf when ``interleave``, else after every leaf. The greedy fill is
    :func:`timem.recall.context.fit_budget` over the rendered context in ``layout``
    (:func:`timem.recall.context_fit.fit_context`: the same choices without a render per trial). With ``question``, a
    memory longer than a quarter of the budget is replaced by its most relevant passage
    (:func:`timem.recall.context.best_passage`), so an over-long memory contributes, never nothing.

    Returns:
        ``(final nodes in priority order, context text, its cl100k token count, a decision per
        leaf, added ancestor and extra node)``.
    """
    brought: dict[str, list[str]] = {}
    for a in ancestors:
        if a.added:
            brought.setdefault(a.via_leaf, []).append(a.node_id)
    ranked = sorted(leaves, key=lambda c: c.rank)
    leaf_ids = {c.node_id for c in ranked}
    why, kept = dict(why), set(kept)
    pulled: dict[str, list[str]] = {}
    rank = {c.node_id: c.rank for c in ranked}
    for leaf, nid, reason in neighbours:
        # a neighbour that is itself a lower-ranked leaf moves up to its leaf (and passes the gate with it)
        if nid in nodes and nid != leaf and rank.get(nid, 10**9) > rank.get(leaf, 0):
            pulled.setdefault(leaf, []).append(nid)
            if nid not in kept:
                kept.add(nid)
                why[nid] = reason
            elif nid not in leaf_ids:
                why.setdefault(nid, reason)
    order: list[str] = []
    for c in ranked:
        order += [c.node_id, *brought.get(c.node_id, []), *(pulled.get(c.node_id, []) if interleave else [])]
    if not interleave:
        order += [nid for c in ranked for nid in pulled.get(c.node_id, [])]
    priority = list(dict.fromkeys(order))  # first place wins
    # an over-long memory contributes its most relevant passage instead of nothing (a quarter of the budget)
    eligible = [quarter_passage(nodes[nid], question, budget) if question else nodes[nid]
                for nid in priority if nid in kept]
    chosen, text, tokens = fit_context(eligible, tz, layout, budget)
    final = {n.id for n in chosen}
    decisions = []
    for nid in priority:
        if nid not in kept:
            ok, reason = False, why.get(nid, "dropped")
        elif nid in final:
            ok, reason = True, why.get(nid, "kept")
        else:
            ok, reason = False, f"{why.get(nid, 'kept')}; dropped by token budget ({budget})"
        decisions.append(GateDecision(node_id=nid, level=int(nodes[nid].level), kept=ok, reason=reason))
    return chosen, text, tokens, decisions
