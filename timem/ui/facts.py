"""The Memories page's "Facts" view: the memory items (:mod:`timem.memory`) with their validity interval,
sources, supersession chain and decay weight; filters by kind, subject and status; bulk forget / pin /
unpin; "forget …" by text with a preview of what goes."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import streamlit as st

from timem.item_holding import as_held
from timem.models import ITEM_KINDS, MemoryItem
from timem.recall.items import decay_weight
from timem.ui import state
from timem.ui.feedback import flash, user_errors

SEL_KEY = "facts_selected"
PENDING_KEY = "facts_forget_pending"  #: the item ids of a "Forget N…" awaiting Confirm
STATUSES = {"active": "active", "forgotten": "deleted", "any": None}


#: the "superseded by" cell of a value whose successor was forgotten: it holds again
FORGOTTEN_SUCCESSOR = "a value since forgotten: this holds again"


def facts_table(items: list[MemoryItem], tz, at: datetime, half_life: float | None,
                known: list[MemoryItem] | None = None) -> pd.DataFrame:
    """One row per item: kind, subject, attribute, value, validity (local days), sources, what superseded it (its
    value, looked up in ``known``, every item of the user, so that a filtered-out successor still shows as a value;
    a successor that is gone entirely shows as "(forgotten)"), its decay weight at ``at`` (``None`` without a
    half-life), pinned, status, id."""
    by_id = {i.id: i for i in (known if known is not None else items)}
    held = {i.id: i for i in as_held(list(by_id.values()))}  # a reopened value ends where the next one begins

    def day(dt):
        return dt.astimezone(tz).date().isoformat() if dt else "now"

    def reopened(i: MemoryItem) -> bool:
        """Its successor was forgotten: recall treats it as holding again (:func:`timem.recall.items._as_of`),
        and so does this table (a new-user trial saw "green tea … – 2024-06-18, superseded by matcha" here while
        the inspector showed green tea valid now, matcha having been forgotten)."""
        nxt = by_id.get(i.superseded_by) if i.superseded_by else None
        return i.superseded_by is not None and (nxt is None or nxt.status == "deleted")

    def until(i: MemoryItem) -> datetime | None:
        """Its end; a reopened value's as held (open, or at the start of the next value that stays)."""
        return held.get(i.id, i).valid_to if reopened(i) else i.valid_to

    def successor(i: MemoryItem) -> str:
        if not i.superseded_by:
            return ""
        nxt = by_id.get(i.superseded_by)
        # a forgotten value is not quoted again here (a trial saw "Madrid (forgotten …)" in the active facts)
        if nxt is None or nxt.status == "deleted":
            return FORGOTTEN_SUCCESSOR
        # another attribute's value names it ("dislikes jazz" superseded by "likes jazz", not by "jazz": a trial)
        return nxt.value if nxt.attribute == i.attribute else f"{nxt.attribute} {nxt.value}"

    return pd.DataFrame([{
        "kind": i.kind, "subject": i.subject, "attribute": i.attribute, "value": i.value,
        "valid": f"{day(i.valid_from)} – {day(until(i))}", "sources": len(i.source_ids),
        "superseded by": successor(i),
        "decay": round(decay_weight(i, at, half_life), 3) if half_life else None,
        "pinned": i.pinned, "status": "forgotten" if i.status == "deleted" else i.status, "id": i.id,
    } for i in items], columns=["kind", "subject", "attribute", "value", "valid", "sources", "superseded by", "decay",
                                "pinned", "status", "id"])


def render_facts(ctx: state.StudioContext) -> None:
    """The Facts view of the Memories page."""
    eng = ctx.engine
    everything = eng.memory_items(ctx.user, status=None, reopen=False)  # a reopened row is marked below
    if not everything:
        st.info(f"No facts or preferences for user `{ctx.user}` yet: they are read from the user's own statements "
                "(\"I live in …\", \"I switched from … to …\") when memories are written.")
        return
    c1, c2, c3 = st.columns([3, 3, 2])
    kinds = [k for k in ITEM_KINDS if any(i.kind == k for i in everything)]
    picked_kinds = c1.multiselect("Kinds", kinds, default=kinds, key="facts_kinds")
    subjects = sorted({i.subject for i in everything})
    picked_subjects = c2.multiselect("Subjects", subjects, default=subjects, key="facts_subjects")
    status = c3.selectbox("Status", list(STATUSES), key="facts_status")
    items = [i for i in everything if i.kind in picked_kinds and i.subject in picked_subjects
             and (STATUSES[status] is None or i.status == STATUSES[status])]
    at = eng.default_question_time(ctx.user) or datetime.now(UTC)
    half = eng.config.memory.memory_decay_half_life_days or eng.config.memory.memory_chat_half_life_days
    decay_note = f" · decay weight as of {at.astimezone(ctx.tz):%Y-%m-%d} (half-life {half} days)" if half else ""
    st.caption(f"{len(items)} of {len(everything)} items · validity in local days{decay_note}")
    st.dataframe(facts_table(items, ctx.tz, at, half, known=everything), hide_index=True, key="facts_table")
    by_id = {i.id: i for i in items}
    st.session_state[SEL_KEY] = [i for i in st.session_state.get(SEL_KEY, []) if i in by_id]
    st.multiselect("Selected facts", list(by_id), key=SEL_KEY, format_func=lambda i: by_id[i].label())
    selected = [by_id[i] for i in st.session_state[SEL_KEY]]
    if selected:
        a, b, c = st.columns(3)
        active = [i.id for i in selected if i.status == "active"]
        if a.button(f"Forget {len(active)}…", key="facts_forget", disabled=not active,
                    help="Shows what goes first: the items and the conversation segments they were read from."):
            st.session_state[PENDING_KEY] = active
        if b.button("Pin", key="facts_pin"):
            with user_errors("Pin failed"):
                for i in selected:
                    eng.pin_item(i.id, True, actor="studio")
                flash(f"Pinned {len(selected)} item(s) into the chat's system prompt.")
                st.rerun()
        if c.button("Unpin", key="facts_unpin"):
            with user_errors("Unpin failed"):
                for i in selected:
                    eng.pin_item(i.id, False, actor="studio")
                flash(f"Unpinned {len(selected)} item(s).")
                st.rerun()
    _confirm_forget(ctx)
    _forget_by_text(ctx)


def _confirm_forget(ctx: state.StudioContext) -> None:
    """The preview of "Forget N…": what goes (the items, their source segments, the items read only from those),
    then Confirm or Cancel."""
    pending = st.session_state.get(PENDING_KEY)
    if not pending:
        return
    with st.container(border=True), user_errors("Preview failed"):
        plan = ctx.engine.forget(ctx.user, item_ids=pending)
        st.markdown(f"**Forget {len(plan.items)} item(s) and {len(plan.segments)} conversation segment(s)?** "
                    "The segments go too, so that recall cannot find the fact in the conversation "
                    "(each segment can be restored from the Memories list).")
        st.code(plan.describe(), language=None)
        a, b = st.columns(2)
        if a.button("Confirm: forget these", key="facts_forget_yes", type="primary"):
            ctx.engine.forget(ctx.user, item_ids=pending, confirm=True, actor="studio")
            st.session_state.pop(PENDING_KEY, None)
            flash(f"Forgot {len(plan.items)} item(s) and {len(plan.segments)} segment(s).")
            st.rerun()
        if b.button("Cancel", key="facts_forget_no"):
            st.session_state.pop(PENDING_KEY, None)
            st.rerun()


def _forget_by_text(ctx: state.StudioContext) -> None:
    # open while it holds text: Enter in the box reruns the page, and a closed expander hid the preview
    with st.expander("Forget by text", expanded=bool(st.session_state.get("facts_forget_text", "").strip())):
        text = st.text_input("What to forget", key="facts_forget_text", placeholder="I work at Blue Harbor")
        if not text.strip():
            return
        with user_errors("Preview failed"):
            plan = ctx.engine.forget(ctx.user, text)
            st.code(plan.describe(), language=None)
            if not plan.empty and st.button("Forget these (undoable per segment)", key="facts_forget_confirm"):
                ctx.engine.forget(ctx.user, text, confirm=True, actor="studio")
                flash(f"Forgot {len(plan.items)} item(s) and {len(plan.segments)} segment(s).")
                st.rerun()
