"""Memories page: search and filter, edit, soft delete with undo, hard erase of memories or a whole user.

Edits and deletes re-consolidate the ancestors (with the LLM, one call per affected level), so
they take a few seconds per level with the embedded model; a spinner says so.
"""

from __future__ import annotations

from datetime import datetime, time

import pandas as pd
import streamlit as st

from timem.models import MemoryNode, NodeStatus
from timem.ui import chat, jobs, state
from timem.ui.facts import render_facts
from timem.ui.feedback import flash, plural, show_flashes, user_errors
from timem.ui.sidebar import remove_uploads

SEL_KEY = "mem_selected"
UNDO_KEY = "mem_undo"
STATUSES = {"active": NodeStatus.ACTIVE, "deleted (undoable)": NodeStatus.DELETED,
            "superseded": NodeStatus.SUPERSEDED, "any": None}


def filter_nodes(nodes: list[MemoryNode], *, text: str = "", levels: list[int] | None = None,
                 models: list[str] | None = None, start: datetime | None = None, end: datetime | None = None
                 ) -> list[MemoryNode]:
    """Nodes whose content contains ``text`` (case-insensitive), at ``levels``, written by ``models``,
    with a span overlapping ``[start, end]`` (UTC-aware bounds; ``None`` = unbounded)."""
    needle = text.strip().lower()
    out = []
    for n in nodes:
        if needle and needle not in n.content.lower() and needle not in n.id.lower():
            continue
        if levels is not None and int(n.level) not in levels:
            continue
        if models is not None and n.model_id not in models:
            continue
        if start is not None and n.span_end < start:
            continue
        if end is not None and n.span_start > end:
            continue
        out.append(n)
    return out


def render() -> None:
    """The Memories page."""
    ctx = state.current()
    st.title("Memories")
    show_flashes()
    if ctx.engine is None:
        st.error(ctx.open_error or "the memory store is not open")
        return
    if st.radio("View", ["Tree", "Facts"], horizontal=True, key="mem_view",
                help="Tree: the Temporal Memory Tree's nodes. Facts: the facts and preferences read from them, with "
                     "their validity and what superseded them.") == "Facts":
        render_facts(ctx)
        return
    _undo_bar(ctx)
    c1, c2, c3 = st.columns([3, 2, 2])
    text = c1.text_input("Search", key="mem_q", placeholder="words in the memory, or an id")
    levels = c2.multiselect("Levels", [1, 2, 3, 4, 5], default=[1, 2, 3, 4, 5], key="mem_levels",
                            format_func=lambda v: f"L{v}")
    status = c3.selectbox("Status", list(STATUSES), key="mem_status")
    all_nodes = ctx.engine.nodes(ctx.user, status=STATUSES[status])
    if not all_nodes:
        st.info(f"No {status} memories for user `{ctx.user}`.")
        _danger_zone(ctx)
        return
    models = sorted({n.model_id for n in all_nodes})
    d1, d2 = st.columns([3, 2])
    picked_models = d1.multiselect("Written by", models, default=models, key="mem_models")
    lo = min(n.span_start for n in all_nodes).astimezone(ctx.tz).date()
    hi = max(n.span_end for n in all_nodes).astimezone(ctx.tz).date()
    dates = d2.date_input("Dates", value=(lo, hi), key=f"mem_dates_{lo}_{hi}")
    start = datetime.combine(dates[0], time.min, tzinfo=ctx.tz) if len(dates) > 0 else None
    end = datetime.combine(dates[1], time.max, tzinfo=ctx.tz) if len(dates) > 1 else None
    nodes = filter_nodes(all_nodes, text=text, levels=levels, models=picked_models, start=start, end=end)
    # by start, a container before what it contains (month, week, day, session, segment); stable otherwise
    nodes = sorted(nodes, key=lambda n: (n.span_start, -int(n.level)))
    st.caption(f"{len(nodes)} of {plural(len(all_nodes), f'{status} memory', f'{status} memories')}")
    st.dataframe(_table(nodes, ctx.tz), hide_index=True, key="mem_table",
                 column_config={"content": st.column_config.TextColumn(width="large")})
    by_id = {n.id: n for n in nodes}
    # before the widget exists in this run: drop selected ids that are no longer shown (deleted, erased, filtered)
    st.session_state[SEL_KEY] = [i for i in st.session_state.get(SEL_KEY, []) if i in by_id]
    s1, s2, s3 = st.columns([5, 2, 1], vertical_alignment="bottom")
    s1.multiselect("Selected memories", list(by_id), key=SEL_KEY,
                   format_func=lambda i: f"{by_id[i].level.label} · {' '.join(by_id[i].content.split())[:80]}")
    s2.button("Select all shown", key="mem_all", on_click=_select, args=(list(by_id),))
    s3.button("Clear", key="mem_none", on_click=_select, args=([],))
    selected = [by_id[i] for i in st.session_state[SEL_KEY]]
    if selected:
        _actions(ctx, selected)
    _danger_zone(ctx)


def _table(nodes: list[MemoryNode], tz) -> pd.DataFrame:
    return pd.DataFrame([{
        "level": n.level.label, "start": n.span_start.astimezone(tz).strftime("%Y-%m-%d %H:%M"),
        "end": n.span_end.astimezone(tz).strftime("%Y-%m-%d %H:%M"), "content": " ".join(n.content.split()),
        "model": n.model_id, "mode": n.mode, "status": n.status.value + (" · stale" if n.stale else ""), "id": n.id,
    } for n in nodes], columns=["level", "start", "end", "content", "model", "mode", "status", "id"])


def _select(ids: list[str]) -> None:
    st.session_state[SEL_KEY] = ids


def _actions(ctx: state.StudioContext, selected: list[MemoryNode]) -> None:
    ids = [n.id for n in selected]
    active = [n.id for n in selected if n.status == NodeStatus.ACTIVE]
    deleted = [n.id for n in selected if n.status == NodeStatus.DELETED]
    reconsolidating = "Re-consolidating ancestors …" + (" (the embedded model needs ~10 s per level)"
                                                         if ctx.engine.has_llm else "")
    st.markdown(f"**{len(selected)} selected**")
    busy = jobs.busy(ctx.engine)
    if busy:
        st.info(f"'{busy.title}' is running in the background; deleting, restoring, erasing and editing wait until "
                "it ends (they re-consolidate ancestors).", icon=":material/hourglass_top:")
        return
    a, b, c = st.columns(3)
    if a.button(f"Delete {len(active)} (undoable)", key="mem_soft", disabled=not active):
        with user_errors("Delete failed"), st.spinner(reconsolidating):
            ctx.engine.delete_memories(active)
            st.session_state[UNDO_KEY] = active
            flash(f"Deleted {plural(len(active), 'memory', 'memories')}; their ancestors were re-consolidated "
                  "without them.")
            st.rerun()
    if b.button(f"Restore {len(deleted)}", key="mem_restore", disabled=not deleted):
        _restore(ctx, deleted)
    with c.popover(f"Erase {len(ids)} permanently"):
        st.warning("Erased memories are gone from tables, the BM25 index, the vectors and the LLM cache. "
                   "This cannot be undone.")
        sure = st.checkbox("I understand", key="mem_erase_ok")
        if st.button("Erase", key="mem_erase", type="primary", disabled=not sure):
            with user_errors("Erase failed"), st.spinner(reconsolidating):
                ctx.engine.delete_memories(ids, hard=True)
                remove_uploads()  # an erase leaves no uploaded copy behind either
                flash(f"Erased {plural(len(ids), 'memory', 'memories')} permanently.")
                st.rerun()
    if len(selected) == 1:
        _edit(ctx, selected[0], reconsolidating)


def _edit(ctx: state.StudioContext, node: MemoryNode, busy: str) -> None:
    with st.form(f"mem_edit_{node.id}"):
        st.markdown(f"**Edit** {node.level.label} `{node.id}` (written by `{node.model_id}`, mode `{node.mode}`)")
        content = st.text_area("Content", value=node.content, height=160, key=f"mem_edit_text_{node.id}")
        if st.form_submit_button("Save edit"):
            with user_errors("Edit failed"), st.spinner(busy):
                ctx.engine.edit_memory(node.id, content)
                flash("Saved; the memory was re-embedded and its ancestors re-consolidated.")
                st.rerun()


def _restore(ctx: state.StudioContext, ids: list[str]) -> None:
    with user_errors("Undo failed"), st.spinner("Restoring and re-consolidating ancestors …"):
        for nid in ids:
            ctx.engine.restore_memory(nid)
        st.session_state.pop(UNDO_KEY, None)
        flash(f"Restored {plural(len(ids), 'memory', 'memories')}.")
        st.rerun()


def _undo_bar(ctx: state.StudioContext) -> None:
    ids = st.session_state.get(UNDO_KEY)
    if not ids:
        return
    a, b = st.columns([5, 1])
    a.info(f"{plural(len(ids), 'memory', 'memories')} deleted. They stay in the store (status deleted) until erased.")
    if b.button("Undo delete", key="mem_undo_btn", type="primary", disabled=bool(jobs.busy(ctx.engine))):
        still = {n.id for n in ctx.engine.nodes(ctx.user, ids=ids, status=NodeStatus.DELETED)}
        _restore(ctx, [i for i in ids if i in still])


_ERASED = {"turns": ("turn", "turns"), "nodes": ("memory", "memories"), "memory_items": ("fact", "facts"),
           "recall_traces": ("recall trace", "recall traces")}


def erase_summary(user: str, counts: dict[str, float]) -> str:
    """``"Erased user sam: 4 turns, 7 memories, 2 facts, 3 recall traces and 31 other rows (LLM cache, audit …);
    the file was rewritten, so no erased text remains in it."`` (a trial got a raw dump of table counts)."""
    named = [plural(int(counts[k]), one, many) for k, (one, many) in _ERASED.items() if counts.get(k)]
    other = sum(int(v) for k, v in counts.items() if k not in _ERASED and not k.startswith("file_"))
    parts = named + ([f"{other} other rows (LLM cache, call log, audit entries redacted …)"] if other else [])
    return (f"Erased user {user}: " + (", ".join(parts) or "nothing stored")
            + "; the file was rewritten, so no erased text remains in it.")


def _danger_zone(ctx: state.StudioContext) -> None:
    if ctx.user not in ctx.engine.users():  # e.g. ?user=nobody: nothing stored, nothing to erase
        return
    with st.expander("Erase a whole user"):
        st.warning(f"Removes every turn, memory, vector, trace and LLM-cache entry of `{ctx.user}`.")
        typed = st.text_input("Type the user id to confirm", key="mem_erase_user_typed")
        if st.button("Erase user", key="mem_erase_user",
                     disabled=typed.strip() != ctx.user or bool(jobs.busy(ctx.engine))):
            with user_errors("Erasing the user failed"):
                erased = ctx.user
                counts = ctx.engine.erase_user(erased)
                remove_uploads()
                st.session_state.pop(UNDO_KEY, None)
                flash(erase_summary(erased, counts))
                left = ctx.engine.users()  # the erased user is no longer offered in the sidebar
                state.set_user(left[0] if left else state.DEFAULT_USER)
                chat.reset_event_time()
                st.rerun()
