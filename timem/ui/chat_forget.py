"""The Chat page's "forget that …": a preview of what would go, then Confirm or Cancel, and a log of it.

A new-user trial typed "Forget that I live in Porto." in the chat: it was deleted at once, with no preview, and the
one notice vanished at the next message, so the history showed no forgetting ever happened. Now a message that
asks to forget (:func:`timem.memory.forget.forget_request`) is neither stored nor answered: the page shows what
"Forget by text" would soft-delete (:meth:`MemoryEngine.forget` without ``confirm``), one line per item and
segment, and acts only on **Confirm**. What was forgotten or kept stays listed under the chat for this browser
session (the audit log keeps it for good). Each line is stamped with the chat's event time, as the turns are (a
trial saw wall-clock time on a note in a chat on a simulated clock).
"""

from __future__ import annotations

from datetime import datetime

import streamlit as st

from timem.memory.forget import ForgetPreview, forget_request
from timem.ui import state
from timem.ui.feedback import user_errors

PENDING_KEY = "chat_forget_pending"  #: {"user": user id, "text": what to forget} awaiting Confirm or Cancel
LOG_KEY = "chat_forget_log"  #: user id -> lines saying what was forgotten or kept


def intercept(ctx: state.StudioContext, text: str) -> bool:
    """Whether ``text`` asks to forget something; if so it becomes the pending request (nothing is stored)."""
    what = forget_request(text)
    if what is None:
        return False
    st.session_state[PENDING_KEY] = {"user": ctx.user, "text": what}
    return True


def nothing_matched(text: str, plan: ForgetPreview) -> str:
    """What the chat says when nothing matches ``text``: as ``timem forget`` and the service's ``hint``, why (the key
    words no memory holds, or whose lines hold them) and what was searched (:meth:`ForgetPreview.why`), then where
    the studio lists what is remembered (the CLI names ``timem memories list``, the service its routes). A trial saw
    only "Nothing in memory matches", with no word on what to try."""
    return (f"**Nothing in memory matches “{text}”.** Nothing was forgotten: {plan.why()} See what is remembered on "
            "the Memories page: **Facts** for the facts (with **Forget by text**) and **Tree** at level L1 for the "
            "conversation segments.")


def _log(ctx: state.StudioContext, at: datetime, line: str) -> None:
    """Add ``line`` to the current user's log, stamped with ``at`` (the chat's event time) as a turn is."""
    stamp = f"{at.astimezone(ctx.tz):%a %d %b %Y %H:%M}"
    st.session_state.setdefault(LOG_KEY, {}).setdefault(ctx.user, []).append(f"{stamp} · {line}")


def render(ctx: state.StudioContext, at: datetime) -> None:
    """The log of this browser session's forget requests, then the pending one's preview with Confirm / Cancel;
    ``at`` (UTC-aware) is the chat's event time (now, or its simulated clock), which stamps a new line of the log."""
    for line in st.session_state.get(LOG_KEY, {}).get(ctx.user, []):
        st.caption(line)
    pending = st.session_state.get(PENDING_KEY)
    if not pending or pending["user"] != ctx.user:
        return
    text = pending["text"]
    with st.container(border=True, key="chat_forget_box"), user_errors("Preview failed"):
        plan = ctx.engine.forget(ctx.user, text)
        if plan.empty:
            st.markdown(nothing_matched(text, plan))
            if st.button("OK", key="chat_forget_ok"):
                st.session_state.pop(PENDING_KEY, None)
                _log(ctx, at, f"you asked to forget “{text}”: nothing matched")
                st.rerun()
            return
        st.markdown(f"**Forget {len(plan.items)} fact(s) and {len(plan.segments)} conversation segment(s) for "
                    f"“{text}”?** Each segment goes whole, with any other fact read only from it; it can be "
                    "restored from the Memories page."
                    + (f" **{len(plan.reopened)} older fact(s) hold again**, since what replaced them goes."
                       if plan.reopened else ""))
        st.markdown("\n".join(f"- {line}" for line in plan.describe().splitlines()))
        a, b = st.columns(2)
        if a.button("Confirm: forget these", key="chat_forget_yes", type="primary"):
            # the request is settled before it runs: a message sent right after Confirm starts a new run, which
            # must not preview it again (a new-user trial saw "Nothing in memory matches" for what was just gone)
            st.session_state.pop(PENDING_KEY, None)
            done = ctx.engine.forget(ctx.user, text, confirm=True, actor="studio-chat")
            _log(ctx, at, f"you asked to forget “{text}”: forgot {len(done.items)} fact(s) and {len(done.segments)} "
                      "segment(s) (the segments can be restored from the Memories page; the facts stay forgotten)")
            st.rerun()
        if b.button("Cancel", key="chat_forget_no"):
            st.session_state.pop(PENDING_KEY, None)
            _log(ctx, at, f"you asked to forget “{text}”: cancelled, nothing was forgotten")
            st.rerun()
