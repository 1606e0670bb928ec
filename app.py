"""TiMem Studio: the ``st.navigation`` router and the shared sidebar (run: ``streamlit run app.py``).

Settings are resolved once per server process (:func:`timem.ui.state.base_config`); the engine is
opened once per DuckDB file and shared by the pages through :func:`timem.ui.state.current`.
"""

import streamlit as st

from timem.ui import router, sidebar, state

st.set_page_config(page_title="TiMem Studio", page_icon=":material/account_tree:", layout="wide")
st.markdown("<style>[data-testid='stMainBlockContainer']{padding-top:2.5rem}</style>", unsafe_allow_html=True)

PAGES = [
    st.Page("pages/chat.py", title="Chat", icon=":material/chat:", default=True),
    st.Page("pages/timeline.py", title="Timeline", icon=":material/account_tree:"),
    st.Page("pages/recall_inspector.py", title="Recall inspector", icon=":material/manage_search:"),
    st.Page("pages/manifold.py", title="Manifold", icon=":material/scatter_plot:"),
    st.Page("pages/memories.py", title="Memories", icon=":material/inventory_2:"),
]

page = st.navigation(PAGES)
ctx = state.open_context()
with ctx.lock:  # one DuckDB connection per engine: one script run at a time touches it
    sidebar.render(ctx)
    with router.routing():
        page.run()
