"""TiMem Studio: the ``st.navigation`` router and the shared sidebar (run: ``streamlit run app.py``).

Settings are resolved once per server process (:func:`timem.ui.state.base_config`); the engine is
opened once per DuckDB file and shared by the pages through :func:`timem.ui.state.current`.
"""

import streamlit as st

from timem.ui import sidebar, state

st.set_page_config(page_title="TiMem Studio", page_icon="🌳", layout="wide")

PAGES = [
    st.Page("pages/chat.py", title="Chat", icon="💬", default=True),
    st.Page("pages/timeline.py", title="Timeline", icon="🌳"),
    st.Page("pages/recall_inspector.py", title="Recall inspector", icon="🔎"),
    st.Page("pages/manifold.py", title="Manifold", icon="🗺️"),
    st.Page("pages/memories.py", title="Memories", icon="🗂️"),
]

page = st.navigation(PAGES)
ctx = state.open_context()
with ctx.lock:  # one DuckDB connection per engine: one script run at a time touches it
    sidebar.render(ctx)
    page.run()
