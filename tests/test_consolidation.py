"""Scheduling, idempotency, resume after failure and editing, with a scripted LLM and the real embedder."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from helpers import ABSTRACTIVE, EXCHANGE, consolidation_answer, make_turn, scripted_llm

from timem.config import load_config
from timem.consolidation.segments import exchanges
from timem.engine import MemoryEngine
from timem.errors import ConsolidationIncomplete, InputError, LLMError, NotFoundError, UnusableAnswerError
from timem.llm.client import LLM
from timem.llm.fake import ScriptedBackend
from timem.models import Level, NodeStatus, Role
from timem.store.check import check_store


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    """Logic tests: the deterministic hashing embedder instead of MiniLM (tests/conftest.py)."""
    return fake_embedder

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday


@pytest.fixture()
def engine(store, embedder, tmp_path):
    # one L1 segment per exchange, L2-L5 written by the scripted LLM
    cfg = load_config(env={}, db_path=str(tmp_path / "timem.duckdb"), **EXCHANGE, **ABSTRACTIVE)
    llm, backend = scripted_llm(store)
    eng = MemoryEngine(cfg, store, embedder, llm)
    eng.backend = backend
    return eng


def levels(eng, user="u"):
    counts = dict.fromkeys(Level, 0)
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
    cfg = load_config(env={}, db_path=str(tmp_path / "x.duckdb"), **EXCHANGE, **ABSTRACTIVE,
                      memory_extractor="rules")  # the LLM calls counted are consolidation's only
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


def _invents_for(session_text: str):
    """A model that answers every prompt well except the L2 of the session containing ``session_text``,
    for which it writes facts found in no input (what the 1.5B model did on a Chinese session)."""
    def reply(request):
        prompt = request.messages[-1].content
        if "Segments of this session" in prompt and session_text in prompt.split("\n\nEarlier ")[0]:
            return '{"summary": "They visited the Eiffel Tower and the Louvre, then bought croissants in Paris."}'
        return consolidation_answer(request)
    return reply


def test_an_unusable_window_is_reported_and_stays_due_while_the_others_are_written(store, embedder, tmp_path):
    cfg = load_config(env={}, db_path=str(tmp_path / "x.duckdb"), **ABSTRACTIVE)
    for d, text in enumerate(["I bake sourdough bread.", "我学了半年中文。", "I repaired my bicycle."]):
        store.add_turns([make_turn("u", f"s{d}", i, "AB"[i % 2], f"{text} ({i})", T0 + timedelta(hours=d, minutes=i))
                         for i in range(2)])
        store.end_session("u", f"s{d}")
    eng = MemoryEngine(cfg, store, embedder, LLM(ScriptedBackend(_invents_for("我学了半年中文")), store))
    with pytest.raises(ConsolidationIncomplete) as err:
        eng.consolidate("u", flush=True)
    exc = err.value
    assert [(lv, key) for lv, key, _ in exc.failures] == [(2, "session:s1")]
    assert "no sentence of the model's answer is supported" in exc.failures[0][2] and "session:s1" in str(exc)
    assert {n.session_id for n in store.nodes("u", 2)} == {"s0", "s2"}  # the other sessions were written
    assert {n.id for n in exc.written if n.level > 1} == {n.id for n in store.nodes("u") if n.level > 1}
    day = store.nodes("u", 3)[0]
    assert sorted(day.child_ids) == sorted(n.id for n in store.nodes("u", 2))  # built from what exists
    audit = store.con.execute("SELECT detail FROM audit WHERE action = 'consolidation-failed'").fetchall()
    assert len(audit) == 1 and "session:s1" in audit[0][0]
    violations = check_store(store, cfg, "u")  # `timem check` names the segments still waiting for their L2
    assert {(v.rule, v.node_id) for v in violations} == {("orphan", n.id) for n in store.nodes("u", 1)
                                                         if n.session_id == "s1"}
    # a model that can write it: the window is still due, and the day is redone with the new child
    eng2 = MemoryEngine(cfg, store, embedder, LLM(ScriptedBackend(consolidation_answer, model_id="better"), store))
    eng2.consolidate("u", flush=True)
    assert {n.session_id for n in store.nodes("u", 2)} == {"s0", "s1", "s2"}
    assert store.node(day.id).status == NodeStatus.SUPERSEDED and len(store.nodes("u", 3)[0].child_ids) == 3
    assert check_store(store, cfg, "u") == []


def test_chat_keeps_the_exchange_when_an_older_window_cannot_be_consolidated(store, embedder, tmp_path):
    cfg = load_config(env={}, db_path=str(tmp_path / "x.duckdb"), **EXCHANGE, **ABSTRACTIVE)
    eng = MemoryEngine(cfg, store, embedder, LLM(ScriptedBackend(_invents_for("tea ceremony")), store))
    eng.add_exchange("u", "s1", "I joined a tea ceremony class.", "Lovely.", T0)
    with pytest.raises(ConsolidationIncomplete) as err:
        eng.add_exchange("u", "s2", "Back from work.", "Welcome back.", T0 + timedelta(days=1))
    assert len(store.turns("u", "s2")) == 2 and len(store.nodes("u", 1)) == 2  # stored, L1 included
    assert [n.level for n in err.value.written] == [Level.SEGMENT]
    assert store.search_bm25("u", "work", 1, 5)  # the FTS snapshot was refreshed despite the failure


def test_no_valid_json_is_an_unusable_answer(store):
    llm = LLM(ScriptedBackend(["not json"] * 3), store, max_retries=2)
    from timem.llm.protocol import Message
    from timem.prompts import session

    with pytest.raises(UnusableAnswerError, match="no valid"):
        llm.complete_json([Message(role="user", content="Summarise.")], session.SessionMemory, purpose="t")


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
    with pytest.raises(NotFoundError):
        engine.store.node(a.id)
    assert engine.store.con.execute(
        "SELECT count(*) FROM llm_cache WHERE contains(request, 'Lisbon')").fetchone()[0] == 0
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


# ---------------------------------------------------------------- modes (issue 11)
def _two_sessions(store):
    for d, (a, b) in enumerate([("I adopted a cat named Miso yesterday.", "Lovely, congratulations!"),
                                ("I started a pottery class in Lisbon.", "That sounds fun.")]):
        store.add_turns([make_turn("u", f"s{d}", 0, "Ann", a, T0 + timedelta(days=d), Role.USER),
                         make_turn("u", f"s{d}", 1, "Bob", b, T0 + timedelta(days=d, minutes=1))])
        store.end_session("u", f"s{d}")


def test_an_edit_reconsolidates_each_ancestor_in_its_own_mode(store, embedder, tmp_path):
    _two_sessions(store)
    extractive_cfg = load_config(env={}, db_path=str(tmp_path / "x.duckdb"), consolidation_mode="extractive")
    MemoryEngine(extractive_cfg, store, embedder, None).consolidate("u", flush=True)
    old = {n.id: n for n in store.nodes("u") if n.level > 1}
    assert {n.mode for n in old.values()} == {"extractive"}
    # the studio now runs with an LLM in abstractive mode: the extractive ancestors stay extractive
    llm, backend = scripted_llm(store)
    eng = MemoryEngine(load_config(env={}, db_path=str(tmp_path / "x.duckdb"), **ABSTRACTIVE), store, embedder, llm)
    seg = store.nodes("u", 1)[0]
    eng.edit_memory(seg.id, "Ann: I adopted a cat named Tofu on 7 May 2023.")
    new = [n for n in store.nodes("u") if n.level > 1]
    assert {n.mode for n in new} == {"extractive"} and {n.model_id for n in new} == {"extractive"}
    assert backend.calls == []  # no LLM call: extractive needs none
    changed = [n for n in new if n.id not in old]
    assert sorted(int(n.level) for n in changed) == [2, 3, 4, 5]  # session, day, week, month of the edit
    assert "Tofu" in next(n for n in changed if n.level == 2).content
    assert all(store.node(i).status == NodeStatus.SUPERSEDED for i in old if i not in {n.id for n in new})
    # without any LLM: erasing a session memory whose segments remain regenerates it, in its mode
    eng_none = MemoryEngine(extractive_cfg, store, embedder, None)
    gone = next(n for n in store.nodes("u", 2) if n.session_id == "s1")
    eng_none.delete_memories([gone.id], hard=True)
    l2 = next(n for n in store.nodes("u", 2) if n.session_id == "s1")
    assert l2.created_at > gone.created_at and l2.content == gone.content and l2.mode == "extractive"
    assert check_store(store, extractive_cfg, "u") == []


def test_abstractive_ancestors_stay_stale_without_an_llm(engine, embedder):
    engine.add_exchange("u", "s1", "My favourite colour is blue.", "Nice.", T0)
    engine.consolidate("u", flush=True)
    seg = engine.store.nodes("u", 1)[0]
    cfg = engine.config.with_overrides(consolidation_mode="extractive")
    MemoryEngine(cfg, engine.store, embedder, None).edit_memory(seg.id, "User: My favourite colour is green.")
    l2 = engine.store.nodes("u", 2)[0]
    assert l2.mode == "abstractive" and l2.stale  # waits for an LLM; not silently rewritten in another mode


def _hybrid_engine(store, embedder, tmp_path, reply):
    cfg = load_config(env={}, db_path=str(tmp_path / "x.duckdb"), consolidation_mode="hybrid")
    backend = ScriptedBackend(reply, model_id="titler")
    return MemoryEngine(cfg, store, embedder, LLM(backend, store)), backend


def test_hybrid_nodes_are_the_extract_under_a_grounded_llm_title(store, embedder, tmp_path):
    _two_sessions(store)
    eng, backend = _hybrid_engine(store, embedder, tmp_path, lambda r: '{"title": "Ann adopts a cat named Miso"}')
    eng.consolidate("u", flush=True)
    l2 = store.nodes("u", 2)[0]
    head, _, body = l2.content.partition("\n\n")
    assert head == "Ann adopts a cat named Miso" and body.startswith("Ann: I adopted a cat named Miso")
    assert (l2.mode, l2.model_id, l2.prompt_version) == ("hybrid", "titler", "extractive-v1+title-v1")
    titles = [c for c in backend.calls if "title" in (c.json_schema or {}).get("properties", {})]
    assert all(c.max_tokens == 48 for c in titles) and len(titles) == 6  # 2 L2, 2 L3, L4, L5 (and memory-item calls)
    assert "Ann adopts" not in store.nodes("u", 3)[0].content.partition("\n\n")[2]  # titles are not selected


@pytest.mark.parametrize("reply, reason", [
    ('{"title": "Visiting the Eiffel Tower and Louvre museum in Paris with croissants"}', "unsupported"),
    ("no json at all", "unusable"),
])
def test_a_hybrid_title_that_is_dropped_or_unusable_leaves_the_extract_and_an_audit_row(
        store, embedder, tmp_path, reply, reason):
    _two_sessions(store)
    eng, _ = _hybrid_engine(store, embedder, tmp_path, lambda r: reply)
    eng.consolidate("u", flush=True)
    for n in store.nodes("u"):
        if n.level > 1:
            assert n.mode == "hybrid" and n.model_id == "extractive" and "\n\n" not in n.content
            assert "Eiffel" not in n.content
    rows = store.con.execute("SELECT node_id, detail FROM audit WHERE action = 'hybrid-title-missing'").fetchall()
    assert len(rows) == 6 and all(f'"reason": "{reason}"' in d for _, d in rows)


def test_migration_v2_records_the_mode_of_existing_nodes(tmp_path, embedder):
    import duckdb
    import numpy as np

    from timem.store import Store
    from timem.store.migrations import MIGRATIONS

    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    MIGRATIONS[0](con, embedder.dim)
    con.execute("INSERT INTO schema_version VALUES (1)")
    vec = (np.ones(embedder.dim) / np.sqrt(embedder.dim)).tolist()
    for nid, level, model in [("a", 1, "verbatim"), ("b", 1, "gpt"), ("c", 2, "gpt"), ("d", 5, "gpt")]:
        con.execute("INSERT INTO nodes VALUES (?, 'u', ?, 'w', NULL, ?, ?, 'x', [], [], [], NULL, ?, 'p', ?, "
                    "'active', FALSE, ?)", [nid, level, T0.replace(tzinfo=None), T0.replace(tzinfo=None), model,
                                            T0.replace(tzinfo=None), vec])
    con.close()
    s = Store(path, embedder.model_id, embedder.dim)
    assert s.schema_version == len(MIGRATIONS)
    assert {n.id: n.mode for n in s.nodes("u")} == {"a": "verbatim", "b": "llm", "c": "abstractive", "d": "abstractive"}
    s.close()
