"""Chat page: talk to the memory-backed assistant; every exchange becomes turns and an L1 segment online.

Each answer comes from :func:`timem.recall.answer` (recall, then one LLM call) and expands into its
recall trace. Event time is *now* or a simulated clock the user sets (and advances by hours, days,
weeks) so that session, day, week and month consolidation can be demoed in minutes.

* The user's message is stored *before* it is answered (:meth:`MemoryEngine.add_message`), so it
  survives an answer that fails or never completes (the user navigated away); the history then says
  that the answer is missing. The reply is stored as the assistant's turn (role ``assistant``,
  speaker ``Assistant``), which consolidation keeps out of the user's facts.
* A new browser session (a reload) resumes the user's open chat session: the user's latest session,
  if it is a studio chat session (``chat-…``) that was not ended (:func:`open_chat_session`).
* After an import (or a user switch) the event-time controls start again from their defaults
  (:func:`reset_event_time`), so simulated time continues the imported conversation.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime, timedelta

import streamlit as st

from timem import chat_sessions
from timem.chat_sessions import new_session_id
from timem.errors import ChatTurnError, ConsolidationIncomplete, InputError, TimemError
from timem.models import MemoryNode, Role
from timem.recall.trace import RecallTrace
from timem.studio_backend import StudioBackend
from timem.tree.windows import to_utc
from timem.ui import chat_forget, jobs, state, welcome
from timem.ui.feedback import flash, plural, show_flashes, user_errors
from timem.ui.trace_view import render_trace

SESSIONS_KEY = "chat_sessions"  #: user id -> open session id
META_KEY = "chat_meta"  #: (user, session, assistant seq) -> {"trace": RecallTrace, "written": [...]}
SIM_KEY = "chat_sim_time"  #: simulated local wall-clock time (naive, user's zone)
MODE_KEY = "chat_time_mode"
_PENDING_KEY = "_chat_pending_advance"
_CLOCK_KEYS = (MODE_KEY, SIM_KEY, "chat_sim_date", "chat_sim_clock", _PENDING_KEY)
BACKGROUND_TITLE = "Memories of the last exchange"
SHOWN_CHARS = 4000  #: a longer message is shown cut in its bubble (the store refuses it past max_turn_chars)
NO_LLM_NOTE = "No LLM is configured: the message is stored as a memory, and nothing answered it."
FORGOTTEN_NOTE = ("*Forgotten at your request: recall no longer finds this message. The Memories page can "
                 "restore it (status “deleted (undoable)”) or erase it for good.*")
MISSING_ANSWER = ("No answer was recorded for this message (the answer failed, or the page was left while it was "
                  "being written). Send it again to get one.")


def _sessions() -> dict[str, str | None]:
    return st.session_state.setdefault(SESSIONS_KEY, {})


def open_chat_session(engine: StudioBackend, user_id: str) -> str | None:
    """The session a new browser session resumes: the user's latest session (by last event) if it is a
    studio chat session (``chat-…``) that was not ended, else ``None``
    (:func:`timem.chat_sessions.open_chat_session`)."""
    return chat_sessions.open_chat_session(engine.sessions(user_id))


def _current_session(ctx: state.StudioContext) -> str | None:
    """This browser session's open chat session of the current user (resumed from the store on first use)."""
    sessions = _sessions()
    if ctx.user not in sessions:
        sessions[ctx.user] = open_chat_session(ctx.engine, ctx.user)
    return sessions[ctx.user]


def reset_event_time() -> None:
    """Forget the event-time mode and simulated clock, so that the Chat page derives them again from the
    current user's last turn (:func:`default_time_mode`, :func:`_default_sim`); e.g. after an import."""
    for key in _CLOCK_KEYS:
        st.session_state.pop(key, None)


def _meta() -> dict[tuple[str, str, int], dict]:
    return st.session_state.setdefault(META_KEY, {})


def _default_sim(ctx: state.StudioContext) -> datetime:
    """Where a simulated clock starts (naive wall time in the user's zone): a minute after the user's last turn when
    that turn is in the open chat session a reload resumes (the chat goes on; a new-user trial saw the clock jump an
    hour at every reload or user switch), an hour after it otherwise (an imported conversation: a new session), and
    now without turns."""
    turns = ctx.engine.turns(ctx.user)
    if not turns:
        base = datetime.now(UTC)
    else:
        resumed = turns[-1].session_id == open_chat_session(ctx.engine, ctx.user)
        base = turns[-1].event_time + (timedelta(minutes=1) if resumed else timedelta(hours=1))
    return base.astimezone(ctx.tz).replace(tzinfo=None, second=0, microsecond=0)


def default_time_mode(ctx: state.StudioContext) -> str:
    """``"Simulated"`` when the user's last turn is more than a week old (an imported conversation, so
    new exchanges continue its timeline) or later than now (a chat whose simulated clock was moved ahead: after a
    reload "Now" would date the next exchange before the last one), else ``"Now"``."""
    turns = ctx.engine.turns(ctx.user)
    if not turns:
        return "Now"
    since = datetime.now(UTC) - turns[-1].event_time
    return "Simulated" if since > timedelta(days=7) or since < -timedelta(minutes=1) else "Now"


def chat_clock(ctx: state.StudioContext) -> tuple[datetime, bool]:
    """The Chat page's clock for the current user, also before the page ran: ``(UTC-aware time, simulated)``; the
    chosen mode, else the default one (:func:`default_time_mode`: an imported conversation's timeline)."""
    mode = st.session_state.get(MODE_KEY) or default_time_mode(ctx)
    if mode == "Now":
        return datetime.now(UTC), False
    return to_utc(st.session_state.get(SIM_KEY) or _default_sim(ctx), ctx.tz), True


def event_time(ctx: state.StudioContext) -> datetime:
    """The event time (UTC-aware) of the next exchange: now, or the simulated clock (:func:`chat_clock`)."""
    return chat_clock(ctx)[0]


def _speaker_name(engine: StudioBackend, user_id: str) -> str:
    humans = [t.speaker for t in engine.turns(user_id) if t.role == Role.USER]
    return humans[-1] if humans else user_id


def render() -> None:
    """The Chat page."""
    ctx = state.current()
    st.title("Chat")
    show_flashes()
    if ctx.engine is None:
        st.error(ctx.open_error or "the memory store is not open")
        return
    welcome.render(ctx)
    _controls(ctx)
    session_id = _current_session(ctx)
    notice = st.empty()
    if session_id:
        _history(ctx, session_id)
    chat_forget.render(ctx, event_time(ctx))  # a forget note carries the chat's time, as its turns do
    if not session_id:
        notice.info("No open session. Type a message to start one, or press **Start session**.")
    busy = jobs.busy(ctx.engine)
    if not busy:
        _warm(ctx)
    if busy:
        st.info(f"'{busy.title}' is running in the background (progress in the sidebar); chatting waits until it "
                "ends, because a chat turn writes memories too. The other pages show what is written so far.",
                icon=":material/hourglass_top:")
    prompt = st.chat_input(f"Message the assistant as {ctx.user}", disabled=bool(busy))
    if prompt:
        notice.empty()  # the message starts a session
        _exchange(ctx, prompt)


def _controls(ctx: state.StudioContext) -> None:
    _apply_pending_advance()
    if MODE_KEY not in st.session_state:
        st.session_state[MODE_KEY] = default_time_mode(ctx)
    session_id = _current_session(ctx)
    c1, c2, c3 = st.columns([3, 1, 1])
    when = ("now" if st.session_state[MODE_KEY] == "Now" else
            f"{st.session_state.get(SIM_KEY) or _default_sim(ctx):%a %d %b %Y %H:%M} (simulated)")
    c1.markdown(f"**User** `{ctx.user}` · **session** `{session_id or '—'}`  \n**Next exchange at** {when}")
    if c2.button("Start session", key="chat_start", disabled=bool(session_id), width="stretch"):
        _sessions()[ctx.user] = new_session_id(event_time(ctx).astimezone(ctx.tz))
        st.rerun()
    if c3.button("End session", key="chat_end", disabled=not session_id or bool(jobs.busy(ctx.engine)),
                 width="stretch"):
        with user_errors("Ending the session failed"), ctx.lock, st.spinner(
                "Consolidating the session (and any day, week or month it closes) …"):
            try:
                written = ctx.engine.end_session(ctx.user, session_id)
            except ConsolidationIncomplete as exc:  # the session is ended; what could be written, was
                written = exc.written
                flash(f"Consolidation is incomplete: {exc}", "warning")
            _sessions()[ctx.user] = None
            flash(f"Session {session_id} ended. " + written_summary(written))
            st.rerun()
    with st.expander("Event time"):
        mode = st.radio("Event time of the next exchange", ["Now", "Simulated"], key=MODE_KEY, horizontal=True,
                        help="Simulated time lets you jump ahead so that days, weeks and months close.")
        if mode == "Simulated":
            if SIM_KEY not in st.session_state:
                st.session_state[SIM_KEY] = _default_sim(ctx)
            sim: datetime = st.session_state[SIM_KEY]
            st.session_state.setdefault("chat_sim_date", sim.date())
            st.session_state.setdefault("chat_sim_clock", sim.time())
            d = st.date_input("Date", key="chat_sim_date")
            t = st.time_input("Time", key="chat_sim_clock", step=60)
            st.session_state[SIM_KEY] = datetime.combine(d, t)
            cols = st.columns(3)
            for col, (label, delta) in zip(cols, [("+1 hour", timedelta(hours=1)), ("+1 day", timedelta(days=1)),
                                                  ("+1 week", timedelta(weeks=1))], strict=True):
                col.button(label, key=f"chat_plus_{label}", width="stretch", on_click=_advance, args=(delta,))
            st.caption(f"Next exchange at {st.session_state[SIM_KEY]:%a %d %b %Y %H:%M} ({ctx.config.time.timezone}).")


def _advance(delta: timedelta) -> None:
    """Move the simulated clock (a widget callback, or before the widgets exist in this run)."""
    sim = st.session_state[SIM_KEY] + delta
    st.session_state[SIM_KEY] = sim
    st.session_state["chat_sim_date"] = sim.date()
    st.session_state["chat_sim_clock"] = sim.time()


def _apply_pending_advance() -> None:
    delta = st.session_state.pop(_PENDING_KEY, None)
    if delta and SIM_KEY in st.session_state:
        _advance(delta)


def _history(ctx: state.StudioContext, session_id: str) -> None:
    meta = _meta()
    turns, forgotten = ctx.engine.history(ctx.user, session_id)
    for i, t in enumerate(turns):
        role = "assistant" if t.role == Role.ASSISTANT else "user"
        with st.chat_message(role):
            if t.id in forgotten:  # the person asked to forget it: its text is not shown again
                st.caption(FORGOTTEN_NOTE)
            else:
                st.markdown(t.text)
            st.caption(f"{t.speaker} · {t.event_time.astimezone(ctx.tz):%a %d %b %Y %H:%M}")
            info = meta.get((ctx.user, session_id, t.seq))
            if info and t.id not in forgotten:  # a forgotten exchange's trace would quote it
                _answer_details(ctx, info)
            if t.role != Role.ASSISTANT and (i + 1 == len(turns) or turns[i + 1].role != Role.ASSISTANT):
                if ctx.engine.has_llm:
                    st.warning(MISSING_ANSWER, icon=":material/speaker_notes_off:")
                else:  # without an LLM nothing answers, and the note shown at the time is not stored
                    st.caption(NO_LLM_NOTE)


def _answer_details(ctx: state.StudioContext, info: dict) -> None:
    if info.get("written"):
        st.caption(":material/edit_note: " + "; ".join(info["written"]))
    if info.get("warning"):
        st.warning("The exchange was recorded, but consolidation is incomplete: " + info["warning"],
                   icon=":material/warning:")
    trace: RecallTrace | None = info.get("trace")
    if trace is not None:
        used = plural(len(trace.node_ids), "memory", "memories")
        with st.expander(f"Recall trace · {trace.plan.complexity} · {used} · Mem Len {trace.context_tokens} tokens"):
            render_trace(ctx, trace, key=f"chat_{trace.trace_id}")


def written_summary(nodes: list[MemoryNode]) -> str:
    """``"wrote L1 segment (verbatim), L2 session (qwen…)"`` — every new memory with the model that wrote it."""
    if not nodes:
        return "No new memories yet."
    return "Wrote " + ", ".join(f"{n.level.label} ({n.model_id})" for n in nodes) + "."


_WARMED_KEY = "chat_warmed"
_log = logging.getLogger(__name__)


def _warm(ctx: state.StudioContext) -> None:
    """With the embedded model, evaluate this person's chat system prompt into the model's cache in a
    background thread (:meth:`MemoryEngine.warm_chat`), so that the first answer does not pay for it: once
    per user and name, and again after a background job (which may have used the model)."""
    engine = ctx.local  # only an embedded model in this process keeps a prompt cache worth warming
    if engine is None or not engine.has_llm or engine.local_model_path is None:
        return
    key = (id(engine), ctx.user)
    warmed: set[tuple[int, str]] = st.session_state.setdefault(_WARMED_KEY, set())
    if key in warmed:
        return
    warmed.add(key)
    threading.Thread(target=_warm_worker, args=(engine, ctx.user, ctx.lock), name="timem-chat-warm",
                     daemon=True).start()


def _warm_worker(engine, user_id: str, lock) -> None:
    try:
        with lock:  # the speaker's name, as the next chat turn will give it, read off the page's run
            name = _speaker_name(engine, user_id)
        engine.warm_chat(user_id, name, store_lock=lock)
    except TimemError as exc:  # the answer loads the model itself and shows the error to the user
        _log.warning("warming the chat prompt of %s failed: %s", user_id, exc)


def _session_at(ctx: state.StudioContext, session_id: str | None, at: datetime) -> str:
    """The chat session a message at ``at`` goes to: ``session_id`` while it is live, else a new one. A session
    has ended by idling when its last turn is more than ``session_idle_timeout_minutes`` before ``at`` (as
    consolidation sees it), and cannot last more than a day (:data:`timem.models.MAX_SESSION`)."""
    turns = ctx.engine.turns(ctx.user, session_id) if session_id else []
    idle = timedelta(minutes=ctx.engine.config.time.session_idle_timeout_minutes)
    if session_id and chat_sessions.session_is_live(turns, at, idle):
        return session_id
    return new_session_id(at.astimezone(ctx.tz))


def _exchange(ctx: state.StudioContext, text: str) -> None:
    """One chat exchange through :meth:`MemoryEngine.chat_turn` (the message is kept even if answering fails)."""
    if not text.strip():  # no empty bubble above the error
        st.error("The message was not recorded: it is empty. Type something to send.")
        return
    if chat_forget.intercept(ctx, text):  # "forget that …": a preview to confirm, nothing stored or answered
        st.rerun()
    at = event_time(ctx)
    sessions = _sessions()
    session_id = _session_at(ctx, sessions.get(ctx.user), at)
    sent, reply = st.empty(), st.empty()  # the two bubbles; a refused message's are replaced by the error
    with sent.container(), st.chat_message("user"):
        st.markdown(text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]} … ({len(text):,} characters)")
    later = jobs.chat_consolidates_later(ctx.engine)  # embedded LLM: the answer first, memories in the background
    try:
        with reply.container(), st.chat_message("assistant"), ctx.lock, st.spinner(
                "Recalling memories and answering … (the embedded model needs about 5–15 s)"):
            turn = ctx.engine.chat_turn(ctx.user, session_id, text, at,
                                        user_name=_speaker_name(ctx.engine, ctx.user), consolidate=not later)
    except ChatTurnError as exc:  # the message is stored (the history shows it from now on): its bubble stays
        sessions[ctx.user] = session_id
        with reply.container(), st.chat_message("assistant"):
            st.error(str(exc)[0].upper() + str(exc)[1:])
            if exc.stage == "answer":
                st.warning(MISSING_ANSWER, icon=":material/speaker_notes_off:")
        return
    except TimemError as exc:  # refused, nothing stored: no bubble as if sent, the error in its place
        reply.empty()  # a typed message is no record of a file: "(record turn …, field 'text')" went
        sent.error(f"The message was not recorded: {exc.reason if isinstance(exc, InputError) else exc}",
                   icon=":material/block:")
        return
    sessions[ctx.user] = session_id
    if turn.forgotten is not None:  # (the page intercepts "forget that …" before: see chat_forget)
        st.rerun()
    seq = ctx.engine.turns(ctx.user, session_id)[-1].seq  # the reply's (not the count - 1: a hard erase leaves gaps)
    summary = (f"Memories of this exchange are written in the background ('{BACKGROUND_TITLE}', in the sidebar)."
               if later else written_summary(turn.written))
    _meta()[(ctx.user, session_id, seq)] = {"trace": turn.trace, "written": [summary], "warning": turn.warning}
    if later and ctx.local is not None:
        jobs.start_consolidation(ctx.local, ctx.lock, [ctx.user], flush=False, title=BACKGROUND_TITLE)
        st.session_state.get(_WARMED_KEY, set()).clear()  # the job may use the model: warm again after it
    if st.session_state.get(MODE_KEY) == "Simulated":
        st.session_state[_PENDING_KEY] = timedelta(minutes=1)  # applied before the clock widgets next run
    st.rerun()
