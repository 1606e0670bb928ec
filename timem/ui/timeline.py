"""Timeline page: the Temporal Memory Tree on an event-time axis, with node details and a growth replay."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from typing import Any

import streamlit as st

from timem.models import MemoryNode
from timem.tree.order import conversation_key
from timem.ui import state
from timem.ui.feedback import plural, show_flashes
from timem.viz import timeline as tl

NODE_KEY = "tl_node"


def render() -> None:
    """The Timeline page."""
    ctx = state.current()
    st.title("Timeline")
    show_flashes()
    if ctx.engine is None:
        st.error(ctx.open_error or "the memory store is not open")
        return
    if st.toggle("Segment tree (SegTreeMem)", key="tl_segtree",
                 help="SegTreeMem's own tree over the utterances (the recall_index = \"segtree\" index)"):
        from timem.ui.segtree_view import render_segtree

        if state.local_only(ctx, "The segment tree", "stop the service and run `timem studio --db FILE` on its file "
                                                     "(or `timem segtree build --user U --db FILE`)."):
            render_segtree(ctx)
        return
    nodes = ctx.engine.nodes(ctx.user)
    if not nodes:
        st.info(f"User `{ctx.user}` has no memories yet. Chat, or import a conversation from the sidebar.")
        return
    df = tl.timeline_frame(nodes, ctx.tz)
    shown, until = _filters(df)
    st.caption(f"{len(shown)} of {plural(len(df), 'memory', 'memories')} · times in {ctx.config.time.timezone} · "
               "click a bar (or pick below) to inspect it")
    fig = tl.timeline_figure(shown, links=st.session_state.get("tl_links", True),
                             selected=st.session_state.get(NODE_KEY))
    event = st.plotly_chart(fig, on_select="rerun", selection_mode=("points",), key="tl_chart",
                            width="stretch")
    picked = tl.selected_node_id(event)
    if picked and picked != st.session_state.get("_tl_last_pick"):
        st.session_state["_tl_last_pick"] = picked
        st.session_state[NODE_KEY] = picked
    by_id = {n.id: n for n in nodes}
    ids = list(shown.sort_values(["level", "start", "order"], ascending=[False, True, True], kind="stable")["id"])
    if not ids:
        st.session_state.pop(NODE_KEY, None)
        return
    if st.session_state.get(NODE_KEY) not in ids:  # another user, or filtered out: set, not dropped, so that the
        st.session_state[NODE_KEY] = ids[0]  # browser's box shows it too (it kept the other user's memory)
    st.selectbox("Inspect a memory", ids, key=NODE_KEY, format_func=lambda i: _label(by_id[i], ctx.tz))
    _details(ctx, by_id[st.session_state[NODE_KEY]], by_id, set(df.loc[df["appears"] <= until, "id"]))


def _filters(df) -> tuple[Any, datetime]:
    """The rows that pass the filters, and the replay date (naive wall-clock time in the user's zone)."""
    lo, hi = df["start"].min().to_pydatetime(), df["end"].max().to_pydatetime()
    c1, c2, c3 = st.columns([2, 2, 1])
    levels = c1.multiselect("Levels", [1, 2, 3, 4, 5], default=[1, 2, 3, 4, 5], key="tl_levels",
                            format_func=lambda v: tl.LANES[v])
    dates = c2.date_input("Dates", value=(lo.date(), hi.date()), min_value=lo.date(), max_value=hi.date(),
                          key=f"tl_dates_{lo:%Y%m%d}_{hi:%Y%m%d}")  # new data range -> fresh widget
    c3.toggle("Parent links", value=True, key="tl_links")
    start = datetime.combine(dates[0], time.min) if len(dates) > 0 else None
    end = datetime.combine(dates[1], time.max) if len(dates) > 1 else None
    first = df["appears"].min().to_pydatetime().replace(second=0, microsecond=0)
    last = df["appears"].max().to_pydatetime().replace(second=0, microsecond=0) + timedelta(minutes=1)
    until = last
    if last > first:
        until = st.slider("Replay growth: the tree as it stood at event time …", min_value=first, max_value=last,
                          value=last, step=_replay_step(last - first), format="YYYY-MM-DD HH:mm",
                          key=f"tl_until_{first:%Y%m%d%H%M}_{last:%Y%m%d%H%M}")
    return tl.filter_frame(df, levels=levels, start=start, end=end, until=until), until


def _replay_step(span: timedelta) -> timedelta:
    """The replay slider's step: an hour, or a minute for a history shorter than a day (a new user's first chat:
    with hourly steps over 17:12-17:18 the thumb sat at the start while the label said 17:18)."""
    return timedelta(hours=1) if span >= timedelta(days=1) else timedelta(minutes=1)


def _label(n: MemoryNode, tz) -> str:
    text = " ".join(n.content.split())
    return f"{n.level.label} · {n.span_start.astimezone(tz):%Y-%m-%d %H:%M} · {text[:70]}"


def _details(ctx: state.StudioContext, node: MemoryNode, by_id: dict[str, MemoryNode], existing: set[str]) -> None:
    """The inspected memory. Its parent and children are named only when ``existing`` (written by the replay
    date): the replay must not name a memory that is written later (issue 27 #10)."""
    tz = ctx.tz
    st.subheader(f"{node.level.label} · {node.window_key}")
    c1, c2 = st.columns([3, 2])
    with c1:
        st.markdown(node.content)
    with c2:
        st.markdown(
            f"**Span** {node.span_start.astimezone(tz):%Y-%m-%d %H:%M} → "
            f"{node.span_end.astimezone(tz):%Y-%m-%d %H:%M}  \n"
            f"**Written by** `{node.model_id}` · mode `{node.mode}` · prompt `{node.prompt_version}`  \n"
            f"**Created** {node.created_at.astimezone(tz):%Y-%m-%d %H:%M} · **status** {node.status.value}"
            + (" · stale" if node.stale else "") + f"  \n**Id** `{node.id}`"
            + (f"  \n**Session** `{node.session_id}`" if node.session_id else ""))
        parent = next((p for p in by_id.values() if node.id in p.child_ids), None)
        if parent is not None and parent.id in existing:
            st.button(f"↑ Parent: {parent.level.label}", key="tl_up", on_click=_select, args=(parent.id,))
        elif parent is not None:
            st.caption(f"Its {parent.level.label} memory is not written yet at this replay date.")
    children = [by_id[c] for c in node.child_ids if c in by_id and c in existing]
    if children:
        st.markdown(f"**Children** ({len(children)})")
        st.dataframe([{"level": c.level.label, "start": c.span_start.astimezone(tz).strftime("%Y-%m-%d %H:%M"),
                       "model": c.model_id, "mode": c.mode, "content": " ".join(c.content.split())[:160],
                       "id": c.id} for c in sorted(children, key=conversation_key)], hide_index=True, key="tl_children")
        pick = st.selectbox("Go to child", [c.id for c in children], index=None, key="tl_child_pick",
                            format_func=lambda i: _label(by_id[i], tz), placeholder="choose a child …")
        if pick:
            st.button("Open child", key="tl_child_go", on_click=_select, args=(pick,))
    turns = _source_turns(ctx, node, by_id)
    if turns:
        with st.expander(f"Source turns ({len(turns)})", expanded=int(node.level) == 1):
            for t in turns:
                st.markdown(f"`{t.event_time.astimezone(tz):%Y-%m-%d %H:%M}` **{t.speaker}**: {t.text}")


def _select(node_id: str) -> None:
    st.session_state[NODE_KEY] = node_id
    st.session_state.pop("tl_child_pick", None)


def _source_turns(ctx: state.StudioContext, node: MemoryNode, by_id: dict[str, MemoryNode], limit: int = 200):
    """The turns under ``node``: its own for L1, else those of its descendant segments (first ``limit``)."""
    ids: list[str] = []
    stack = [node]
    while stack and len(ids) < limit:
        n = stack.pop(0)
        ids += n.source_turn_ids
        stack += [by_id[c] for c in n.child_ids if c in by_id]
    return ctx.engine.turns(node.user_id, ids=ids[:limit]) if ids else []
