"""Recall inspector page: a past query or a new one, under one or two recall configurations side by side.

Each configuration picks the planner (the configured one, the LLM planner, or a fixed complexity),
the gate (LLM / score / off), λ, the leaf top k and the token budget. Configuration A's trace is
persisted (it becomes a past query); B is a comparison run and is not saved.

A past query is shown by its trace id: the stored trace itself, never a later run of the same
question (results of a re-run are shown only under the stored trace they were re-run from).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time

import streamlit as st

from timem.config import Config
from timem.errors import TimemError
from timem.recall import load_traces, recall
from timem.recall.trace import RecallTrace
from timem.tree.windows import to_utc
from timem.ui import state
from timem.ui.feedback import show_flashes
from timem.ui.trace_view import render_trace

RESULTS_KEY = "insp_results"
PLANNERS = {"configured planner": None, "LLM planner": "llm", "centroid planner": "centroid",
            "fixed: simple": "simple", "fixed: hybrid": "hybrid", "fixed: complex": "complex"}


@dataclass(frozen=True)
class RecallSetup:
    """One column's recall configuration (``planner`` is a key of :data:`PLANNERS`)."""

    planner: str = "configured planner"
    gate: str = "score"
    recall_lambda: float = 0.9
    top_k: int = 20
    token_budget: int = 1000

    def config(self, base: Config) -> Config:
        """``base`` with this setup's λ, top k and token budget."""
        return base.with_overrides(recall_lambda=self.recall_lambda, recall_top_k=self.top_k,
                                   token_budget=self.token_budget)

    def overrides(self) -> dict[str, str | None]:
        """Keyword arguments for :func:`timem.recall.recall`."""
        p = PLANNERS[self.planner]
        fixed = p in ("simple", "hybrid", "complex")
        return {"complexity_override": p if fixed else None, "planner_override": None if fixed else p,
                "gate_override": self.gate}

    def label(self) -> str:
        return f"{self.planner} · gate {self.gate} · λ {self.recall_lambda} · k {self.top_k} · {self.token_budget} tok"


def run_setup(ctx: state.StudioContext, setup: RecallSetup, query: str, question_time: datetime,
              persist: bool) -> RecallTrace:
    """Recall ``query`` for the current user under ``setup``; returns the trace.

    Raises:
        TimemError: e.g. an LLM planner or gate asked for without an LLM.
    """
    eng = ctx.engine
    res = recall(eng.store, eng.embedder, eng.llm, setup.config(ctx.config), ctx.user, query,
                 question_time=question_time, persist=persist, **setup.overrides())
    return res.trace


def render() -> None:
    """The Recall inspector page."""
    ctx = state.current()
    st.title("Recall inspector")
    show_flashes()
    if ctx.engine is None:
        st.error(ctx.open_error or "the memory store is not open")
        return
    past = load_traces(ctx.engine.store, ctx.user, limit=200)
    source = st.radio("Query", ["New query", "Past query"], horizontal=True, key="insp_source",
                      index=1 if past and not st.session_state.get(RESULTS_KEY) else 0)
    stored: RecallTrace | None = None
    if source == "Past query":
        if not past:
            st.info("No past queries for this user yet: chat, or run a new query here.")
            return
        by_id = {t.trace_id: t for t in past}
        tid = st.selectbox("Past query", list(by_id), key="insp_past", format_func=lambda i: (
            f"{by_id[i].created_at.astimezone(ctx.tz):%Y-%m-%d %H:%M} · {by_id[i].query[:90]}"))
        stored = by_id[tid]
        query, qtime = stored.query, stored.question_time
        st.caption(f"Stored trace `{stored.trace_id}`, asked at {qtime.astimezone(ctx.tz):%Y-%m-%d %H:%M}. Open "
                   "**Re-run** below to recompute it under two configurations.")
        render_trace(ctx, stored, key=f"insp_stored_{stored.trace_id}")
    else:
        query = st.text_input("Question", key="insp_query", placeholder="e.g. What does Mia drink in the morning?")
        qtime = _question_time(ctx)
    origin = stored.trace_id if stored is not None else None  # which results belong on this view
    with st.expander("Re-run under two configurations" if stored else "Configurations", expanded=stored is None):
        setups = _setups(ctx)
        run = st.button("Run recall", type="primary", key="insp_run", disabled=not query.strip())
    if run:
        results: list[RecallTrace | str] = []
        with st.spinner("Recalling … (an LLM planner or gate takes a few seconds per call)"):
            for i, setup in enumerate(setups):
                try:
                    results.append(run_setup(ctx, setup, query, qtime, persist=i == 0))
                except TimemError as exc:
                    results.append(str(exc))
        st.session_state[RESULTS_KEY] = {"query": query, "origin": origin, "setups": [s.label() for s in setups],
                                         "results": results}
    shown = st.session_state.get(RESULTS_KEY)
    if shown and shown.get("origin") == origin and shown["query"] == query:
        if stored is not None:
            st.markdown("**Re-run of this stored trace**")
        _show(ctx, shown)


def _setups(ctx: state.StudioContext) -> list[RecallSetup]:
    compare = st.toggle("Compare two configurations side by side", value=True, key="insp_compare")
    has_llm = ctx.engine.llm is not None
    base = {"recall_lambda": ctx.config.recall_lambda, "top_k": ctx.config.recall_top_k,
            "token_budget": ctx.config.token_budget}
    defaults = [RecallSetup(gate="llm" if has_llm else "score", **base),
                RecallSetup(planner="fixed: complex", gate="off", **base)]
    cols = st.columns(2 if compare else 1)
    return [_setup_form(col, name, d, has_llm) for col, name, d in zip(cols, "AB", defaults)]


def _question_time(ctx: state.StudioContext) -> datetime:
    when = st.radio("Asked at", ["now", "a date"], horizontal=True, key="insp_when",
                    help="Relative phrases such as 'last week' resolve against this time.")
    if when == "now":
        return datetime.now(UTC)
    d = st.date_input("Date", key="insp_date")
    return to_utc(datetime.combine(d, time(12, 0)), ctx.tz)


def _setup_form(col, name: str, d: RecallSetup, has_llm: bool) -> RecallSetup:
    with col.container(border=True):
        st.markdown(f"**Configuration {name}**")
        planners = [p for p in PLANNERS if has_llm or p != "LLM planner"]
        gates = ["llm", "score", "off"] if has_llm else ["score", "off"]
        a, b = st.columns(2)
        planner = a.selectbox("Planner", planners, index=planners.index(d.planner), key=f"insp_{name}_planner")
        gate = b.selectbox("Gate", gates, index=gates.index(d.gate) if d.gate in gates else 0, key=f"insp_{name}_gate")
        a, b, c = st.columns(3)
        lam = a.number_input("λ (semantic weight)", 0.0, 1.0, d.recall_lambda, 0.05, key=f"insp_{name}_lam")
        k = b.number_input("leaf top k", 1, 100, d.top_k, key=f"insp_{name}_k")
        budget = c.number_input("token budget", 50, 20000, d.token_budget, 50, key=f"insp_{name}_budget")
    return RecallSetup(planner, gate, float(lam), int(k), int(budget))


def _show(ctx: state.StudioContext, shown: dict) -> None:
    cols = st.columns(len(shown["results"]))
    for i, (col, label, res) in enumerate(zip(cols, shown["setups"], shown["results"])):
        with col:
            st.markdown(f"**{'AB'[i]}** · {label}")
            if isinstance(res, str):
                st.error(res)
            else:
                render_trace(ctx, res, key=f"insp_res_{i}", compact=len(cols) > 1)
