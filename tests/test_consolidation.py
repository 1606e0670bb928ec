"""Scheduling, idempotency, resume after failure and editing, with a scripted LLM and the real embedder."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from helpers import consolidation_answer, make_turn, scripted_llm
from timem.config import load_config
from timem.consolidation.segments import exchanges
from timem.engine import MemoryEngine
from timem.errors import InputError, LLMError
from timem.llm.client import LLM
from timem.llm.fake import ScriptedBackend
from timem.models import Level, NodeStatus, Role
from timem.tree.check import check_store

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday


@pytest.fixture()
def engine(store, embedder, tmp_path):
    cfg = load_config(env={}, db_path=str(tmp_path / "timem.duckdb"))
    llm, backend = scripted_llm(store)
    eng = MemoryEngine(cfg, store, embedder, llm)
    eng.backend = backend
    return eng


def levels(eng, user="u"):
    counts = {lv: 0 for lv in Level}
    for n in eng.store.nodes(user):
        counts[n.level] += 1
    return counts


def test_exchanges_pair_speaker_runs_and_keep_a_trailing_turn():
    ts = [make_turn("u", "s", i, sp, f"x{i}", T0) for i, sp in enumerate("AABABBA")]
    assert [[t.seq for t in ex] for ex in exchanges(ts)] == [[0, 1, 2], [3, 4, 5], [6]]


def test_online_chat_writes_l1_at_once_and_upper_levels_when_windows_close(engine):
    engine.add_exchange("u", "s1", "I adopted a cat yesterday.", "Congratulations!", T0)
    assert levels(engine)[Level.SEGMENT] == 1 and levels(engine)[Level.SESSION] == 0
    seg = engine.store.nodes("u", 1)[0]
    assert "yesterday [= 7 May 2023]" in seg.content and seg.model_id == "verbatim"
    engine.end_session("u", "s1")
    assert levels(engine)[Level.SESSION] == 1 and levels(engine)[Level.DAY] == 0  # the day is still open
    engine.add_exchange("u", "s2", "Back again.", "Welcome back.", T0 + timedelta(days=1))
    c = levels(engine)
    assert c[Level.DAY] == 1 and c[Level.WEEK] == 0  # day 1 closed by a later turn, week still open
    engine.add_exchange("u", "s3", "New month.", "Indeed.", datetime(2023, 6, 2, 9, 0, tzinfo=UTC))
    c = levels(engine)
    assert c[Level.SESSION] == 2 and c[Level.DAY] == 2 and c[Level.WEEK] == 1 and c[Level.PROFILE] == 1
    assert check_store(engine.store, engine.config, "u") == []


def test_rerun_adds_nothing_and_a_failed_run_resumes_without_duplicates(store, embedder, tmp_path):
    cfg = load_config(env={}, db_path=str(tmp_path / "x.duckdb"))
    turns = [make_turn("u", f"s{d}", i, "AB"[i % 2], f"day {d} turn {i}", T0 + timedelta(days=d, minutes=i))
             for d in range(4) for i in range(4)]
    store.add_turns(turns)
    calls = {"n": 0}

    def flaky(request):
        calls["n"] += 1
        if calls["n"] == 3:
            raise LLMError("simulated timeout")
        return consolidation_answer(request)

    eng = MemoryEngine(cfg, store, embedder, LLM(ScriptedBackend(flaky), store))
    with pytest.raises(LLMError):
        eng.consolidate("u", flush=True)
    partial = levels(eng)
    assert partial[Level.SEGMENT] == 8 and 0 < partial[Level.SESSION] < 4
    eng.consolidate("u", flush=True)
    done = levels(eng)
    assert done == {Level.SEGMENT: 8, Level.SESSION: 4, Level.DAY: 4, Level.WEEK: 1, Level.PROFILE: 1}
    ids = {n.id for n in store.nodes("u", status=None)}
    eng.consolidate("u", flush=True)
    assert {n.id for n in store.nodes("u", status=None)} == ids
    assert check_store(store, cfg, "u") == []


def test_history_of_three_latest_same_level_nodes_is_shown_to_the_prompt(engine):
    for d in range(5):
        engine.add_exchange("u", f"s{d}", f"Event number {d}.", "Noted.", T0 + timedelta(days=d))
        engine.end_session("u", f"s{d}")
    sessions = engine.store.nodes("u", 2)
    assert [len(n.history_ids) for n in sessions] == [0, 1, 2, 3, 3]
    assert sessions[4].history_ids == [n.id for n in sessions[1:4]]
    last_l2_prompt = [c for c in engine.backend.calls if "Segments of this session" in c.messages[-1].content][-1]
    assert "Event number 3" in last_l2_prompt.messages[-1].content  # history is rendered, not just recorded


def test_edit_marks_ancestors_and_reconsolidates_them(engine):
    engine.add_exchange("u", "s1", "My favourite colour is blue.", "Nice.", T0)
    engine.consolidate("u", flush=True)
    seg = engine.store.nodes("u", 1)[0]
    old_l2 = engine.store.nodes("u", 2)[0]
    engine.edit_memory(seg.id, "User: My favourite colour is green.")
    new_l2 = engine.store.nodes("u", 2)[0]
    assert new_l2.id != old_l2.id and engine.store.node(old_l2.id).status == NodeStatus.SUPERSEDED
    assert all(not n.stale for n in engine.store.nodes("u"))
    assert engine.store.search_bm25("u", "green", 1, 5)[0][0] == seg.id
    assert check_store(engine.store, engine.config, "u") == []


def test_soft_delete_restore_and_hard_erase(engine):
    engine.add_exchange("u", "s1", "I live in Lisbon.", "Lovely city.", T0)
    engine.add_exchange("u", "s1", "I work as a nurse.", "Great.", T0 + timedelta(minutes=1))
    engine.consolidate("u", flush=True)
    a, b = engine.store.nodes("u", 1)
    engine.delete_memories([a.id])
    assert [n.id for n in engine.store.nodes("u", 1)] == [b.id]
    assert engine.store.nodes("u", 2)[0].child_ids == [b.id]
    assert engine.store.search_bm25("u", "Lisbon", 1, 5) == []
    engine.restore_memory(a.id)
    assert sorted(engine.store.nodes("u", 2)[0].child_ids) == sorted([a.id, b.id])
    engine.delete_memories([a.id], hard=True)
    with pytest.raises(Exception):
        engine.store.node(a.id)
    assert engine.store.con.execute("SELECT count(*) FROM llm_cache WHERE contains(request, 'Lisbon')").fetchone()[0] == 0
    assert check_store(engine.store, engine.config, "u") == []


def test_erase_user_leaves_other_users_untouched(engine):
    engine.add_exchange("u", "s1", "Secret plan.", "Ok.", T0)
    engine.add_exchange("v", "s1", "Other user.", "Ok.", T0)
    engine.consolidate(flush=True)
    counts = engine.erase_user("u")
    assert counts["turns"] == 2 and counts["nodes"] == 5
    assert engine.store.users() == ["v"] and levels(engine, "v")[Level.PROFILE] == 1
    assert engine.store.search_bm25("u", "secret plan", 1, 5) == []


def test_bad_input_leaves_the_store_unchanged(engine):
    with pytest.raises(InputError):
        engine.add_exchange("u", "s1", "  ", "reply", T0)
    with pytest.raises(InputError):
        engine.add_exchange("u", "s1", "hi", "reply", datetime(2023, 5, 8))
    assert engine.store.turns("u") == [] and engine.store.nodes("u") == []


def test_two_people_roles_are_kept(engine):
    engine.store.add_turns([make_turn("u", "s", 0, "Ann", "hi", T0, Role.USER),
                            make_turn("u", "s", 1, "Bob", "hey", T0, Role.OTHER)])
    engine.consolidate("u", flush=True)
    profile_prompt = [c for c in engine.backend.calls if "People to profile" in c.messages[-1].content][0]
    assert "People to profile: Ann, Bob." in profile_prompt.messages[-1].content
