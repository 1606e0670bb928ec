"""TiMem Studio: the ``st.navigation`` router and the shared sidebar (run: ``timem studio``).

The page scripts are in ``views/`` beside this file (inside the package, so that an installed wheel
carries them); the repository's top-level ``app.py`` runs this file.

Settings are resolved once per server process (:func:`timem.ui.state.base_config`); the engine is
opened once per DuckDB file and shared by the pages through :func:`timem.ui.state.current`.
"""

from pathlib import Path

import streamlit as st

from timem.ui import router, sidebar, state

st.set_page_config(page_title="TiMem Studio", page_icon=":material/account_tree:", layout="wide")
st.markdown("<style>[data-testid='stMainBlockContainer']{padding-top:2.5rem}</style>", unsafe_allow_html=True)

VIEWS = Path(__file__).resolve().parent / "views"
PAGES = [
    st.Page(VIEWS / "chat.py", title="Chat", icon=":material/chat:", default=True),
    st.Page(VIEWS / "timeline.py", title="Timeline", icon=":material/account_tree:"),
    st.Page(VIEWS / "recall_inspector.py", title="Recall inspector", icon=":material/manage_search:"),
    st.Page(VIEWS / "manifold.py", title="Manifold", icon=":material/scatter_plot:"),
    st.Page(VIEWS / "memories.py", title="Memories", icon=":material/inventory_2:"),
]

page = st.navigation(PAGES)
ctx = state.open_context()
with ctx.lock:  # one DuckDB connection per engine: one script run at a time touches it
    sidebar.render(ctx)
    with router.routing():
        page.run()
