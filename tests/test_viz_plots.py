"""Data prep for the studio's plots (timem.viz: timeline, manifold, trace tables); no streamlit."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pytest

from timem.errors import TimemError
from timem.models import Level, MemoryNode, NodeStatus
from timem.viz import manifold as mf
from timem.viz import timeline as tl

T0 = datetime(2024, 4, 2, 8, 15, tzinfo=UTC)


def node(nid: str, level: int, start: datetime, end: datetime, children=(), content="text", model="m",
         session=None) -> MemoryNode:
    return MemoryNode(id=nid, user_id="u", level=Level(level), window_key=f"w:{nid}", span_start=start, span_end=end,
                      content=content, child_ids=list(children), model_id=model, prompt_version="v",
                      session_id=session)


@pytest.fixture()
def tree() -> list[MemoryNode]:
    a = node("a", 1, T0, T0, content="On 2 April: Mia: coffee", model="verbatim", session="s1")
    b = node("b", 1, T0 + timedelta(minutes=5), T0 + timedelta(minutes=6), model="verbatim", session="s1")
    s = node("s", 2, T0, T0 + timedelta(minutes=6), children=["a", "b"], model="qwen", session="s1")
    d = node("d", 3, datetime(2024, 4, 2, tzinfo=UTC), datetime(2024, 4, 3, tzinfo=UTC), children=["s"], model="qwen")
    return [a, b, s, d]


def test_timeline_frame_local_time_parents_and_appearance(tree):
    berlin = ZoneInfo("Europe/Berlin")
    df = tl.timeline_frame(tree, berlin)
    row = df.set_index("id").loc["a"]
    assert row["start"] == datetime(2024, 4, 2, 10, 15)  # UTC+2 in April, naive wall time
    assert row["parent_id"] == "s" and df.set_index("id").loc["s", "parent_id"] == "d"
    assert pd.isna(df.set_index("id").loc["d", "parent_id"])
    assert row["model_id"] == "verbatim" and row["lane"] == "L1 segment"
    assert (df["appears"] == df["end"]).all()


def test_filter_frame_levels_dates_and_growth(tree):
    df = tl.timeline_frame(tree, ZoneInfo("UTC"))
    assert set(tl.filter_frame(df, levels=[1])["id"]) == {"a", "b"}
    # the replay: at 08:20 only the first segment exists; the session appears at its end, the day at midnight
    assert set(tl.filter_frame(df, until=datetime(2024, 4, 2, 8, 20))["id"]) == {"a"}
    assert set(tl.filter_frame(df, until=datetime(2024, 4, 2, 9, 0))["id"]) == {"a", "b", "s"}
    assert set(tl.filter_frame(df, until=datetime(2024, 4, 3, 0, 0))["id"]) == {"a", "b", "s", "d"}
    assert tl.filter_frame(df, start=datetime(2024, 4, 5)).empty


def test_timeline_figure_bars_links_and_selection(tree):
    df = tl.timeline_frame(tree, ZoneInfo("UTC"))
    fig = tl.timeline_figure(df, selected="s")
    bars = [t for t in fig.data if t.type == "bar"]
    assert [b.name for b in bars] == ["L1 segment", "L2 session", "L3 day"]
    assert all(w > 0 for b in bars for w in b.x)  # point-like segments are widened to stay visible
    assert sorted(str(c[0]) for b in bars for c in b.customdata) == ["a", "b", "d", "s"]
    links = next(t for t in fig.data if t.type == "scatter")
    assert sum(1 for x in links.x if x is None) == 3  # a->s, b->s, s->d
    assert list(bars[1].marker.line.width) == [3]  # the selected node is outlined
    assert tl.selected_node_id({"selection": {"points": [{"customdata": ["s"]}]}}) == "s"
    assert tl.selected_node_id({"selection": {"points": []}}) is None


def _l1_bars(fig) -> list[tuple[datetime, datetime]]:
    """The L1 bars of ``fig`` as (left, right) edges, in time order."""
    bar = next(t for t in fig.data if t.type == "bar" and t.name == "L1 segment")
    return sorted((pd.Timestamp(b).to_pydatetime(), pd.Timestamp(b).to_pydatetime() + timedelta(milliseconds=w))
                  for b, w in zip(bar.base, bar.x, strict=True))


def _short_chat(*above: MemoryNode) -> list[MemoryNode]:
    """A 5-minute studio chat (the simulated clock moves +1 min an exchange): 3 point-like segments at 17:12,
    17:13, 17:17, their session, and the nodes ``above``."""
    t = datetime(2024, 7, 1, 17, 12, tzinfo=UTC)
    segs = [node(f"e{i}", 1, t + timedelta(minutes=m), t + timedelta(minutes=m), session="c1")
            for i, m in enumerate((0, 1, 5))]
    return [*segs, node("c1", 2, t, t + timedelta(minutes=5), children=["e0", "e1", "e2"], session="c1"), *above]


def test_the_l1_bars_of_a_short_chat_are_narrow_visible_and_apart():
    """A new-user trial: the L1 bars of a five-minute chat were a minute wide each (the minimum width), so the
    bars of exchanges one minute apart touched and each looked much wider than its instant."""
    df = tl.timeline_frame(_short_chat(), ZoneInfo("UTC"))
    bars = _l1_bars(tl.timeline_figure(df))
    shown = timedelta(minutes=5)
    for (left, right), seg in zip(bars, sorted(df[df["level"] == 1]["start"]), strict=True):
        assert left < seg.to_pydatetime() < right  # centred on its instant
        assert shown * 0.002 <= right - left <= shown * 0.01  # visible (about 0.4 % of the axis), not a minute
    assert all(a[1] < b[0] for a, b in zip(bars, bars[1:], strict=False))  # no bar reaches the next one
    session = next(t for t in tl.timeline_figure(df).data if t.name == "L2 session")
    assert session.x[0] == shown.total_seconds() * 1000  # a span wider than the minimum is drawn as it is


def test_bars_widened_on_a_long_axis_stop_short_of_their_neighbours():
    """With the day, week and month of the chat shown, the minimum width (0.4 % of a month, about three hours) would
    have covered all three segments: each widened bar keeps clear of the next one in its lane."""
    t = datetime(2024, 7, 1, tzinfo=UTC)
    above = [node("d", 3, t, t + timedelta(days=1), children=["c1"]),
             node("w", 4, t, t + timedelta(days=7), children=["d"]),
             node("m", 5, t, t + timedelta(days=31), children=["w"])]
    df = tl.timeline_frame(_short_chat(*above), ZoneInfo("UTC"))
    bars = _l1_bars(tl.timeline_figure(df))
    assert all(a[1] < b[0] for a, b in zip(bars, bars[1:], strict=False))
    assert all(right - left > timedelta(0) for left, right in bars)
    single = tl.timeline_frame([node("x", 1, t, t)], ZoneInfo("UTC"))  # one instant: still a visible bar
    ((left, right),) = _l1_bars(tl.timeline_figure(single))
    assert right - left == timedelta(minutes=1)


def test_timeline_figure_empty():
    fig = tl.timeline_figure(tl.timeline_frame([], ZoneInfo("UTC")))
    assert len(fig.data) == 0


def test_dispersion_matches_hand_computation():
    X = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]])
    assert mf.dispersion(X) == pytest.approx(math.sqrt(2))
    assert math.isnan(mf.dispersion(np.zeros((0, 2))))


def test_cluster_quality_separated_groups_and_degenerate_cases():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.05, (10, 3)), rng.normal(5, 0.05, (10, 3))])
    labels = ["u1"] * 10 + ["u2"] * 10
    sil, dbi, note = mf.cluster_quality(X, labels)
    assert sil > 0.9 and dbi < 0.1 and note == ""
    sil, dbi, note = mf.cluster_quality(X, ["u1"] * 20)
    assert math.isnan(sil) and math.isnan(dbi) and "2 groups" in note
    sil, _, note = mf.cluster_quality(X[:3], ["a", "b", "c"])
    assert math.isnan(sil) and "own group" in note
    _, _, note = mf.cluster_quality(X[:3], [None, None, None])
    assert note == "no labels at this level"


def test_level_metrics_per_level():
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(0, 1, (6, 4)), rng.normal(0, 0.1, (4, 4))])
    meta = pd.DataFrame({"level": [1] * 6 + [5] * 4, "user_id": ["a", "b"] * 3 + ["a", "b"] * 2,
                         "session_id": ["s1", "s1", "s2", "s2", "s3", "s3", None, None, None, None],
                         "month": ["2024-04"] * 10})
    out = mf.level_metrics(X, meta, "user_id")
    assert list(out["level"]) == ["L1", "L5"] and list(out["n"]) == [6, 4]
    assert out.loc[1, "dispersion"] < out.loc[0, "dispersion"]  # the tight cluster is more compact
    by_session = mf.level_metrics(X, meta, "session_id")
    assert by_session.loc[1, "note"] == "no labels at this level" and by_session.loc[1, "groups"] == 0
    with pytest.raises(TimemError):
        mf.level_metrics(X, meta, "speaker")


def test_projection_shapes():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(3, 8)).astype(np.float32)
    assert mf.project_umap(X).shape == (3, 2)  # tiny: principal components, no UMAP
    assert mf.project_umap(X[:1]).tolist() == [[0.0, 0.0]]
    X = rng.normal(size=(30, 8)).astype(np.float32)
    Y = mf.project_umap(X, n_neighbors=50)  # capped at n - 1
    assert Y.shape == (30, 2) and np.all(np.isfinite(Y))
    assert np.allclose(Y, mf.project_umap(X, n_neighbors=50))  # fixed seed


def test_node_table_and_figure_from_a_store(store, embedder):
    from timem.models import Role, Turn

    turns = [Turn(id=f"t{i}", user_id="u", session_id="s1", seq=i, speaker=sp, role=role, text=txt,
                  event_time=T0 + timedelta(seconds=i))
             for i, (sp, role, txt) in enumerate([("Mia", Role.USER, "I love tea"),
                                                  ("Assistant", Role.ASSISTANT, "Nice")])]
    store.add_turns(turns)
    leaf = node("L1-x", 1, T0, T0 + timedelta(seconds=1), content="Mia: I love tea", model="verbatim", session="s1")
    leaf = leaf.model_copy(update={"source_turn_ids": ["t0", "t1"]})
    top = node("L2-x", 2, T0, T0 + timedelta(seconds=1), children=["L1-x"], content="Mia likes tea", session="s1")
    gone = node("L1-y", 1, T0, T0, content="deleted one").model_copy(update={"status": NodeStatus.DELETED})
    for n in (leaf, top, gone):
        store.add_node(n, embedder.embed([n.content])[0])
    X, meta = mf.node_table(store, ["u"], ZoneInfo("UTC"))
    assert X.shape == (2, embedder.dim) and list(meta["id"]) == ["L1-x", "L2-x"]  # active nodes only
    assert list(meta["speaker"]) == ["Mia", mf.SUMMARY_SPEAKER] and list(meta["month"]) == ["2024-04"] * 2
    fig = mf.manifold_figure(mf.project_umap(X), meta, "speaker")
    assert {t.name.split(",")[0] for t in fig.data} == {"Mia", mf.SUMMARY_SPEAKER}
    html = mf.figure_html(fig)
    assert "<html>" in html[:100] and "plotly" in html.lower()
    assert mf.frame_csv(meta).decode().splitlines()[0].startswith("id,user_id,level")
    with pytest.raises(TimemError):
        mf.manifold_figure(np.zeros((2, 2)), meta, "colour-that-does-not-exist")


def test_png_export_or_an_actionable_error():
    """PNG needs kaleido and a Chrome/Chromium; without them the error says to use HTML/CSV instead."""
    import importlib.util

    fig = mf.manifold_figure(np.zeros((2, 2)), pd.DataFrame({
        "id": ["a", "b"], "user_id": ["u", "u"], "level": [1, 2], "level_label": ["L1", "L2"],
        "session_id": ["s", None], "speaker": ["Mia", mf.SUMMARY_SPEAKER], "month": ["2024-04"] * 2,
        "model_id": ["verbatim", "m"], "preview": ["x", "y"]}))
    if importlib.util.find_spec("kaleido") is None:
        with pytest.raises(TimemError, match="HTML or CSV"):
            mf.figure_png(fig)
    else:
        assert mf.figure_png(fig, width=400, height=300)[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_message_and_its_reply_at_one_instant_are_drawn_side_by_side():
    """A new-user trial: in the studio's chat a message and its reply share one event time, so their L1 bars were
    drawn on top of each other and only the reply could be clicked."""
    t = datetime(2024, 7, 1, 9, tzinfo=UTC)
    t2 = t + timedelta(minutes=2)
    nodes = [node("m1", 1, t, t), node("r1", 1, t, t), node("m2", 1, t2, t2), node("r2", 1, t2, t2)]
    df = tl.timeline_frame(nodes, ZoneInfo("UTC"))
    bars = _l1_bars(tl.timeline_figure(df))
    assert len(bars) == 4
    assert all(right - left > timedelta(0) for left, right in bars)
    ordered = sorted(bars)
    assert all(a[1] <= b[0] for a, b in zip(ordered, ordered[1:], strict=False))  # none covers another
    trace = next(t for t in tl.timeline_figure(df).data if t.name == "L1 segment")
    lefts = dict(zip((c[0] for c in trace.customdata), trace.base, strict=True))
    assert pd.Timestamp(lefts["m1"]) < pd.Timestamp(lefts["r1"])  # the message first, then its reply
