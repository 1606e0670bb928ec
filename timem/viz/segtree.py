"""Data prep and the plotly figure of a user's SegTreeMem segment tree (:mod:`timem.tree.segtree`); no streamlit.

The x axis is the **utterance position** in conversation order (leaf ``seq``), not event time:
LoCoMo gives every turn of a session one timestamp, so segments would collapse on a time axis. One
lane per height (segments at the bottom, the root on top); each internal node is a bar over its
contiguous leaf range ``[first_seq, last_seq + 1)``, adjacent bars of a lane in alternating shades.
Hover shows the node's event-time span in the user's zone, its leaf count and its first utterance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from zoneinfo import ZoneInfo

import pandas as pd
import plotly.graph_objects as go

from timem.tree.segtree import SegNode

COLUMNS = ["id", "height", "lane", "first_seq", "last_seq", "n_leaves", "n_children", "start", "end", "preview"]
_SHADES = ("#0072B2", "#56B4E9")  # Okabe–Ito blues, alternating along a lane


def lane(height: int) -> str:
    """Lane label of a height (1 = segment)."""
    return "segment (h1)" if height == 1 else f"h{height}"


def segtree_frame(nodes: Sequence[SegNode], tz: ZoneInfo, texts: Mapping[str, str] | None = None,
                  topics: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per internal node (leaves dropped) with :data:`COLUMNS`, in leaf order, lowest height first
    at equal positions. ``start`` / ``end``: the span as naive wall-clock time in ``tz``; ``preview``:
    the node's LLM topic from ``topics`` (node id -> line) if it has one, else the text of its first leaf
    from ``texts`` (leaf id -> L1 content), if given."""
    first_leaf = {x.first_seq: x.id for x in nodes if x.is_leaf}
    texts, topics = texts or {}, topics or {}
    rows = [{"id": x.id, "height": x.height, "lane": lane(x.height), "first_seq": x.first_seq,
             "last_seq": x.last_seq, "n_leaves": x.n_leaves, "n_children": x.n_children,
             "start": x.span_start.astimezone(tz).replace(tzinfo=None),
             "end": x.span_end.astimezone(tz).replace(tzinfo=None),
             "preview": (f"topic: {topics[x.id]}" if x.id in topics else
                         " ".join(texts.get(first_leaf.get(x.first_seq, ""), "").split())[:140])}
            for x in sorted(nodes, key=lambda n: (n.first_seq, n.height)) if not x.is_leaf]
    return pd.DataFrame(rows, columns=COLUMNS)


def segtree_figure(df: pd.DataFrame, height: int = 420) -> go.Figure:
    """Horizontal bars per height over leaf positions (module docstring); ``customdata`` is ``[node id]``."""
    fig = go.Figure()
    for h in sorted(df["height"].unique()) if not df.empty else []:
        part = df[df["height"] == h].sort_values("first_seq")
        colours = [_SHADES[i % 2] for i in range(len(part))]
        hover = [f"<b>{r.id}</b> · height {r.height}<br>utterances {r.first_seq}–{r.last_seq} "
                 f"({r.n_leaves}, {r.n_children} children)<br>{r.start:%Y-%m-%d %H:%M} → {r.end:%Y-%m-%d %H:%M}"
                 f"<br>{r.preview}" for r in part.itertuples()]
        fig.add_trace(go.Bar(
            x=(part["last_seq"] - part["first_seq"] + 1).tolist(), base=part["first_seq"].tolist(), y=part["lane"],
            orientation="h", name=lane(int(h)), marker={"color": colours, "line": {"width": 0.5, "color": "#fff"}},
            customdata=part[["id"]].to_numpy(), hovertext=hover, hoverinfo="text", width=0.7, showlegend=False))
    lanes = [lane(int(h)) for h in sorted(df["height"].unique())] if not df.empty else []
    fig.update_layout(barmode="overlay", height=height, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      xaxis={"title": "utterance (conversation order)"},
                      yaxis={"categoryorder": "array", "categoryarray": lanes, "title": None})
    return fig
