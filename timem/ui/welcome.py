"""The studio's first page for a newcomer: on a file with no memories, the Chat page offers the bundled demo in one
click (imported by the sidebar, :data:`DEMO_REQUEST`) and says in one line what each page is for."""

from __future__ import annotations

import streamlit as st

from timem.ui import state

#: session-state key: the welcome's button asks the sidebar (which runs first on the next run) to import the demo
DEMO_REQUEST = "welcome_import_demo"
#: one line per page, in the navigation's order
PAGES = {
    "Chat": "talk as the selected user; each answer shows the memories it used (its recall trace).",
    "Timeline": "the Temporal Memory Tree over time: segments, sessions, days, weeks and profiles with their spans.",
    "Recall inspector": "ask a question and see every recall step; compare two configurations side by side.",
    "Manifold": "the memories' embeddings in 2-D (UMAP), by level, session or speaker.",
    "Memories": "read, edit, forget or erase memories and the facts and preferences read from them.",
}


def render(ctx: state.StudioContext) -> bool:
    """Draw the welcome when the studio's own file holds no user yet; returns whether it did."""
    if ctx.local is None or ctx.engine is None or ctx.engine.users():
        return False
    with st.container(border=True):
        st.markdown("**New here? Load the bundled demo.** Mia talks to an assistant in 12 sessions from April to "
                    "June 2024: she moves to Lisbon, switches from coffee to green tea, trades running for "
                    "swimming. The import takes about half a minute with the default settings (the memories are "
                    "selected verbatim, no LLM call); then ask e.g. *Which city do I live in now?*")
        if st.button("Load the demo", key="welcome_demo", type="primary", icon=":material/download:"):
            st.session_state[DEMO_REQUEST] = True
            st.rerun()
        st.caption("Or import your own conversation from the sidebar (LoCoMo, LongMemEval or JSONL), or just type "
                   "below to start a memory of your own.")
        st.markdown("\n".join(f"- **{page}**: {line}" for page, line in PAGES.items()))
    return True
