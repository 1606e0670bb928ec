"""Manifold analysis of memory embeddings (the TiMem paper's manifold analysis; no streamlit here).

* :func:`node_table` — node embeddings ``(n, dim)`` float32 (unit length, from the store) with a
  metadata frame (id, user, level, session, speaker, month, model, preview).
* :func:`project_umap` — a 2-D UMAP projection (cosine metric, fixed seed).
* :func:`level_metrics` — per level: **dispersion** (mean Euclidean distance of the level's points
  to their centroid), **silhouette** (higher = better separated groups, in ``[-1, 1]``) and
  **Davies–Bouldin** (lower = better separated, ``>= 0``) with users, sessions or months as labels.
  Computed in the original embedding space (default) or in the 2-D projection.
* :func:`manifold_figure` and the export helpers (HTML always; PNG only when kaleido and a
  Chrome are available, see :func:`figure_png`).

Silhouette and Davies–Bouldin need at least 2 distinct labels and fewer labels than points; when
that fails the value is ``NaN`` and ``note`` says why (e.g. one user only).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any, Protocol
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from timem.errors import MissingExtraError, TimemError
from timem.models import MemoryNode, Role, Turn
from timem.viz.timeline import LEVEL_COLOURS

LABELS = ("user_id", "session_id", "month")
COLOUR_BY = ("level", "user_id", "speaker", "session_id", "month")
SUMMARY_SPEAKER = "(summary)"


class NodeSource(Protocol):
    """What :func:`node_table` reads (the :class:`~timem.engine.MemoryEngine` facade provides it)."""

    @property
    def dim(self) -> int: ...

    def nodes(self, user_id: str | None = None, level: int | None = None, **kw: Any) -> list[MemoryNode]: ...

    def embeddings(self, node_ids: Sequence[str]) -> dict[str, np.ndarray]: ...

    def turns(self, user_id: str, session_id: str | None = None, ids: Sequence[str] | None = None) -> list[Turn]: ...


def node_table(store: NodeSource, user_ids: Sequence[str], tz: ZoneInfo, levels: Sequence[int] = (1, 2, 3, 4, 5)
               ) -> tuple[np.ndarray, pd.DataFrame]:
    """Embeddings and metadata of the active nodes of ``user_ids`` at ``levels``.

    Returns:
        ``(X, meta)``: ``X`` of shape ``(n, dim)`` float32, row ``i`` the embedding of
        ``meta.iloc[i]``; ``meta`` columns ``id, user_id, level, level_label, session_id, speaker,
        month, model_id, preview``. ``speaker`` is the opening speaker of an L1 segment and
        ``"(summary)"`` for L2–L5; ``month`` is ``YYYY-MM`` of the span start in ``tz``.
    """
    nodes: list[MemoryNode] = []
    for uid in user_ids:
        nodes += [n for n in store.nodes(uid) if int(n.level) in set(levels)]
    if not nodes:
        return np.zeros((0, store.dim), dtype=np.float32), pd.DataFrame(columns=_META)
    vecs = store.embeddings([n.id for n in nodes])
    turns: dict[str, Turn] = {}
    for uid in user_ids:
        turns.update({t.id: t for t in store.turns(uid)})
    rows = []
    for n in nodes:
        rows.append({
            "id": n.id, "user_id": n.user_id, "level": int(n.level), "level_label": n.level.label,
            "session_id": n.session_id, "speaker": _speaker(n, turns),
            "month": f"{n.span_start.astimezone(tz):%Y-%m}", "model_id": n.model_id,
            "preview": " ".join(n.content.split())[:140],
        })
    X = np.stack([vecs[n.id] for n in nodes]).astype(np.float32)
    return X, pd.DataFrame(rows, columns=_META)


_META = ["id", "user_id", "level", "level_label", "session_id", "speaker", "month", "model_id", "preview"]


def _speaker(n: MemoryNode, turns: dict[str, Turn]) -> str:
    if int(n.level) != 1:
        return SUMMARY_SPEAKER
    src = [turns[t] for t in n.source_turn_ids if t in turns]
    human = [t for t in src if t.role != Role.ASSISTANT] or src
    return human[0].speaker if human else "?"


def project_umap(X: np.ndarray, *, n_neighbors: int = 15, min_dist: float = 0.1, seed: int = 42) -> np.ndarray:
    """2-D UMAP of the rows of ``X`` (cosine metric); returns ``(n, 2)`` float32.

    ``n_neighbors`` is capped at ``n - 1``. With fewer than 4 points UMAP is not meaningful; the
    first two principal components are returned instead (zeros for a single point).
    The first call in a process compiles numba code (about 10–30 s on 2 cores).
    """
    n = len(X)
    if n < 4:
        return _pca2(X)
    try:
        import umap  # slow import (numba); only when a projection is asked for
    except ImportError as exc:
        raise MissingExtraError("the manifold's UMAP projection", "studio", "umap-learn") from exc

    reducer = umap.UMAP(n_components=2, n_neighbors=max(2, min(n_neighbors, n - 1)), min_dist=min_dist,
                        metric="cosine", random_state=seed, n_jobs=1, init="random" if n < 10 else "spectral")
    return np.asarray(reducer.fit_transform(X), dtype=np.float32)


def _pca2(X: np.ndarray) -> np.ndarray:
    out = np.zeros((len(X), 2), dtype=np.float32)
    if len(X) < 2:
        return out
    centred = X - X.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    proj = centred @ vt[: min(2, len(vt))].T
    out[:, : proj.shape[1]] = proj
    return out


def dispersion(X: np.ndarray) -> float:
    """Mean Euclidean distance of the rows of ``X`` to their centroid (``NaN`` for no rows)."""
    if len(X) == 0:
        return float("nan")
    return float(np.linalg.norm(X - X.mean(axis=0), axis=1).mean())


def cluster_quality(X: np.ndarray, labels: Sequence[str | float | None]) -> tuple[float, float, str]:
    """``(silhouette, davies_bouldin, note)`` of ``X`` grouped by ``labels`` (Euclidean).

    Rows whose label is ``None`` or ``NaN`` are ignored. ``NaN`` with a note when fewer than 2 labels or
    when every point is its own label.
    """
    from sklearn.metrics import davies_bouldin_score, silhouette_score

    keep = [i for i, lab in enumerate(labels) if lab is not None and not pd.isna(lab)]
    if not keep:
        return float("nan"), float("nan"), "no labels at this level"
    Xk, lk = X[keep], [str(labels[i]) for i in keep]
    k = len(set(lk))
    if k < 2:
        return float("nan"), float("nan"), f"needs ≥ 2 groups, found {k}"
    if k >= len(lk):
        return float("nan"), float("nan"), "every point is its own group"
    return float(silhouette_score(Xk, lk)), float(davies_bouldin_score(Xk, lk)), ""


def level_metrics(X: np.ndarray, meta: pd.DataFrame, label: str = "user_id") -> pd.DataFrame:
    """Per level: ``level, n, dispersion, silhouette, davies_bouldin, groups, note``.

    Args:
        X: points, shape ``(n, d)`` (embeddings or a projection), rows aligned with ``meta``.
        label: the grouping column of ``meta`` (one of :data:`LABELS`).
    """
    if label not in LABELS:
        raise TimemError(f"unknown label {label!r}; use one of {', '.join(LABELS)}")
    rows = []
    for level in sorted(meta["level"].unique()) if len(meta) else []:
        idx = np.flatnonzero(meta["level"].to_numpy() == level)
        labs = meta[label].to_numpy()[idx].tolist()
        sil, dbi, note = cluster_quality(X[idx], labs)
        rows.append({"level": f"L{int(level)}", "n": len(idx), "dispersion": round(dispersion(X[idx]), 4),
                     "silhouette": round(sil, 4), "davies_bouldin": round(dbi, 4),
                     "groups": len({x for x in labs if x is not None and not pd.isna(x)}), "note": note})
    return pd.DataFrame(rows, columns=["level", "n", "dispersion", "silhouette", "davies_bouldin", "groups", "note"])


def shown_metrics(metrics: pd.DataFrame) -> pd.DataFrame:
    """:func:`level_metrics` as the studio's table shows it: a silhouette or Davies–Bouldin score that cannot be
    computed at a level (``NaN``; its ``note`` says why, e.g. "every point is its own group") is ``"—"``, not the
    "None" a table draws for a missing number; the others are written with 4 decimals. The CSV export keeps the
    numbers."""
    out = metrics.copy()
    for col in ("silhouette", "davies_bouldin"):
        out[col] = ["—" if pd.isna(v) else f"{v:.4f}" for v in metrics[col]]
    return out


def manifold_figure(coords: np.ndarray, meta: pd.DataFrame, colour: str = "level", height: int = 560) -> go.Figure:
    """Scatter of the 2-D ``coords`` (rows aligned with ``meta``), coloured by a :data:`COLOUR_BY` column.

    Marker symbol encodes the level; hover shows level, user, session, model and a preview.
    """
    if colour not in COLOUR_BY:
        raise TimemError(f"unknown colour {colour!r}; use one of {', '.join(COLOUR_BY)}")
    df = meta.assign(x=coords[:, 0] if len(coords) else [], y=coords[:, 1] if len(coords) else [])
    df = df.assign(level_label=df["level"].map(lambda v: f"L{int(v)}"), session_id=df["session_id"].fillna("—"))
    colour_col = "level_label" if colour == "level" else colour
    cmap = {f"L{k}": v for k, v in LEVEL_COLOURS.items()} if colour == "level" else None
    fig = px.scatter(df, x="x", y="y", color=colour_col, symbol="level_label", color_discrete_map=cmap,
                     hover_data={"x": False, "y": False, "level_label": True, "user_id": True, "session_id": True,
                                 "model_id": True, "preview": True},
                     category_orders={"level_label": [f"L{i}" for i in range(1, 6)]}, height=height)
    fig.update_traces(marker={"size": 9, "line": {"width": 0.5, "color": "#333"}})
    fig.update_layout(margin={"l": 10, "r": 10, "t": 30, "b": 10}, xaxis_title="UMAP 1", yaxis_title="UMAP 2",
                      legend_title=colour)
    return fig


def figure_html(fig: go.Figure) -> str:
    """A self-contained HTML page of ``fig`` (plotly.js embedded, works offline; about 4.7 MB)."""
    html: str = fig.to_html(include_plotlyjs=True, full_html=True)
    return html


def figure_png(fig: go.Figure, width: int = 1200, height: int = 800) -> bytes:
    """PNG bytes of ``fig`` via kaleido.

    Raises:
        TimemError: kaleido is not installed or cannot start a Chrome/Chromium; the message says
            to use the HTML/CSV export instead or to ``pip install kaleido`` with Chromium present.
    """
    try:
        png: bytes = fig.to_image(format="png", width=width, height=height)
        return png
    except Exception as exc:
        raise TimemError(f"PNG export is unavailable ({type(exc).__name__}: {exc}). Use the HTML or CSV export, "
                         "or `pip install kaleido` with Chrome/Chromium installed.") from exc


def frame_csv(df: pd.DataFrame) -> bytes:
    """UTF-8 CSV bytes of ``df`` (no index)."""
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    return buf.getvalue().encode("utf-8")
