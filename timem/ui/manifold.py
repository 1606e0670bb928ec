"""Manifold page: UMAP of node embeddings by level / user / speaker, per-level dispersion and cluster quality."""

from __future__ import annotations

import numpy as np
import streamlit as st

from timem.errors import TimemError
from timem.ui import state
from timem.ui.feedback import plural, show_flashes
from timem.viz import manifold as mf

LABEL_NAMES = {"user_id": "users", "session_id": "sessions", "month": "months"}


@st.cache_data(show_spinner=False, max_entries=16)
def _projection(key: tuple[str, ...], X: np.ndarray, n_neighbors: int, min_dist: float) -> np.ndarray:
    """Cached UMAP (keyed by the node ids and parameters; X is hashed too, so edits invalidate it)."""
    return mf.project_umap(X, n_neighbors=n_neighbors, min_dist=min_dist)


def render() -> None:
    """The Manifold page."""
    ctx = state.current()
    st.title("Manifold")
    show_flashes()
    if ctx.engine is None:
        st.error(ctx.open_error or "the memory store is not open")
        return
    engine = ctx.local
    if engine is None:
        state.local_only(ctx, "The manifold (UMAP of the stored vectors)",
                         "stop the service and run `timem studio --db FILE` on its file.")
        return
    users = engine.users()
    if not users:
        st.info("No memories yet. Import a conversation from the sidebar.")
        return
    c1, c2, c3, c4 = st.columns([3, 2, 2, 2])
    default_users = [ctx.user] if ctx.user in users else users[:1]
    chosen = c1.multiselect("Users", users, default=default_users, key="mf_users",
                            help="Pick two or more users to measure how well their memories separate.")
    levels = c2.multiselect("Levels", [1, 2, 3, 4, 5], default=[1, 2, 3, 4, 5], key="mf_levels",
                            format_func=lambda v: f"L{v}")
    colour = c3.selectbox("Colour by", list(mf.COLOUR_BY), key="mf_colour")
    # one user: months, which group every level but L5 (one profile per month); sessions left L2-L5 without a
    # number (an L2 is its session's only memory, L3-L5 have no session): issue 27 #10
    label = c4.selectbox("Groups for the metrics", list(mf.LABELS), key="mf_label",
                         index=0 if len(chosen) > 1 else mf.LABELS.index("month"),
                         format_func=lambda v: LABEL_NAMES[v])
    with st.expander("UMAP and metric settings"):
        a, b, c = st.columns(3)
        n_neighbors = a.slider("n_neighbors", 2, 50, 15, key="mf_nn")
        min_dist = b.slider("min_dist", 0.0, 0.99, 0.1, 0.01, key="mf_md")
        space = c.radio("Metrics computed in", ["embedding space (384-d)", "UMAP 2-D"], key="mf_space")
    if not chosen or not levels:
        st.info("Pick at least one user and one level.")
        return
    X, meta = mf.node_table(engine, chosen, ctx.tz, levels)
    if len(X) == 0:
        st.info("These users have no memories at these levels.")
        return
    with st.spinner(f"UMAP of {plural(len(X), 'memory', 'memories')} … (the first projection in a process compiles "
                    "numba, ~20 s)"):
        coords = _projection(tuple(meta["id"]), X, n_neighbors, min_dist)
    if len(X) < 4:
        st.caption("Fewer than 4 memories: showing the first two principal components instead of UMAP.")
    fig = mf.manifold_figure(coords, meta, colour, height=460)
    st.plotly_chart(fig, key="mf_chart", width="stretch")
    points = coords if space == "UMAP 2-D" else X
    metrics = mf.level_metrics(points, meta, label)
    st.markdown(f"**Per level, {LABEL_NAMES[label]} as groups**")
    st.caption("Dispersion: mean Euclidean distance to the level's centroid (lower = more compact). "
               "Silhouette: in [-1, 1], higher = groups better separated. Davies–Bouldin: ≥ 0, lower = better "
               f"separated. Computed in the {space}. A dash: not computable at that level (the note says why).")
    st.dataframe(mf.shown_metrics(metrics), hide_index=True, key="mf_metrics")  # "—" for a score a level lacks
    _exports(fig, coords, meta, metrics)


def _exports(fig, coords: np.ndarray, meta, metrics) -> None:
    st.markdown("**Export**")
    points = meta.assign(umap_x=coords[:, 0], umap_y=coords[:, 1])
    a, b, c, d = st.columns(4)
    a.download_button("Figure (HTML)", data=lambda: mf.figure_html(fig), file_name="timem_manifold.html",
                      mime="text/html", key="mf_dl_html", on_click="ignore")
    b.download_button("Points (CSV)", data=mf.frame_csv(points), file_name="timem_manifold_points.csv",
                      mime="text/csv", key="mf_dl_points", on_click="ignore")
    c.download_button("Metrics (CSV)", data=mf.frame_csv(metrics), file_name="timem_manifold_metrics.csv",
                      mime="text/csv", key="mf_dl_metrics", on_click="ignore")
    if d.button("Prepare PNG", key="mf_png"):
        try:
            png = mf.figure_png(fig)
        except TimemError as exc:
            st.warning(str(exc))
        else:
            d.download_button("Figure (PNG)", data=png, file_name="timem_manifold.png", mime="image/png",
                              key="mf_dl_png", on_click="ignore")
