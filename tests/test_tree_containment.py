"""Temporal containment over random histories (hypothesis): sessions across midnight, DST changes, month ends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from helpers import make_turn, scripted_llm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timem.config import load_config
from timem.consolidation.consolidator import Consolidator
from timem.models import Level
from timem.store import Store
from timem.store.check import check_store
from timem.tree.windows import day_window, month_window, week_bounds, week_window


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    """Logic tests: the deterministic hashing embedder instead of MiniLM (tests/conftest.py)."""
    return fake_embedder

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Shanghai"]
# Anchors near DST switches and month/year ends, where window arithmetic usually breaks.
ANCHORS = [datetime(2023, 3, 26, 0, 30, tzinfo=UTC), datetime(2023, 10, 29, 0, 30, tzinfo=UTC),
           datetime(2023, 3, 12, 6, 0, tzinfo=UTC), datetime(2023, 11, 5, 5, 0, tzinfo=UTC),
           datetime(2023, 1, 31, 22, 0, tzinfo=UTC), datetime(2023, 12, 31, 23, 0, tzinfo=UTC),
           datetime(2024, 2, 29, 23, 30, tzinfo=UTC)]

sessions_st = st.lists(
    st.tuples(st.integers(0, 60 * 24 * 45),  # minutes after the anchor the session starts
              st.lists(st.integers(0, 400), min_size=1, max_size=5)),  # minutes between consecutive turns
    min_size=1, max_size=6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(zone=st.sampled_from(ZONES), anchor=st.sampled_from(ANCHORS), sessions=sessions_st)
def test_every_parent_contains_its_children(tmp_path_factory, embedder, zone, anchor, sessions):
    cfg = load_config(env={}, timezone=zone, db_path=str(tmp_path_factory.mktemp("db") / "t.duckdb"))
    store = Store(cfg.store.db_path, embedder.model_id, embedder.dim)
    try:
        llm, _ = scripted_llm(store)
        turns = []
        for i, (offset, gaps) in enumerate(sessions):
            t = anchor + timedelta(minutes=offset)
            for j, gap in enumerate(gaps):
                t += timedelta(minutes=gap)
                turns.append(make_turn("u", f"S{i}", j, "Ann" if j % 2 == 0 else "Bob", f"turn {i}.{j}", t))
        store.add_turns(turns)
        cons = Consolidator(store, embedder, llm, cfg)
        cons.consolidate("u", flush=True)
        store.refresh_fts()
        nodes = {n.id: n for n in store.nodes("u")}
        assert {n.level for n in nodes.values()} == set(Level)
        for n in nodes.values():
            for c in n.child_ids:
                assert n.span.contains(nodes[c].span), (n.window_key, nodes[c].window_key)
        assert check_store(store, cfg, "u") == []
        # one L5 root per month that holds a session start; every node reaches a root
        months = {month_window(t.event_time, ZoneInfo(zone)).key for t in turns if t.seq == 0}
        assert {n.window_key for n in nodes.values() if n.level == Level.PROFILE} >= months
    finally:
        store.close()


@given(d=st.dates(min_value=datetime(2000, 1, 1).date(), max_value=datetime(2100, 1, 1).date()))
def test_weeks_are_cut_at_month_ends(d):
    lo, hi = week_bounds(d)
    assert lo <= d <= hi
    assert lo.month == hi.month == d.month
    assert (hi - lo).days <= 6
    assert lo.weekday() == 0 or lo.day == 1
    assert hi.weekday() == 6 or (hi + timedelta(days=1)).day == 1


def test_day_window_follows_dst_in_the_user_zone():
    berlin = ZoneInfo("Europe/Berlin")
    w = day_window(datetime(2023, 3, 26, 12, 0, tzinfo=UTC), berlin)  # the 23-hour day
    assert w.key == "day:2023-03-26"
    assert w.end - w.start == timedelta(hours=23)
    ww = week_window(datetime(2023, 5, 31, 12, 0, tzinfo=UTC), berlin)  # Wednesday, last of May
    assert ww.key == "week:2023-05-29..2023-05-31"


def test_check_flags_a_day_memory_stretched_past_its_day(tmp_path, embedder):
    """Found by a new user: session "a" on 2 May, then "b" on 9 May, then "a" again on 20 June. The L3 "day"
    of 2 May grew to span seven weeks (containment held, so `timem check` said ok). Now check names it. (A JSONL
    file or a chat turn can no longer continue a session after a day; through the Python API, or in a file
    written before that rule, it still can.)"""
    from timem.datasets.base import ImportedSession, ImportedUser, turn_id
    from timem.engine import MemoryEngine
    from timem.models import Role, Turn

    rows = [("a", 0, "2024-05-02T09:00:00+00:00"), ("b", 0, "2024-05-09T09:00:00+00:00"),
            ("a", 1, "2024-06-20T09:00:00+00:00")]
    turns = [Turn(id=turn_id("zed", s, seq), user_id="zed", session_id=s, seq=seq, speaker="Zed", role=Role.USER,
                  text=f"Note number {i} about the garden.", event_time=datetime.fromisoformat(ts))
             for i, (s, seq, ts) in enumerate(rows)]
    sessions = [ImportedSession(session_id=s, turns=[t for t in turns if t.session_id == s], date_label=s)
                for s in ("a", "b")]
    cfg = load_config(env={}, db_path=tmp_path / "t.duckdb", llm_backend="none", consolidation_mode="extractive")
    eng = MemoryEngine(cfg, Store(cfg.store.db_path, embedder.model_id, embedder.dim), embedder, None)
    eng.ingest([ImportedUser(user_id="zed", participants=["Zed"], sessions=sessions)])
    rules = {(v.rule, eng.store.node(v.node_id).level) for v in check_store(eng.store, cfg) if v.node_id}
    assert ("window", Level.DAY) in rules, rules
    eng.close()


def test_check_names_a_file_whose_days_were_cut_in_another_zone(tmp_path, embedder):
    """Found by a new user: a file consolidated in UTC, checked with timezone = Asia/Tokyo, said ok, while
    `timem tree` then showed days running 09:00 to 09:00."""
    from timem.engine import MemoryEngine

    cfg = load_config(env={}, db_path=tmp_path / "t.duckdb", llm_backend="none", consolidation_mode="extractive")
    store = Store(cfg.store.db_path, embedder.model_id, embedder.dim)
    eng = MemoryEngine(cfg, store, embedder, None)
    assert store.calendar_zone() is None
    at = datetime(2024, 5, 2, 9, tzinfo=UTC)
    eng.add_exchange("zed", "s1", "I planted tomatoes in the garden.", "Nice!", at)
    eng.add_exchange("zed", "s2", "The tomatoes are growing.", "Great.", at + timedelta(days=9))
    assert store.calendar_zone() == "UTC" and any(n.level >= Level.DAY for n in store.nodes("zed"))
    assert not [v for v in check_store(store, cfg) if v.rule == "zone"]
    tokyo = cfg.with_overrides(timezone="Asia/Tokyo")
    (zone,) = [v for v in check_store(store, tokyo) if v.rule == "zone"]
    assert "cut in UTC" in zone.detail and "Asia/Tokyo" in zone.detail
    assert store.calendar_zone("Asia/Tokyo") == "UTC"  # recorded once: a later zone does not replace it
    eng.close()
