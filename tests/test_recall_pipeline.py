"""Recall over a real DuckDB tree with real MiniLM embeddings and a scripted LLM.

Covers: user isolation in every planner/gate/complexity mode, ancestor walk order (descending
fused score, not time), missing levels, gate fallbacks, the token budget, the persisted trace,
answering, and the LoCoMo-style coverage evaluation.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from helpers import TIMEM_QUOTAS

from timem.config import Config
from timem.errors import ConfigError, LLMError
from timem.llm.client import LLM
from timem.llm.fake import ScriptedBackend
from timem.models import Level, MemoryNode, Role, Turn
from timem.recall import answer, load_traces, recall
from timem.recall.evaluate import answer_in_context, evaluate_recall, evidence_ids, normalize_answer
from timem.recall.options import RecallOptions
from timem.tokens import count_tokens

QT = datetime(2023, 6, 1, 12, 0, tzinfo=UTC)
SESSIONS = {  # session -> (start, [(speaker, text)])
    "S1": (datetime(2023, 5, 1, 10, 0, tzinfo=UTC), [
        ("Caroline", "I adopted a puppy named Max from the animal shelter."),
        ("Melanie", "I painted a sunrise over the lake last weekend.")]),
    "S2": (datetime(2023, 5, 8, 10, 0, tzinfo=UTC), [
        ("Caroline", "I went to an LGBTQ support group meeting yesterday; it was moving."),
        ("Melanie", "We went camping in the mountains with the kids.")]),
    "S3": (datetime(2023, 5, 15, 10, 0, tzinfo=UTC), [
        ("Caroline", "The support group gave me the courage to start counseling studies."),
        ("Melanie", "My daughter started piano lessons this week.")]),
}


def _add(store, embedder, node: MemoryNode) -> MemoryNode:
    store.add_node(node, embedder.embed([node.content])[0])
    return node


def _mk(uid, nid, level, key, start, end, content, children=(), session=None, turns=()) -> MemoryNode:
    return MemoryNode(id=f"{uid}:{nid}", user_id=uid, level=Level(level), window_key=key, span_start=start,
                      span_end=end, content=content, child_ids=[f"{uid}:{c}" for c in children],
                      source_turn_ids=list(turns), session_id=session, model_id="verbatim", prompt_version="test")


def build_tree(store, embedder, uid: str, marker: str = "") -> None:
    """Three weekly sessions of two L1 leaves each, with L2 sessions, L3 days, L4 weeks and one L5 month.

    Nodes are created children first and embedded in one batch (the embedder is slow on a busy machine).
    """
    nodes: list[MemoryNode] = []
    weeks = []
    for si, (sess, (start, lines)) in enumerate(SESSIONS.items(), start=1):
        leaves, turns = [], []
        for j, (speaker, text) in enumerate(lines, start=1):
            at = start + timedelta(minutes=j)
            turn = Turn(id=f"{uid}:{sess}:{j}", user_id=uid, session_id=sess, seq=j - 1, speaker=speaker,
                        role=Role.OTHER, text=text, event_time=at, source_ref=f"D{si}:{j}")
            turns.append(turn)
            leaves.append(_mk(uid, f"{sess}-{j}", 1, f"segment:{turn.id}", at, at, f"{speaker}: {text}{marker}",
                              session=sess, turns=[turn.id]))
        store.add_turns(turns)
        day = start.date().isoformat()
        monday, sunday = start.date(), start.date() + timedelta(days=6)
        nodes += [*leaves,
                  _mk(uid, f"L2-{sess}", 2, f"session:{sess}", leaves[0].span_start, leaves[-1].span_end,
                      f"Session {sess}: " + " ".join(n.content for n in leaves),
                      children=[n.id.split(":", 1)[1] for n in leaves], session=sess),
                  _mk(uid, f"L3-{day}", 3, f"day:{day}", start.replace(hour=0), start.replace(hour=23),
                      f"Day {day}: summary of session {sess}{marker}", children=[f"L2-{sess}"]),
                  _mk(uid, f"L4-{day}", 4, f"week:{monday}..{sunday}", start.replace(hour=0),
                      start.replace(hour=0) + timedelta(days=7), f"Week of {day}{marker}", children=[f"L3-{day}"])]
        weeks.append(f"L4-{day}")
    nodes.append(_mk(uid, "L5-2023-05", 5, "month:2023-05", datetime(2023, 5, 1, tzinfo=UTC),
                     datetime(2023, 6, 1, tzinfo=UTC), f"May 2023 profile: Caroline and Melanie{marker}",
                     children=weeks))
    for node, vec in zip(nodes, embedder.embed([n.content for n in nodes]), strict=True):
        store.add_node(node, vec)


def scripted(store, *, gate_keep=None, gate_error=False, planner_complexity="hybrid") -> tuple[LLM, ScriptedBackend]:
    """An LLM answering planner, gate and answer prompts; gate keeps ``gate_keep`` (default: all numbers)."""

    def reply(req):
        system = req.messages[0].content
        if system.startswith("You plan"):
            return json.dumps({"complexity": planner_complexity, "keywords": ["Caroline", "support group"],
                               "time_expression": None})
        if system.startswith("You select"):
            if gate_error:
                raise LLMError("gate endpoint down")
            numbers = [int(n) for n in re.findall(r"^\[(\d+)\]", req.messages[-1].content, re.MULTILINE)]
            return json.dumps({"keep": numbers if gate_keep is None else gate_keep})
        return "On 7 May 2023."

    backend = ScriptedBackend(reply)
    return LLM(backend, store, max_retries=0), backend


@pytest.fixture()
def two_users(store, embedder):
    build_tree(store, embedder, "u1")
    build_tree(store, embedder, "u2", marker=" [u2]")
    return store


@pytest.fixture(scope="module")
def shared_two_users(tmp_path_factory, embedder):
    """One two-user store for the read-only isolation matrix (traces accumulate; nobody counts them)."""
    from timem.store import Store

    s = Store(tmp_path_factory.mktemp("iso") / "timem.duckdb", embedder.model_id, embedder.dim)
    build_tree(s, embedder, "u1")
    build_tree(s, embedder, "u2", marker=" [u2]")
    yield s
    s.close()


@pytest.mark.parametrize("planner", ["centroid", "llm"])
@pytest.mark.parametrize("gate", ["llm", "score", "off"])
@pytest.mark.parametrize("complexity", [None, "simple", "complex"])
def test_user_isolation_in_every_mode(shared_two_users, embedder, planner, gate, complexity):
    store = shared_two_users
    llm, backend = scripted(None)  # no response cache: every mode really prompts the backend
    res = recall(store, embedder, llm, Config(), "u1", "When did Caroline go to the LGBTQ support group?", QT,
                 options=RecallOptions(planner=planner, gate=gate, complexity=complexity))
    t = res.trace
    ids = ([c.node_id for c in t.candidates] + [a.node_id for a in t.ancestors] + t.node_ids
           + [d.node_id for d in t.gate.decisions] + [n.id for n in res.nodes])
    assert ids and all(i.startswith("u1:") for i in ids)
    assert all(n.user_id == "u1" for n in res.nodes)
    assert "[u2]" not in res.context
    assert not any("[u2]" in m.content for call in backend.calls for m in call.messages)
    assert len(t.candidates) == 6  # every u1 leaf, no u2 leaf
    assert t.plan.planner == ("override" if complexity else planner)


def test_cross_user_parent_link_is_never_followed(two_users, embedder):
    store = two_users
    # a corrupt link: a u2 node claims a u1 leaf as its child
    _add(store, embedder, _mk("u2", "evil", 2, "session:evil", datetime(2023, 5, 8, 10, 1, tzinfo=UTC),
                              datetime(2023, 5, 8, 10, 1, tzinfo=UTC), "u2 session [u2]", children=[]))
    store.con.execute("UPDATE nodes SET parent_id = 'u2:evil' WHERE id = 'u1:S2-1'")
    res = recall(store, embedder, None, Config(gate="off"), "u1", "LGBTQ support group", QT,
                 options=RecallOptions(complexity="simple"))
    assert "u2:evil" not in [a.node_id for a in res.trace.ancestors]
    assert "[u2]" not in res.context


def test_ancestors_follow_descending_fused_score_not_time(store, embedder):
    build_tree(store, embedder, "u1")
    cfg = Config(quotas={"simple": {1: 20, 2: 1, 3: 2}, "hybrid": {1: 20, 2: 1}, "complex": {1: 20, 2: 1}})
    res = recall(store, embedder, None, cfg, "u1", "What gave Caroline the courage to start counseling studies?", QT,
                 options=RecallOptions(complexity="simple", gate="off"))
    t = res.trace
    kept = [c for c in t.candidates if c.kept]
    by_time = sorted(kept, key=lambda c: c.node_id)  # ids sort as S1 < S2 < S3, i.e. by time
    assert kept[0].node_id == "u1:S3-1"  # the most relevant leaf is in the latest session
    assert by_time[0].node_id.startswith("u1:S1")  # ... so walking in time order would start elsewhere
    added = [a for a in t.ancestors if a.added]
    assert [a.node_id for a in added if a.level == 2] == ["u1:L2-S3"]  # L2 quota 1 goes to the best leaf
    day_nodes = [a for a in added if a.level == 3]
    assert day_nodes[0].node_id == "u1:L3-2023-05-15" and day_nodes[0].via_leaf == "u1:S3-1"
    assert day_nodes[0].leaf_rank == 1 and day_nodes[0].path == ["u1:L2-S3", "u1:L3-2023-05-15"]
    second_day = {"u1:L2-S1": "u1:L3-2023-05-01", "u1:L2-S2": "u1:L3-2023-05-08"}
    rank2_session = "u1:L2-" + kept[1].node_id.split(":")[1].split("-")[0]
    if rank2_session != "u1:L2-S3":
        assert day_nodes[1].node_id == second_day[rank2_session]
    refused = [a for a in t.ancestors if not a.added]
    assert refused and all("quota" in a.reason for a in refused)
    assert len(day_nodes) == 2 and not any(a.level in (4, 5) for a in t.ancestors)


def test_missing_level_is_skipped_not_the_end_of_the_climb(store, embedder):
    start = datetime(2023, 5, 2, 9, tzinfo=UTC)
    _add(store, embedder, _mk("u1", "leaf", 1, "segment:x", start, start, "Anna: I bought a red kayak."))
    _add(store, embedder, _mk("u1", "day", 3, "day:2023-05-02", start.replace(hour=0), start.replace(hour=23),
                              "Day: kayak", children=["leaf"]))  # no L2 session node
    _add(store, embedder, _mk("u1", "month", 5, "month:2023-05", datetime(2023, 5, 1, tzinfo=UTC),
                              datetime(2023, 6, 1, tzinfo=UTC), "Profile: Anna loves water sports",
                              children=["day"]))  # no L4 week node
    res = recall(store, embedder, None, Config(**TIMEM_QUOTAS), "u1", "What did Anna buy?", QT,
                 options=RecallOptions(complexity="simple", gate="off"))
    added = {a.node_id: a for a in res.trace.ancestors if a.added}
    assert set(added) == {"u1:month"}  # L2 absent, L3 not in the simple plan, L5 still reached
    assert added["u1:month"].path == ["u1:day", "u1:month"]
    assert res.context.splitlines()[0] == "Conversation excerpts:" and "L5 profile:" in res.context


def test_llm_gate_keeps_what_the_model_says(two_users, embedder):
    llm, _ = scripted(two_users, gate_keep=[1, 99])
    res = recall(two_users, embedder, llm, Config(recall_neighbours="none"), "u1", "LGBTQ support group", QT,
                 options=RecallOptions(complexity="simple", gate="llm"))
    gate = res.trace.gate
    assert gate.applied == "llm" and gate.fallback is None and gate.invalid_numbers == [99]
    assert res.trace.node_ids == [res.trace.candidates[0].node_id]
    assert sum(d.kept for d in gate.decisions) == 1
    assert [c.purpose for c in res.trace.llm_calls] == ["recall.gate"]
    assert res.trace.llm_calls[0].prompt_tokens > 0


def test_gate_fallback_when_model_keeps_nothing(two_users, embedder):
    llm, _ = scripted(two_users, gate_keep=[])
    res = recall(two_users, embedder, llm, Config(), "u1", "LGBTQ support group", QT,
                 options=RecallOptions(complexity="simple", gate="llm"))
    gate = res.trace.gate
    assert gate.applied == "top-leaves" and "no valid id" in gate.fallback
    assert gate.fallback in res.trace.notes
    kept = [d for d in gate.decisions if d.kept]
    assert kept and all(d.level == 1 for d in kept)


def test_gate_fallback_when_call_fails(two_users, embedder):
    llm, _ = scripted(two_users, gate_error=True)
    res = recall(two_users, embedder, llm, Config(), "u1", "LGBTQ support group", QT,
                 options=RecallOptions(complexity="simple", gate="llm"))
    gate = res.trace.gate
    assert gate.applied == "score" and "gate endpoint down" in gate.fallback
    assert res.trace.llm_calls[0].error and res.nodes


def test_no_llm_substitutions_are_recorded_and_explicit_requests_refused(two_users, embedder):
    res = recall(two_users, embedder, None, Config(planner="llm", gate="llm", propagation="off", second_hop=0), "u1",
                 "LGBTQ support group", QT)  # without propagation's and the second hop's notes: the two substitutions
    assert res.trace.plan.planner == "centroid" and res.trace.gate.applied == "score"
    assert len(res.trace.notes) == 2 and res.trace.plan.note
    with pytest.raises(ConfigError):
        recall(two_users, embedder, None, Config(), "u1", "q", QT, options=RecallOptions(gate="llm"))


def test_unknown_user_gets_an_empty_context_without_llm_calls(two_users, embedder):
    llm, backend = scripted(None)
    res = recall(two_users, embedder, llm, Config(), "nobody", "LGBTQ support group", QT,
                 options=RecallOptions(complexity="simple"))
    assert res.context == "" and res.nodes == [] and res.trace.candidates == []
    assert res.trace.gate.applied == "none" and backend.calls == []
    with pytest.raises(ConfigError):
        recall(two_users, embedder, None, Config(), "u1", "q", QT, options=RecallOptions(gate="strict"))


def test_token_budget_caps_context(two_users, embedder):
    res = recall(two_users, embedder, None, Config(token_budget=60, **TIMEM_QUOTAS), "u1", "What did Melanie do?", QT,
                 options=RecallOptions(complexity="complex", gate="off"))
    assert 0 < res.mem_len <= 60 and count_tokens(res.context) == res.mem_len
    dropped = [d for d in res.trace.gate.decisions if not d.kept]
    assert dropped and all("token budget" in d.reason for d in dropped)
    full = recall(two_users, embedder, None, Config(**TIMEM_QUOTAS), "u1", "What did Melanie do?", QT,
                  options=RecallOptions(complexity="complex", gate="off"))
    assert full.mem_len > 60 and full.mem_len <= 1000
    assert {n.level for n in full.nodes} == {1, 2, 3, 4, 5}
    for budget in (5, 25, 45, 90, 150, 230):
        r = recall(two_users, embedder, None, Config(token_budget=budget, **TIMEM_QUOTAS), "u1",
                   "What did Melanie do?", QT, options=RecallOptions(complexity="complex", gate="off", persist=False))
        assert r.mem_len <= budget and count_tokens(r.context) == r.mem_len
        assert (r.context == "") == (r.nodes == [])


def test_trace_is_persisted_and_reloadable(two_users, embedder):
    # the fused score is the λ-weighted sum alone: no time term, nothing propagated from the tree
    cfg = Config(recall_lambda=0.9, time_channel="off", propagation="off")
    res = recall(two_users, embedder, None, cfg, "u1", "Did Caroline adopt a puppy last month?", QT)
    t = res.trace
    assert set(t.latency_ms) >= {"plan", "leaves", "ancestors", "gate", "context", "total"}
    for c in t.candidates:
        assert c.fused == pytest.approx(0.9 * c.semantic + 0.1 * c.bm25, abs=1e-5)
    assert t.plan.time_expression == "last month" and t.bm25_query.startswith("Did Caroline")
    saved = load_traces(two_users, "u1")
    assert len(saved) == 1 and saved[0].model_dump(mode="json") == t.model_dump(mode="json")
    assert load_traces(two_users, "u2") == []
    assert recall(two_users, embedder, None, Config(), "u1", "x", QT, RecallOptions(persist=False))
    assert len(load_traces(two_users)) == 1


def test_answer_uses_context_and_question_date_and_saves_the_answer(two_users, embedder):
    llm, backend = scripted(two_users)
    out = answer(two_users, embedder, llm, Config(timezone="Europe/Berlin"), "u1",
                 "When did Caroline go to the LGBTQ support group?", QT, options=RecallOptions(gate="score"))
    assert out.answer == "On 7 May 2023."
    prompt = backend.calls[-1].messages[-1].content
    assert "Thursday, 01 June 2023, 14:00" in prompt and "LGBTQ support group" in prompt
    saved = load_traces(two_users, "u1")[0]
    assert saved.answer == "On 7 May 2023." and "answer" in saved.latency_ms
    assert [c.purpose for c in saved.llm_calls] == ["answer"]
    with pytest.raises(ConfigError):
        answer(two_users, embedder, None, Config(), "u1", "q", QT)


@pytest.mark.parametrize("question, expected", [("Which car do I drive?", "I don't know"),
                                                ("我的猫叫什么名字？", "我不知道")])
def test_nothing_recalled_is_answered_dont_know_without_the_llm(two_users, embedder, question, expected):
    """Issue 27 #5: given no memory, the embedded model invented "the University of Oxford" and answered 你好！ to a
    Chinese question. With an empty context and nothing pinned, ``ask`` answers "don't know" in the question's
    language and calls no model; in a chat (an asker) the model is still asked (a greeting needs a reply)."""
    llm, backend = scripted(two_users)
    out = answer(two_users, embedder, llm, Config(), "u1", question, QT, options=RecallOptions(gate="score"))
    assert out.recall.context == "" and out.answer.startswith(expected), out.answer
    assert [c for c in backend.calls if c.messages[0].content.startswith("You answer")] == []
    saved = load_traces(two_users, "u1")[0]
    assert saved.answer == out.answer and saved.llm_calls == [] and any("don't know" in n for n in saved.notes)
    chat = answer(two_users, embedder, llm, Config(), "u1", question, QT,
                  options=RecallOptions(gate="score", asker="Caroline"))
    assert chat.answer == "On 7 May 2023."  # the scripted model's reply: it was asked


def test_evaluation_reports_coverage_per_category(two_users, embedder):
    questions = [
        {"question_id": "q1", "question": "What is the name of Caroline's puppy?", "answer": "Max", "category": 4,
         "evidence": ["D1:1"], "question_time": QT},
        {"question_id": "q2", "question": "When did Caroline go to the support group?", "answer": "7 May 2023",
         "category": 2, "evidence": ["D2:1; D3:1"], "question_time": QT},
        {"question_id": "q3", "question": "What is Caroline's pet?", "answer": "x", "category": 5,
         "evidence": ["D1:1"], "question_time": QT},
        {"question_id": "q4", "question": "Which planet?", "answer": "Mars", "category": 1,
         "evidence": ["D9:9"], "question_time": QT},
        {"question_id": "q5", "question": "Which moon?", "answer": "", "category": 1, "evidence": [],
         "question_time": QT},
    ]
    report = evaluate_recall(two_users, embedder, None, Config(), "u1", questions)
    assert report["n"] == 4 and set(report["per_category"]) == {"1 multi-hop", "2 temporal", "4 single-hop"}
    assert (report["overall"]["n_evidence"], report["overall"]["n_answer"]) == (3, 3)  # q5 has neither
    assert report["per_category"]["1 multi-hop"]["evidence_recall"] == 0.0  # over q4 only, not q5
    rows = {r["question_id"]: r for r in report["questions"]}
    assert rows["q1"]["covered"] == ["D1:1"] and rows["q1"]["full_coverage"] and rows["q1"]["answer_in_context"]
    assert rows["q2"]["evidence"] == ["D2:1", "D3:1"] and rows["q2"]["full_coverage"]
    assert rows["q4"]["missing"] == ["D9:9"] and rows["q4"]["evidence_recall"] == 0.0
    assert report["per_category"]["4 single-hop"]["full_coverage"] == 1.0
    assert report["overall"]["mean_mem_len"] > 0
    assert load_traces(two_users) == []  # evaluation does not persist traces by default


def test_answer_normalisation():
    assert normalize_answer("The  Sunday, before 25 May!") == "sunday before 25 may"
    assert answer_in_context("a puppy", "- [Mon] Caroline adopted the PUPPY named Max.")
    assert not answer_in_context("no", "November plans")
    assert not answer_in_context("", "anything")
    assert answer_in_context(2022, "painted in 2022.")
    assert evidence_ids(["D8:6; D9:17", "D1:3", "D1:3"]) == ["D8:6", "D9:17", "D1:3"]


def test_the_question_is_embedded_once_when_it_names_nobody(two_users, embedder):
    """The centroid planner embeds the question with names masked and as asked, in one batch; a question that names
    nobody is the same text twice, so it is embedded once (half the plan stage's MiniLM work), with the same
    vectors and the same recall."""
    store = two_users
    batches: list[list[str]] = []

    class Spy:
        model_id, dim = embedder.model_id, embedder.dim

        def embed(self, texts):
            batches.append(list(texts))
            return embedder.embed(texts)

    q = "Who went camping in the mountains?"
    spied = recall(store, Spy(), None, Config(gate="off"), "u1", q, QT, options=RecallOptions(persist=False))
    assert [b for b in batches if q in b] == [[q]]  # (the planner's examples may be embedded first)
    plain = recall(store, embedder, None, Config(gate="off"), "u1", q, QT, options=RecallOptions(persist=False))
    assert spied.context == plain.context
    assert [c.model_dump() for c in spied.trace.candidates] == [c.model_dump() for c in plain.trace.candidates]
    batches.clear()
    named = "When did Caroline go to the LGBTQ support group?"
    recall(store, Spy(), None, Config(gate="off"), "u1", named, QT, options=RecallOptions(persist=False))
    assert [b for b in batches if named in b] == [["When did someone go to the LGBTQ support group?", named]]
