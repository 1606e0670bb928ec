"""Data prep and the plotly figure for the studio's Timeline page (no streamlit here).

The Temporal Memory Tree on an event-time axis: one lane per level (L1 segment at the bottom, L5
profile at the top), one bar per node over its span, grey lines from each child to its parent.

Time rule: nodes carry UTC-aware spans; the figure shows **wall-clock time in the user's zone**
(``Config.time.tz``), as naive datetimes, because plotly has no notion of zones. Filters given as
aware datetimes are compared in UTC.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pandas as pd
import plotly.graph_objects as go

from timem.models import Level, MemoryNode
from timem.tree.order import conversation_key

#: lane label per level, bottom (L1) to top (L5)
LANES: dict[int, str] = {int(lv): lv.label for lv in Level}
#: one colour per level (colour-blind friendly, Okabe–Ito)
LEVEL_COLOURS: dict[int, str] = {1: "#0072B2", 2: "#009E73", 3: "#E69F00", 4: "#CC79A7", 5: "#D55E00"}

COLUMNS = ["id", "level", "lane", "start", "end", "appears", "model_id", "mode", "window_key", "session_id",
           "n_children", "parent_id", "preview", "content", "status", "stale", "order"]


def _local(dt: datetime, tz: ZoneInfo) -> datetime:
    """UTC-aware -> naive wall-clock time in ``tz``."""
    return dt.astimezone(tz).replace(tzinfo=None)


def _preview(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def parent_map(nodes: Iterable[MemoryNode]) -> dict[str, str]:
    """child id -> parent id, from the parents' ``child_ids`` (only among the given nodes)."""
    nodes = list(nodes)
    present = {n.id for n in nodes}
    return {c: n.id for n in nodes for c in n.child_ids if c in present}


def timeline_frame(nodes: Sequence[MemoryNode], tz: ZoneInfo) -> pd.DataFrame:
    """One row per node with the columns in :data:`COLUMNS`.

    ``start`` / ``end`` are the span as naive wall-clock time in ``tz``; ``appears`` is the event
    time at which the node could first exist (its span end: an L1 segment is written when its
    exchange is complete, a parent when its window closes), also naive local time; ``parent_id``
    is the parent among ``nodes`` (missing — ``None``/``NaN`` — if absent, e.g. an open window);
    ``order`` is the node's position in conversation order (:func:`timem.tree.order.conversation_key`:
    at equal times, the turn sequence), and the rows come in that order.
    """
    nodes = sorted(nodes, key=conversation_key)
    parents = parent_map(nodes)
    rows = [{
        "id": n.id, "level": int(n.level), "lane": LANES[int(n.level)],
        "start": _local(n.span_start, tz), "end": _local(n.span_end, tz), "appears": _local(n.span_end, tz),
        "model_id": n.model_id, "mode": n.mode, "window_key": n.window_key, "session_id": n.session_id,
        "n_children": len(n.child_ids), "parent_id": parents.get(n.id), "preview": _preview(n.content),
        "content": n.content, "status": n.status.value, "stale": n.stale, "order": i,
    } for i, n in enumerate(nodes)]
    return pd.DataFrame(rows, columns=COLUMNS)


def filter_frame(df: pd.DataFrame, *, levels: Iterable[int] | None = None, start: datetime | None = None,
                 end: datetime | None = None, until: datetime | None = None) -> pd.DataFrame:
    """Rows of ``df`` at ``levels`` whose span overlaps ``[start, end]`` and that exist at event time ``until``.

    All bounds are naive wall-clock times in the user's zone (the frame's convention); ``None``
    means unbounded. ``until`` replays the growth of the tree: only nodes with ``appears <= until``.
    """
    mask = pd.Series(True, index=df.index)
    if levels is not None:
        mask &= df["level"].isin(list(levels))
    if start is not None:
        mask &= df["end"] >= start
    if end is not None:
        mask &= df["start"] <= end
    if until is not None:
        mask &= df["appears"] <= until
    return df[mask]


#: the share of the gap to a neighbouring bar that a widened bar may take on each side (so 20 % stays free)
NEIGHBOUR_SHARE = 0.4


def _min_width(df: pd.DataFrame) -> timedelta:
    """A visible bar width for point-like spans: 0.4 % of the shown range (a few pixels at any zoom of the whole
    range), or a minute when the range is one instant. No fixed floor: a minute floor made the bars of a
    five-minute chat a fifth of the axis each."""
    if df.empty:
        return timedelta(minutes=1)
    total = pd.Timedelta(df["end"].max() - df["start"].min()).to_pytimedelta()
    return total * 0.004 if total > timedelta(0) else timedelta(minutes=1)


def bar_extents(starts: Sequence[pd.Timestamp], ends: Sequence[pd.Timestamp],
                minw: timedelta) -> list[tuple[pd.Timestamp, timedelta]]:
    """``(left edge, width)`` of the bar of each span ``[starts[i], ends[i]]`` in one lane.

    A bar is its span; a span shorter than ``minw`` is widened around its centre towards ``minw``, but by at most
    :data:`NEIGHBOUR_SHARE` of the gap to the nearest span before it and after it in the lane, so that it never
    reaches its neighbour's bar. Short spans with the same start and end (a chat message and its reply, written at
    one instant) split that bar into equal parts side by side, in the order given, so that each can be seen and
    clicked (they were drawn on top of each other).
    """
    lo = [pd.Timestamp(x) for x in starts]
    hi = [pd.Timestamp(x) for x in ends]
    sorted_ends, sorted_starts = sorted(hi), sorted(lo)
    out: list[tuple[pd.Timestamp, timedelta]] = []
    for s, e in zip(lo, hi, strict=True):
        dur = pd.Timedelta(e - s).to_pytimedelta()
        if dur >= minw:
            out.append((s, dur))
            continue
        extra = (minw - dur) / 2
        k = bisect.bisect_left(sorted_ends, s)  # the last span ending strictly before this one starts
        if k > 0:
            extra = min(extra, pd.Timedelta(s - sorted_ends[k - 1]).to_pytimedelta() * NEIGHBOUR_SHARE)
        k = bisect.bisect_right(sorted_starts, e)  # the first span starting strictly after this one ends
        if k < len(sorted_starts):
            extra = min(extra, pd.Timedelta(sorted_starts[k] - e).to_pytimedelta() * NEIGHBOUR_SHARE)
        out.append((s - extra, dur + 2 * extra))
    same: dict[tuple[pd.Timestamp, pd.Timestamp], list[int]] = {}
    for i, (s, e) in enumerate(zip(lo, hi, strict=True)):
        if pd.Timedelta(e - s).to_pytimedelta() < minw:
            same.setdefault((s, e), []).append(i)
    for group in same.values():
        if len(group) > 1:
            left, width = out[group[0]]
            part = width / len(group)
            for j, i in enumerate(group):
                out[i] = (left + part * j, part)
    return out


def timeline_figure(df: pd.DataFrame, *, links: bool = True, selected: str | None = None,
                    height: int = 460) -> go.Figure:
    """Plotly figure: a horizontal bar per row of ``df`` (see :func:`timeline_frame`) in its level's lane.

    Each bar is its node's span; a span shorter than :func:`_min_width` is widened around its centre so that L1
    segments (often a single instant) stay visible, but never up to the next bar of its lane (:func:`bar_extents`).
    Each bar's ``customdata`` is ``[node id]`` (for selection
    events); hover shows level, span, model, mode and a preview. With ``links``, a grey line joins each
    node to its parent. ``selected`` outlines one node.
    """
    fig = go.Figure()
    minw = _min_width(df)
    for level in sorted(df["level"].unique()) if not df.empty else []:
        part = df[df["level"] == level]
        extents = bar_extents(list(part["start"]), list(part["end"]), minw)
        starts = [left for left, _ in extents]
        widths = [width.total_seconds() * 1000.0 for _, width in extents]
        hover = [f"<b>{r.lane}</b> · {r.window_key}<br>{r.start:%Y-%m-%d %H:%M} → {r.end:%Y-%m-%d %H:%M}"
                 f"<br>model: {r.model_id} · mode: {r.mode}<br>{_wrap(r.preview)}" for r in part.itertuples()]
        line_w = [3 if i == selected else 0.5 for i in part["id"]]
        fig.add_trace(go.Bar(
            x=widths, base=starts, y=part["lane"], orientation="h", name=LANES[int(level)],
            marker={"color": LEVEL_COLOURS[int(level)], "line": {"width": line_w, "color": "#111"}},
            customdata=part[["id"]].to_numpy(), hovertext=hover, hoverinfo="text", width=0.6,
        ))
    if links and not df.empty:
        fig.add_trace(_links_trace(df))
    fig.update_layout(
        barmode="overlay", height=height, margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis={"type": "date", "title": None}, legend={"orientation": "h", "y": 1.08},
        yaxis={"categoryorder": "array", "categoryarray": [LANES[i] for i in sorted(LANES)], "title": None},
        clickmode="event+select", dragmode="zoom",
    )
    return fig


def _wrap(text: str, width: int = 60) -> str:
    words, lines, cur = text.split(), [], ""
    for w in words:
        if len(cur) + len(w) + 1 > width and cur:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}".strip()
    lines.append(cur)
    return "<br>".join(lines)


def _links_trace(df: pd.DataFrame) -> go.Scatter:
    """Parent–child links as one scatter of line segments (``None`` separates segments)."""
    by_id = df.set_index("id")
    xs: list[object] = []
    ys: list[object] = []
    for start, end, lane, parent_id in zip(df["start"], df["end"], df["lane"], df["parent_id"], strict=True):
        if pd.isna(parent_id) or parent_id not in by_id.index:
            continue
        p = by_id.loc[parent_id]
        xs += [_middle(start, end), _middle(p["start"], p["end"]), None]
        ys += [lane, p["lane"], None]
    return go.Scatter(x=xs, y=ys, mode="lines", line={"color": "rgba(90,90,90,0.35)", "width": 1},
                      hoverinfo="skip", name="parent link", showlegend=True)


def _middle(start: pd.Timestamp, end: pd.Timestamp) -> pd.Timestamp:
    return start + (end - start) / 2


def selected_node_id(event: object) -> str | None:
    """The node id of the first selected bar in a ``st.plotly_chart(on_select=...)`` event, if any.

    Accepts the event object or its dict form; the bar's ``customdata`` holds ``[node id]``.
    """
    try:
        points = event["selection"]["points"]  # type: ignore[index]
    except (KeyError, TypeError):
        points = getattr(getattr(event, "selection", None), "points", None) or []
    for p in points or []:
        cd = p.get("customdata") if isinstance(p, dict) else None
        if cd:
            return str(cd[0] if isinstance(cd, (list, tuple)) else cd)
    return None
