"""Recall inspector page: a past query or a new one, under one or two recall configurations side by side.

Each configuration picks the planner (the configured one, the LLM planner, or a fixed complexity),
the gate (LLM / score / off), λ, the leaf top k and the token budget. Configuration A's trace is
persisted (it becomes a past query); B is a comparison run and is not saved. B can recall from
**another database** (e.g. the same conversation consolidated in another mode, issue 11): the same
user and question there, without an LLM (score gate or none), each memory's mode in the Gate tab.

A past query is shown by its trace id: the stored trace itself, never a later run of the same
question (results of a re-run are shown only under the stored trace they were re-run from).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time

import streamlit as st

from timem.config import PAPER_QUOTAS, Config
from timem.errors import TimemError
from timem.recall.trace import RecallTrace
from timem.tree.windows import to_utc
from timem.ui import state
from timem.ui.chat import chat_clock
from timem.ui.feedback import show_flashes
from timem.ui.trace_view import render_trace

RESULTS_KEY = "insp_results"
LEVELS = {"L1 leaves (default)": None, "L1–L5 (TiMem paper quotas)": PAPER_QUOTAS}
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
    db: str | None = None  #: another DuckDB file to recall from (``None``: the studio's database)
    levels: str = "L1 leaves (default)"  #: a key of :data:`LEVELS`: which levels may enter the context

    def config(self, base: Config) -> Config:
        """``base`` with this setup's λ, top k, token budget and (if chosen) the paper's L1–L5 quotas."""
        quotas = LEVELS[self.levels]
        return base.with_overrides(recall_lambda=self.recall_lambda, recall_top_k=self.top_k,
                                   token_budget=self.token_budget, **({"quotas": quotas} if quotas else {}))

    def overrides(self) -> dict[str, str | None]:
        """Keyword arguments for :meth:`timem.engine.MemoryEngine.recall`."""
        p = PLANNERS[self.planner]
        fixed = p in ("simple", "hybrid", "complex")
        return {"complexity": p if fixed else None, "planner": None if fixed else p, "gate": self.gate}

    def label(self) -> str:
        where = f" · on {self.db}" if self.db else ""
        levels = " · L1–L5" if LEVELS[self.levels] else ""
        return (f"{self.planner} · gate {self.gate} · λ {self.recall_lambda} · k {self.top_k} · "
                f"{self.token_budget} tok{levels}{where}")


def run_setup(ctx: state.StudioContext, setup: RecallSetup, query: str, question_time: datetime,
              persist: bool) -> RecallTrace:
    """Recall ``query`` for the current user under ``setup``; returns the trace.

    With ``setup.db`` the recall runs on that database (:func:`state.comparison_context`) for the same user.

    Raises:
        TimemError: e.g. an LLM planner or gate asked for without an LLM, another database that does not
            exist, holds no such user, or is busy.
    """
    where = ctx if setup.db is None else state.comparison_context(ctx, setup.db)
    if where is ctx:
        return ctx.engine.recall(ctx.user, query, question_time, persist=persist, config=setup.config(ctx.config),
                                 **setup.overrides()).trace
    if where.local is None:
        raise TimemError(f"{setup.db} cannot be compared with over a memory service; run `timem studio --db FILE`.")
    if not where.lock.acquire(timeout=30):
        raise TimemError(f"{setup.db} is busy (another page is using it); run the comparison again in a moment.")
    try:
        return where.local.recall(ctx.user, query, question_time, persist=False, config=setup.config(where.config),
                                   **setup.overrides()).trace
    finally:
        where.lock.release()


def _not_forgotten(ctx: state.StudioContext, traces: list[RecallTrace]) -> list[RecallTrace]:
    """``traces`` without those of chat messages the person asked to forget (a trial found "I have a cat named Miso."
    still listed as a past query, its stored answer quoting it, after the forget); the traces stay stored."""
    gone = ctx.engine.forgotten_turn_ids(ctx.user) if traces else set()
    # a chat message's trace asks its text at its event time: the same words asked again later stay listed
    said = {(t.text, t.event_time) for t in ctx.engine.turns(ctx.user, ids=sorted(gone))} if gone else set()
    return [t for t in traces if (t.query, t.question_time) not in said]


def render() -> None:
    """The Recall inspector page."""
    ctx = state.current()
    st.title("Recall inspector")
    show_flashes()
    if ctx.engine is None:
        st.error(ctx.open_error or "the memory store is not open")
        return
    past = _not_forgotten(ctx, ctx.engine.traces(ctx.user, limit=200))
    source = st.radio("Query", ["New query", "Past query"], horizontal=True, key="insp_source",
                      index=1 if past and not st.session_state.get(RESULTS_KEY) else 0)
    stored: RecallTrace | None = None
    if source == "Past query":
        if not past:
            st.info("No past queries for this user yet: chat, or run a new query here.")
            return
        by_id = {t.trace_id: t for t in past}
        tid = st.selectbox("Past query", list(by_id), key="insp_past", format_func=lambda i: (
            f"recalled {by_id[i].created_at.astimezone(ctx.tz):%Y-%m-%d %H:%M} · {by_id[i].query[:90]}"))
        stored = by_id[tid]
        query, qtime = stored.query, stored.question_time
        st.caption(f"Stored trace `{stored.trace_id}`: asked for {qtime.astimezone(ctx.tz):%Y-%m-%d %H:%M} (the "
                   "question's time, simulated in a simulated chat), recalled on "
                   f"{stored.created_at.astimezone(ctx.tz):%Y-%m-%d %H:%M} (the clock). Open **Re-run** below to "
                   "recompute it under two configurations.")
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
                                         "dbs": [s.db for s in setups], "results": results}
    shown = st.session_state.get(RESULTS_KEY)
    if shown and shown.get("origin") == origin and shown["query"] == query:
        if stored is not None:
            st.markdown("**Re-run of this stored trace**")
        _show(ctx, shown)


def _setups(ctx: state.StudioContext) -> list[RecallSetup]:
    compare = st.toggle("Compare two configurations side by side", value=True, key="insp_compare")
    has_llm = ctx.engine.has_llm
    # configuration A is what the chat recalls with: its gate and its context budget
    chat_budget = ctx.config.recall.chat_token_budget(ctx.engine.local_model_path is not None)
    base = {"recall_lambda": ctx.config.recall.recall_lambda, "top_k": ctx.config.recall.recall_top_k,
            "token_budget": chat_budget}
    defaults = [RecallSetup(gate=ctx.config.recall.gate, **base),
                RecallSetup(planner="fixed: complex", gate="off", **base)]
    cols = st.columns(2 if compare else 1)
    return [_setup_form(ctx, col, name, d, has_llm) for col, name, d in zip(cols, "AB", defaults, strict=False)]


def _question_time(ctx: state.StudioContext) -> datetime:
    """The new query's time: the Chat page's clock (now, or its simulated time: a new-user trial asked "What did I
    drink in the morning in April?" over the 2024 demo and got April 2026), or a chosen date."""
    clock, simulated = chat_clock(ctx)
    when = st.radio("Asked at", ["the chat's clock", "a date"], horizontal=True, key="insp_when",
                    help="Relative phrases such as 'last week' resolve against this time. The chat's clock is "
                         "what the Chat page dates its next exchange with.")
    if when != "a date":
        st.caption(f"Asked at {clock.astimezone(ctx.tz):%a %d %b %Y %H:%M}"
                   + (" (the chat's simulated clock)" if simulated else " (now)"))
        return clock
    d = st.date_input("Date", key="insp_date", value=clock.astimezone(ctx.tz).date())
    return to_utc(datetime.combine(d, time(12, 0)), ctx.tz)


OTHER_FILE = "another file …"


def _database(ctx: state.StudioContext, name: str) -> str | None:
    """Configuration B's database: this one, another known ``*.duckdb`` file, or a typed path."""
    if ctx.local is None:  # over a memory service: only its own memory
        state.local_only(ctx, "Recalling from another database", "run `timem studio --db FILE` to compare files.")
        return None
    here = str(ctx.config.store.db_path)
    files = [f for f in state.known_db_files(ctx.config) if f != here]
    choice = st.selectbox("Database", ["this database", *files, OTHER_FILE], key=f"insp_{name}_db",
                          help="Recall the same user and question from another database, e.g. the same "
                               "conversation consolidated in another mode (no LLM there).")
    if choice == OTHER_FILE:
        typed = st.text_input("Path", key=f"insp_{name}_db_path", placeholder="path/to/other.duckdb").strip()
        return typed or None
    return None if choice == "this database" else choice


def _setup_form(ctx: state.StudioContext, col, name: str, d: RecallSetup, has_llm: bool) -> RecallSetup:
    with col.container(border=True):
        st.markdown(f"**Configuration {name}**")
        db = _database(ctx, name) if name == "B" else None
        has_llm = has_llm and db is None
        planners = [p for p in PLANNERS if has_llm or p != "LLM planner"]
        gates = ["llm", "score", "off"] if has_llm else ["score", "off"]
        a, b = st.columns(2)
        planner = a.selectbox("Planner", planners, index=planners.index(d.planner), key=f"insp_{name}_planner")
        gate = b.selectbox("Gate", gates, index=gates.index(d.gate) if d.gate in gates else 0, key=f"insp_{name}_gate")
        a, b, c = st.columns(3)
        lam = a.number_input("λ (semantic weight)", 0.0, 1.0, d.recall_lambda, 0.05, key=f"insp_{name}_lam")
        k = b.number_input("leaf top k", 1, 100, d.top_k, key=f"insp_{name}_k")
        budget = c.number_input("token budget", 50, 20000, d.token_budget, 50, key=f"insp_{name}_budget")
        levels = st.selectbox("Levels in the context", list(LEVELS), key=f"insp_{name}_levels",
                              help="L1–L5 lets the session, day, week and profile memories in, e.g. to compare "
                                   "consolidation modes; by default the context holds L1 leaves only.")
    return RecallSetup(planner, gate, float(lam), int(k), int(budget), db, levels)


def _show(ctx: state.StudioContext, shown: dict) -> None:
    cols = st.columns(len(shown["results"]))
    dbs = shown.get("dbs") or [None] * len(cols)
    for i, (col, label, res, db) in enumerate(zip(cols, shown["setups"], shown["results"], dbs, strict=True)):
        with col:
            st.markdown(f"**{'AB'[i]}** · {label}")
            if isinstance(res, str):
                st.error(res)
                continue
            try:
                where = ctx if db is None else state.comparison_context(ctx, db)
            except TimemError as exc:
                st.error(str(exc))
                continue
            if where is not ctx and not where.lock.acquire(timeout=30):
                st.error(f"{db} is busy (another page is using it); reload in a moment.")
                continue
            try:
                render_trace(where, res, key=f"insp_res_{i}", compact=len(cols) > 1)
            finally:
                if where is not ctx:
                    where.lock.release()
