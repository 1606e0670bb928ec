"""The Timeline page's "Segment tree (SegTreeMem)" view: the selected user's segment tree (:mod:`timem.tree.segtree`)
drawn as bars over utterance positions, one lane per height (:mod:`timem.viz.segtree`)."""

from __future__ import annotations

import streamlit as st

from timem.ui import state
from timem.viz import segtree as sv


def render_segtree(ctx: state.StudioContext) -> None:
    """Draw the user's segment tree, building or extending it first if it is behind the L1 memories."""
    cfg = ctx.config
    engine = ctx.local
    if engine is None:  # the Timeline page says why (state.local_only)
        return
    nodes, report = engine.segment_tree(ctx.user)
    if report is not None:
        st.caption(f"segment tree {'built' if report.rebuilt else 'extended'}: {report.added} utterance(s) added")
    leaves = [n.id for n in nodes if n.is_leaf]
    if not leaves:
        st.info(f"User `{ctx.user}` has no L1 memories yet, so no segment tree.")
        return
    texts = {n.id: n.content for n in engine.nodes(ctx.user, 1, ids=leaves)}
    df = sv.segtree_frame(nodes, ctx.tz, texts, engine.segment_topics(ctx.user))
    top = int(df["height"].max())
    segments = df[df["height"] == 1]
    st.caption(f"Segment tree (SegTreeMem): {len(leaves)} utterances, {len(segments)} segments "
               f"(mean {segments['n_leaves'].mean():.1f} utterances), height {top}, "
               f"θ = {cfg.recall.segtree_threshold}, at most {cfg.recall.segtree_max_children} children per node · "
               "x = utterance position in conversation order")
    st.plotly_chart(sv.segtree_figure(df), key="tl_segtree_chart", width="stretch")
    st.dataframe(df[["id", "height", "first_seq", "last_seq", "n_leaves", "start", "end", "preview"]],
                 hide_index=True, key="tl_segtree_table")
