"""The memory layer (issue 14): items with supersession, corrections, near-duplicate merge, recall as of a time,
forgetting (explicit and by decay), erase, and the LLM extractor's failure modes. Real DuckDB, real MiniLM,
the scripted fake LLM; the scenario conversation is tests/memory_scenario.py (English and Chinese)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from memory_scenario import EN, ZH, write
from test_cli import cli_env, run  # noqa: F401  (fixture)

from timem.config import load_config
from timem.datasets import load_dataset
from timem.engine import MemoryEngine
from timem.llm.client import LLM
from timem.llm.fake import ScriptedBackend
from timem.llm.protocol import Message
from timem.memory.grounding import check_statement
from timem.memory.rules import extract_statements
from timem.models import Level
from timem.recall.items import decay_weight

QT = "2024-06-20T12:00:00"
AT = datetime(2024, 6, 20, 12, tzinfo=UTC)


@pytest.mark.parametrize(("text", "expected"), [
    ("I live in Lisbon now, in a small flat.", [("home city", "Lisbon")]),
    ("We moved to Porto last weekend!", [("home city", "Porto")]),
    ("I work at Acme Studio as a graphic designer.", [("employer", "Acme Studio"), ("job", "graphic designer")]),
    ("I switched from coffee to green tea.", [("drink", "green tea")]),
    ("I drink black coffee every morning.", [("morning drink", "black coffee")]),
    ("I'm vegetarian now.", [("diet", "vegetarian")]),
    ("Actually, it's Braga, not Porto.", [(None, "Braga")]),
    ("我住在上海。", [("home city", "上海")]),
    ("我搬到了北京", [("home city", "北京")]),
    ("我现在在腾讯工作。", [("employer", "腾讯")]),
    ("我不喝咖啡了，只喝茶", [("drink", "茶")]),
    ("不对，我住在杭州，不是北京。", [("home city", "杭州")]),
    ("How was your day? The weather in Lisbon is nice.", []),
    ("Just moved to Madrid with my partner.", [("home city", "Madrid")]),  # chat style: no subject
    ("Big news: finally moved back to Porto!", [("home city", "Porto")]),
    ("She just moved to Faro.", []),
    # a question states nothing (a new-user trial: 我现在住在哪个城市？ became "home city: 哪个城市", served as current)
    ("我现在住在哪个城市？", []), ("我住在上海吗？", []), ("我在哪家公司工作？", []), ("Do I live in Lisbon?", []),
    ("I live in Lisbon. Where do you live?", [("home city", "Lisbon")]),
    # 2026-12-04: the labelled set's last misses
    ("I don't drink coffee anymore, tea all the way.", [("drink", "tea")]),
    ("Honestly I drink four coffees a day now.", [("drink", "coffee")]),
    ("Swimming three mornings a week now.", [("hobby", "swimming")]),
    ("Cooking every evening for the kids is exhausting.", []),
    ("My hobby is hiking.", [("hobby", "hiking")]), ("Pottery is my hobby.", [("hobby", "pottery")]),
    ("我很喜欢爵士乐。", [("likes", "爵士乐")]), ("我是周杰伦的铁杆粉丝。", [("likes", "周杰伦")]),
    ("我讨厌香菜。", [("dislikes", "香菜")]), ("我姐姐是周杰伦的粉丝。", []), ("我喜欢你。", []),
    # a new-user trial: 我现在喜欢咖啡 read nothing; 我开始喜欢瑜伽了 is a like, not "hobby: 喜欢瑜伽"
    ("我现在喜欢咖啡。", [("likes", "咖啡")]), ("我开始喜欢瑜伽了。", [("likes", "瑜伽")]),
    ("我喜欢吃寿司。", [("likes", "寿司")]),
    # a third trial: two opinion clauses in one sentence gave likes "jazz and hate techno", or one of the two
    ("I love jazz and hate techno.", [("likes", "jazz"), ("dislikes", "techno")]),
    ("I hate jazz but I love blues.", [("dislikes", "jazz"), ("likes", "blues")]),
    ("I love jazz, I hate techno.", [("likes", "jazz"), ("dislikes", "techno")]),
    ("They love cooking and hiking, like me.", []),  # ", like me" is no second clause
    # a bare "and love" is mostly the noun: no clause unless it turns an "I hate …" before it (LoCoMo dev turns)
    ("It showed me that tough times don't last - hope and love exist.", []),
    ("I'm much happier being around those who accept and love me.", []),
    ("Actually, I hate jazz and love techno.", [("dislikes", "jazz"), ("likes", "techno")]),
])
def test_rule_extractor_reads_first_person_statements(text, expected):
    assert [(s.attribute, s.value) for s in extract_statements(text)] == expected


@pytest.mark.parametrize(("text", "expected"), [
    # a fourth new-user trial, with no LLM: each of these read nothing, or "hiking" only
    ("I love the blues.", [("preference", "likes", "blues")]),  # "the" left out, as in "a fan of the Beatles"
    ("I like hiking.", [("preference", "hobby", "hiking")]),
    ("I love hiking and swimming.", [("preference", "hobby", "hiking"), ("preference", "hobby", "swimming")]),
    ("I'm from Berlin.", [("fact", "hometown", "Berlin")]),
    ("I grew up in Berlin.", [("fact", "hometown", "Berlin")]),
    # still nothing, or no more than before: a remark on a picture, a trip, a list going on to no activity, the
    # hometown said outright
    ("I love the photo!", []), ("I love the way you think.", []), ("I'm back from Berlin.", []),
    ("I'm not from Berlin.", []), ("I love the self-acceptance and love theme.", []),
    ("I love cooking and caring for my kids.", [("preference", "hobby", "cooking")]),
    ("I love swimming and running my own studio.", [("preference", "hobby", "swimming")]),
    ("My hometown is Cork, but I grew up in Dublin.", [("fact", "hometown", "Cork")]),
])
def test_rules_read_the_blues_a_list_of_hobbies_and_where_one_is_from(text, expected):
    got = extract_statements(text)
    assert [(s.kind, s.attribute, s.value) for s in got] == expected
    assert all(check_statement(s.attribute, s.value, s.text, ends=s.replaces) is None for s in got), text


@pytest.mark.parametrize(("text", "expected"), [  # issue 27 #1: "What is my job?" got "I don't know", 0 memories
    ("I started working as a nurse last week.", [("job", "nurse")]),
    ("I am a nurse.", [("job", "nurse")]), ("I'm a nurse now.", [("job", "nurse")]),
    ("I'm now a nurse.", [("job", "nurse")]), ("I became a nurse.", [("job", "nurse")]),
    ("I've been working as a nurse since May.", [("job", "nurse")]), ("I got a job as a nurse.", [("job", "nurse")]),
    ("I'm a nurse at St Mary's.", [("employer", "St Mary's"), ("job", "nurse")]),
    ("I'm a physiotherapist at Santa Maria hospital.",
     [("employer", "Santa Maria hospital"), ("job", "physiotherapist")]),
    ("I am also a registered nurse.", [("job", "registered nurse")]),
    ("I quit the bank and now I freelance as a photographer.", [("job", "photographer")]),
    ("我是护士。", [("job", "护士")]), ("我现在是一名护士。", [("job", "护士")]),
    ("我开始当护士了。", [("job", "护士")]),
    # "I'm a …" that names no occupation, someone else's job, a question, the past, a judgement: no job
    ("I am a big fan of jazz.", [("likes", "jazz")]), ("I'm a bit tired.", []),
    ("I am a vegetarian.", [("diet", "vegetarian")]),
    ("I'm a mother of two.", []), ("I am a member of the club.", []), ("My sister is a nurse.", []),
    ("I'm a morning person.", []), ("I am a huge Beatles fan.", [("likes", "Beatles")]), ("I'm a nurse? No way.", []),
    ("I'm a terrible cook.", []), ("I'm a retired teacher.", []), ("I'm not a nurse.", []),
    ("I used to work as a nurse.", []), ("I was a nurse for ten years.", []),
    ("我姐姐是护士。", []), ("我是上海人。", []), ("我是一个好人。", []),
])
def test_job_rules_read_the_copula_only_for_an_occupation(text, expected):
    got = [(s.attribute, s.value) for s in extract_statements(text)]
    assert got == expected
    assert all(check_statement(s.attribute, s.value, s.text) is None for s in extract_statements(text)), text


def test_changes_ends_and_corrections_are_flagged():
    (switch,) = extract_statements("I switched from coffee to green tea.")
    assert switch.replaces == "coffee" and not switch.ends_only
    (stop,) = extract_statements("I don't drink coffee anymore.")
    assert stop.ends_only and stop.replaces == "coffee"
    (lost,) = extract_statements("Lost my job as a banker yesterday, so I'm starting a business.")  # LoCoMo
    assert lost.ends_only and (lost.attribute, lost.replaces) == ("job", "banker")
    (corr,) = extract_statements("Actually, I moved to Braga, not Porto.")
    assert corr.correction and corr.attribute == "home city"
    # news of a move is a change, not a correction (the old city held until then): found by a new user
    for news in ("Actually I moved to Braga last week.", "其实我搬到了北京。"):
        (moved,) = extract_statements(news)
        assert not moved.correction and moved.attribute == "home city", news
    assert extract_statements("Actually, I live in Braga.")[0].correction


def _engine(tmp_path, store, embedder, responses=None, **overrides) -> MemoryEngine:
    """An engine on ``store``; with scripted ``responses`` its LLM also extracts the memory items (``auto`` would
    read with the rules: the backend is not an OpenAI-compatible endpoint)."""
    if responses is not None:
        overrides.setdefault("memory_extractor", "llm")
    cfg = load_config(env={}, db_path=store.path, llm_backend="none", cache_dir=tmp_path / "cache",
                      consolidation_mode="extractive", **overrides)
    llm = LLM(ScriptedBackend(responses), store) if responses is not None else None
    return MemoryEngine(cfg, store, embedder, llm)


def _ingest(eng: MemoryEngine, tmp_path, user_id: str, rows) -> None:
    f = write(tmp_path / f"{user_id}.jsonl", user_id, rows)
    eng.ingest(load_dataset(f, "jsonl", tz=eng.config.time.tz, user_tz=eng.config.time.user_tz))


def _first(context: str) -> str:
    """The item lines at the head of a context (before the first blank line)."""
    return context.split("\n\n")[0]


SCENARIO = [
    ("mia", EN, [
        ("Where does Mia live now?", "home city: Braga", "Porto"),
        ("Where did Mia live in March?", "home city: Lisbon", None),
        ("Where does Mia work now?", "Blue Harbor", None),
        ("Where did Mia work in February?", "Acme Studio", None),
        ("What does Mia drink in the morning these days?", "morning drink: green tea (superseded: black coffee", None),
        ("What did Mia drink in the morning in March?", "morning drink: black coffee", None),
    ]),
    ("xiaomei", ZH, [
        ("小美现在住在哪里？", "home city: 杭州", "北京"),
        ("小美三月住在哪里？", "home city: 上海", None),
        ("小美现在在哪里工作？", "employer: 字节跳动", None),
        ("小美二月在哪里工作？", "employer: 腾讯", None),
        ("小美早上喝什么？", "morning drink: 绿茶 (superseded: 黑咖啡", None),
        ("小美三月早上喝什么？", "morning drink: 黑咖啡", None),
    ]),
]


def test_a_question_about_now_and_a_past_month_gets_both(tmp_path, store, embedder):
    """A new-user trial asked "What do I do for work now, and did I run in March?": the March window left the
    open job out, so the context pointed at the old one."""
    eng = _engine(tmp_path, store, embedder)
    _ingest(eng, tmp_path, "mia", EN)
    head = _first(eng.recall("mia", "Where does Mia live now, and where did she live in March?", AT).context)
    assert "home city: Braga" in head and "home city: Lisbon" in head, head
    head = _first(eng.recall("mia", "Where did Mia live in March?", AT).context)
    assert "home city: Lisbon" in head and "home city: Braga" not in head, head  # the past alone stays the past


@pytest.mark.slow  # one CLI process per question: the embedder loads each time (~30 s)
@pytest.mark.parametrize(("user", "rows", "questions"), SCENARIO)
def test_scenario_through_ask_recall_only(cli_env, user, rows, questions):  # noqa: F811
    db = str(cli_env / "t.duckdb")
    path = write(cli_env / f"{user}.jsonl", user, rows)
    assert run("ingest", str(path), "--format", "jsonl", "--llm", "none", "--mode", "extractive", "--db", db)[0] == 0
    for question, first, corrected_away in questions:
        code, out = run("ask", question, "--user", user, "--recall-only", "--at", QT, "--db", db)
        assert code == 0, out
        assert first in _first(out), (question, out)
        if corrected_away:  # the corrected value is only named as corrected
            assert f"corrected: was {corrected_away}" in _first(out)
    code, out = run("memories", "list", "--user", user, "--db", db)
    assert code == 0 and "superseded by" in out, out


@pytest.mark.parametrize(("user", "rows", "questions"), SCENARIO)
def test_scenario_through_the_engine(tmp_path, store, embedder, user, rows, questions):
    eng = _engine(tmp_path, store, embedder)
    _ingest(eng, tmp_path, user, rows)
    for question, first, corrected_away in questions:
        head = _first(eng.recall(user, question, AT).context)
        assert first in head, (question, head)
        if corrected_away:
            assert f"corrected: was {corrected_away}" in head


def test_supersession_keeps_history_and_near_duplicates_merge(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder)
    _ingest(eng, tmp_path, "mia", EN)
    items = eng.memory_items("mia")
    drinks = {i.value: i for i in items if i.attribute == "morning drink"}
    tea, coffee = drinks["green tea"], drinks["black coffee"]
    assert tea.is_open and len(tea.source_ids) == 3  # 21 Apr, 15 May and "only tea" on 18 Jun: one item
    assert coffee.valid_to == tea.event_time and coffee.superseded_by == tea.id  # closed, not deleted
    cities = {i.value: i for i in items if i.attribute == "home city"}
    assert set(cities) == {"Lisbon", "Porto", "Braga"}
    assert cities["Porto"].valid_to == cities["Porto"].valid_from
    assert cities["Porto"].superseded_by == cities["Braga"].id
    assert cities["Braga"].valid_from == cities["Porto"].valid_from  # the correction holds since the move
    assert all(i.subject == "Mia" for i in items)  # never the assistant's turns
    audit = [r[0] for r in store.con.execute("SELECT action FROM audit").fetchall()]
    assert {"item-added", "item-merged", "item-superseded"} <= set(audit)
    # extraction is resumable and runs once per segment: a second pass adds nothing
    assert eng.extract_items(["mia"])["mia"].added == 0


def test_recall_trace_records_items_and_what_they_superseded(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder)
    _ingest(eng, tmp_path, "mia", EN)
    res = eng.recall("mia", "What does Mia drink in the morning these days?", AT)
    (use,) = res.trace.items
    assert use.value == "green tea" and use.valid_to is None
    assert [(s.value, s.superseded_by) for s in use.superseded] == [("black coffee", use.item_id)]
    stored = eng.store.item(use.item_id)
    assert stored.access_count == 1 and stored.last_access == AT  # recall records the access
    (trace,) = eng.store.traces("mia")  # the stored document keeps the items whole
    assert trace["items"][0]["value"] == "green tea"


def test_decay_weight_and_floor(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder)
    _ingest(eng, tmp_path, "mia", EN)
    tea = next(i for i in eng.memory_items("mia") if i.value == "green tea")
    assert decay_weight(tea, tea.event_time, 30) == 1.0
    assert decay_weight(tea, tea.event_time + timedelta(days=30), 30) == pytest.approx(0.5)
    late = AT + timedelta(days=400)
    cfg = eng.config.with_overrides(memory_decay_half_life_days=30.0, memory_decay_floor=0.05)
    res = eng.recall("mia", "What does Mia drink in the morning these days?", late, config=cfg, persist=False)
    assert res.trace.items == [] and any("decay weight" in n for n in res.trace.notes)
    assert eng.store.item(tea.id).status == "active"  # left out of recall, kept in the store
    assert eng.recall("mia", "What does Mia drink in the morning these days?", late, persist=False).trace.items


def _leftovers(eng: MemoryEngine, needle: str) -> dict[str, object]:
    s = eng.store
    vec = eng.embedder.embed([f"Mia works at {needle}"])[0]
    hits: dict[str, object] = {}
    for level in range(1, 6):
        ids = ([i for i, _ in s.search_vector("mia", vec, level, 50)]
               + [i for i, _ in s.search_bm25("mia", needle, level, 50)])
        hits[f"L{level}"] = [n.content for n in s.nodes(ids=ids) if needle.lower() in n.content.lower()]
    hits["tree"] = [n.id for n in s.nodes("mia") if needle.lower() in n.content.lower()]
    hits["items"] = [i.label() for i in s.items("mia") if needle.lower() in i.value.lower()]
    context = eng.recall("mia", f"Where does Mia work? {needle}", AT, persist=False).context
    hits["context"] = needle.lower() in context.lower()
    return hits


def test_forget_previews_then_soft_deletes_everywhere(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder)
    _ingest(eng, tmp_path, "mia", EN)
    before = _leftovers(eng, "Blue Harbor")
    assert before["items"] and before["L1"] and before["context"]
    plan = eng.forget("mia", "I work at Blue Harbor")
    # the job item was read from the same segment only, so it goes with it: the preview says so
    # ... and the assistant's reply to that line goes with it (timem.memory.forget_scope.replies)
    assert [i.value for i in plan.items] == ["Blue Harbor", "data analyst"] and len(plan.segments) == 2
    assert len(plan.replies) == 1
    assert eng.store.items("mia", subject="Mia", attribute="employer")[-1].status == "active"  # preview only
    eng.forget("mia", "I work at Blue Harbor", confirm=True)
    after = _leftovers(eng, "Blue Harbor")
    assert after == {**{f"L{lv}": [] for lv in range(1, 6)}, "tree": [], "items": [], "context": False}, after
    assert not any(i.value == "data analyst" for i in eng.memory_items("mia"))  # its only source went too
    actions = {r[0] for r in store.con.execute("SELECT action FROM audit").fetchall()}
    assert {"forget-item", "soft-delete"} <= actions


def test_a_jsonl_export_leaves_forgotten_turns_out(tmp_path, store, embedder):
    """Found by a new user: export, then re-import, brought a forgotten fact back."""
    eng = _engine(tmp_path, store, embedder)
    _ingest(eng, tmp_path, "mia", EN)
    n_all = eng.export_jsonl("mia", tmp_path / "all.jsonl")
    eng.forget("mia", "I work at Blue Harbor", confirm=True)
    n_after = eng.export_jsonl("mia", tmp_path / "after.jsonl")
    text = (tmp_path / "after.jsonl").read_text(encoding="utf-8")
    # the line and the assistant's reply to it (timem.memory.forget_scope.replies); the other replies stay
    assert n_after == n_all - 2 and "Blue Harbor" not in text and "Thanks for telling me." in text
    # the JSON export keeps every turn (it is everything stored) and marks the two that went (a trial: no marker)
    turns = eng.export_user("mia")["turns"]
    gone = [t["text"] for t in turns if t["forgotten"]]
    assert len(gone) == 2 and any("Blue Harbor" in t for t in gone), gone
    assert len(turns) == n_all and all(t["forgotten"] is False for t in turns if t["text"] not in gone)


def test_the_json_export_holds_the_memory_items_with_their_history(tmp_path, store, embedder):
    """Found by a new user: `timem export` promised everything stored and left the facts out."""
    eng = _engine(tmp_path, store, embedder)
    _ingest(eng, tmp_path, "mia", EN)
    eng.forget("mia", "I work at Blue Harbor", confirm=True)
    data = json.loads(json.dumps(eng.export_user("mia")))
    stored = eng.memory_items("mia", status=None)
    assert stored and [(i["id"], i["value"], i["status"]) for i in data["items"]] == \
        [(i.id, i.value, i.status) for i in stored]
    assert any(i["status"] == "deleted" for i in data["items"]) and any(i["superseded_by"] for i in data["items"])


def test_forget_typed_in_chat_is_answered_and_not_stored(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder)
    t0 = datetime(2024, 5, 2, 9, tzinfo=UTC)
    eng.chat_turn("mia", "c1", "I live in Lisbon now.", t0, user_name="Mia")
    eng.chat_turn("mia", "c2", "We moved to Porto last weekend!", t0 + timedelta(days=20), user_name="Mia")
    now = eng.chat_turn("mia", "c3", "Where do I live now?", t0 + timedelta(days=21), user_name="Mia")
    assert "home city: Porto" in _first(now.trace.context)
    n_turns = len(eng.turns("mia"))
    ask = eng.chat_turn("mia", "c4", "Forget that I live in Porto.", t0 + timedelta(days=22), user_name="Mia")
    assert ask.forgotten is not None and "Porto" in ask.reply and "until you confirm" in ask.reply
    assert "home city: Porto" in _first(eng.recall("mia", "Where do I live now?", t0 + timedelta(days=22),
                                                   persist=False).context)  # a preview forgets nothing
    turn = eng.chat_turn("mia", "c4", "Forget that I live in Porto.", t0 + timedelta(days=22), user_name="Mia",
                         confirm_forget=True)
    assert turn.forgotten is not None and "Porto" in turn.reply and len(eng.turns("mia")) == n_turns
    assert "Porto" not in eng.recall("mia", "Where do I live now?", t0 + timedelta(days=23), persist=False).context
    zh = eng.chat_turn("mia", "c5", "忘掉我住在Lisbon", t0 + timedelta(days=24), user_name="Mia", confirm_forget=True)
    assert zh.forgotten is not None and "Lisbon" in zh.reply


def test_forgetting_one_sentence_names_the_other_fact_of_its_message_that_goes_with_it(tmp_path, store, embedder):
    """New-user trial: "I live in Lisbon. I adopted a grey cat called Pixel." then forget "my cat Pixel": the
    preview listed home city Lisbon among what goes, unexplained. The message's segment goes whole, so Lisbon goes
    with it; the preview now says so (and ``collateral`` names it)."""
    eng = _engine(tmp_path, store, embedder)
    t0 = datetime(2024, 5, 2, 9, tzinfo=UTC)
    eng.chat_turn("mia", "c1", "I live in Lisbon. I adopted a grey cat called Pixel.", t0, user_name="Mia")
    plan = eng.forget("mia", "my cat Pixel")
    lisbon = next(i for i in plan.items if i.value == "Lisbon")
    assert plan.collateral == {lisbon.id} and len(plan.segments) == 1
    also = "(also goes: it was said in the same message as what you asked to forget)"
    assert f"home city: Lisbon {also}" in plan.describe()
    named = eng.forget("mia", "I live in Lisbon")
    assert named.collateral == set() and any(i.value == "Lisbon" for i in named.items)


def test_forgetting_a_liking_spares_the_dislike_of_the_same_thing(tmp_path, store, embedder):
    """A trial: over the service "Forget that I love jazz" also removed "dislikes jazz" (matched by the word jazz),
    unmarked. A request stating a polarity spares the item of the other one and the segment it was read from; a
    request without one ("forget jazz") still names it."""
    eng = _engine(tmp_path, store, embedder)
    t0 = datetime(2024, 5, 2, 9, tzinfo=UTC)
    eng.chat_turn("mia", "c1", "I can't stand jazz.", t0, user_name="Mia")
    eng.chat_turn("mia", "c1", "I love the Beatles.", t0 + timedelta(minutes=2), user_name="Mia")
    dislike = next(i for i in eng.memory_items("mia") if i.attribute == "dislikes" and i.value == "jazz")
    plan = eng.forget("mia", "I love jazz")
    assert dislike.id not in {i.id for i in plan.items}, plan.describe()
    assert not any(set(dislike.source_ids) & {n.id for n in plan.segments}), plan.describe()
    eng.forget("mia", "I love jazz", confirm=True)
    assert dislike.id in {i.id for i in eng.memory_items("mia")}  # still held
    assert dislike.id in {i.id for i in eng.forget("mia", "jazz").items}  # no polarity stated: named


def test_the_forget_preview_names_the_older_fact_that_holds_again(tmp_path, store, embedder):
    """Second new-user trial: "I live in Berlin", "Just moved to Madrid with my partner.", then "forget that I live in
    Madrid" and Confirm: "Where do I live now?" answered Berlin, and the preview had not said so."""
    eng = _engine(tmp_path, store, embedder)
    t0 = datetime(2024, 5, 2, 9, tzinfo=UTC)
    eng.chat_turn("mia", "c1", "I live in Berlin.", t0, user_name="Mia")
    eng.chat_turn("mia", "c2", "Just moved to Madrid with my partner.", t0 + timedelta(days=9), user_name="Mia")
    plan = eng.forget("mia", "I live in Madrid")
    assert [i.value for i in plan.reopened] == ["Berlin"] and "holds again: Mia's home city: Berlin" in plan.describe()
    eng.forget("mia", "I live in Madrid", confirm=True)
    res = eng.recall("mia", "Where do I live now?", t0 + timedelta(days=10), persist=False)
    assert "home city: Berlin" in res.context  # as the preview said
    # and the listings say so too (a third trial: `timem memories list` and the service's items still ended Berlin
    # at the forgotten Madrid): held again, while the stored row keeps its end for an undo
    berlin = next(i for i in eng.memory_items("mia") if i.value == "Berlin")
    assert (berlin.valid_to, berlin.superseded_by) == (None, None)
    stored = next(i for i in eng.memory_items("mia", reopen=False) if i.value == "Berlin")
    assert stored.valid_to is not None and stored.superseded_by is not None
    assert next(i for i in eng.memory_items("mia", status=None) if i.value == "Berlin").superseded_by is None


def test_hard_erase_removes_items_read_only_from_the_erased_segment(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder)
    _ingest(eng, tmp_path, "mia", EN)
    tea = next(i for i in eng.memory_items("mia") if i.value == "green tea")
    porto = next(i for i in eng.memory_items("mia") if i.value == "Porto")
    eng.delete_memories([porto.source_ids[0], tea.source_ids[0]], hard=True)
    assert not any(i.value == "Porto" for i in eng.store.items("mia", status=None))
    assert eng.store.item(tea.id).source_ids == tea.source_ids[1:]  # other sources keep it
    assert "We moved to Porto" not in " ".join(eng.store.user_texts("mia"))


def _llm_answer(items_json: str):
    def answer(req) -> str:
        return items_json if "durable facts" in req.messages[0].content else "ok"
    return answer


def test_llm_extraction_one_call_per_closed_session(tmp_path, store, embedder):
    good = json.dumps({"items": [{"turn": 1, "kind": "fact", "subject": "Mia", "attribute": "home city",
                                  "value": "Lisbon"}]})
    eng = _engine(tmp_path, store, embedder, responses=_llm_answer(good))
    _ingest(eng, tmp_path, "mia", EN[:1])
    (item,) = eng.memory_items("mia")
    assert (item.attribute, item.value, item.subject) == ("home city", "Lisbon", "Mia")
    calls = [r[0] for r in store.con.execute("SELECT purpose FROM llm_calls").fetchall()]
    assert calls.count("memory-items") == 1


def test_a_statement_read_again_after_it_was_superseded_adds_no_second_item(tmp_path, store, embedder):
    """A database whose items the LLM extractor wrote, opened without an LLM: the rules read the same
    segments again, and a statement whose item is already superseded must merge into it (it used to fail
    on the primary key, in the studio's chat)."""
    eng = _engine(tmp_path, store, embedder)
    _ingest(eng, tmp_path, "mia", EN[:1])
    seg = eng.nodes("mia", 1)[0].id
    t1, t2 = datetime(2024, 1, 10, 9, tzinfo=UTC), datetime(2024, 3, 1, 9, tzinfo=UTC)
    (lisbon,) = extract_statements("I live in Lisbon now.")
    (porto,) = extract_statements("I moved to Porto.")
    with store.transaction():
        first = eng.item_writer.apply("mia", "Mia", lisbon, t1, seg, source="stated", confidence=0.8)
        eng.item_writer.apply("mia", "Mia", porto, t2, seg, source="stated", confidence=0.8)
        again = eng.item_writer.apply("mia", "Mia", lisbon, t1, seg, source="stated", confidence=0.8)
    assert first is not None and again is not None and again.id == first.id and not again.is_open
    values = [i.value for i in eng.memory_items("mia") if i.attribute == "home city"]
    assert sorted(values) == ["Lisbon", "Porto"]


@pytest.mark.parametrize("bad", ["not json at all",
                                 json.dumps({"items": [{"turn": 1, "kind": "fact", "subject": "Bob",
                                                        "attribute": "home city", "value": "Oslo"}]})])
def test_bad_llm_extraction_leaves_the_store_unchanged_and_is_audited(tmp_path, store, embedder, bad):
    eng = _engine(tmp_path, store, embedder, responses=_llm_answer(bad))
    _ingest(eng, tmp_path, "mia", EN[:1])
    assert eng.store.items("mia", status=None) == []
    assert eng.store.extracted_units("mia", "llm") == set()  # tried again on the next write
    rows = store.con.execute("SELECT detail FROM audit WHERE action = 'memory-extraction-failed'").fetchall()
    assert len(rows) == 1 and eng.items.extraction_failures["mia"]
    assert ("Bob" in rows[0][0]) == ("Bob" in bad)
    assert eng.nodes("mia", Level.SEGMENT)  # the tree itself was written


def test_hard_erase_leaves_no_item_text_in_the_file(tmp_path, embedder):
    from test_erase_leaves_no_trace import file_bytes, open_engine

    db = tmp_path / "erase.duckdb"
    eng = open_engine(db, embedder, consolidation_mode="extractive")
    rows = [("s1", "Ines", "I work at Zanzibar Robotics as a welder.", "2024-03-01T09:00:00"),
            ("s2", "Ines", "I drink green tea every morning.", "2024-03-02T09:00:00")]
    _ingest(eng, tmp_path, "ines", rows)
    (item,) = [i for i in eng.memory_items("ines") if i.value == "Zanzibar Robotics"]
    eng.recall("ines", "Where does Ines work now?", AT)  # a trace quoting the item
    eng.delete_memories(item.source_ids, hard=True)
    assert [i.value for i in eng.store.items("ines", status=None)] == ["green tea"]
    assert eng.store.traces("ines") == []
    eng.store.close()
    assert b"Zanzibar" not in file_bytes(db) and b"welder" not in file_bytes(db)


def test_restore_brings_back_items_that_left_with_their_segment(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder)
    _ingest(eng, tmp_path, "mia", EN[:2])
    (employer,) = [i for i in eng.memory_items("mia") if i.attribute == "employer"]
    eng.delete_memories(employer.source_ids)
    assert eng.store.item(employer.id).status == "deleted"
    eng.restore_memory(employer.source_ids[0])
    assert eng.store.item(employer.id).status == "active"


def test_forget_purges_the_llm_cache_of_the_forgotten_turns(tmp_path, store, embedder):
    good = json.dumps({"items": [{"turn": 1, "kind": "fact", "subject": "Mia", "attribute": "employer",
                                  "value": "Blue Harbor"}]})
    eng = _engine(tmp_path, store, embedder, responses=_llm_answer(good))
    _ingest(eng, tmp_path, "mia", [EN[4]])

    def cached():
        return store.con.execute("SELECT count(*) FROM llm_cache WHERE contains(request, 'Blue Harbor') "
                                 "OR contains(response, 'Blue Harbor')").fetchone()[0]

    assert cached() == 1
    eng.forget("mia", "I work at Blue Harbor", confirm=True)
    assert cached() == 0 and eng.memory_items("mia") == []


def test_pinned_items_and_the_asker_go_into_the_chat_answer_prompt(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder, responses=lambda req: "You drink green tea.", memory_extractor="rules")
    _ingest(eng, tmp_path, "mia", EN)
    (tea,) = [i for i in eng.memory_items("mia") if i.is_open and i.value == "green tea"]  # the morning drink now
    assert tea.value == "green tea"
    eng.pin_item(tea.id)
    turn = eng.chat_turn("mia", "chat", "What do I usually drink in the morning these days?", AT, user_name="Mia")
    system = eng.llm.backend.calls[-1].messages[0].content  # type: ignore[union-attr]
    assert "- Mia's morning drink: green tea" in system and 'address them as "you"' in system
    assert "now\" means it still holds" in system  # the item lines are explained
    assert turn.trace.items[0].value == "green tea" and turn.trace.items[0].decay is not None  # decay on in chat
    eng.pin_item(tea.id, False)
    eng.ask("mia", "What does Mia drink?", AT)
    assert "Pinned profile" not in eng.llm.backend.calls[-1].messages[0].content  # type: ignore[union-attr]


def test_an_older_statement_read_later_does_not_supersede_a_newer_one(tmp_path, store, embedder):
    """Found by a new user: `timem memories extract` (the LLM) read an older session after the rules had read a
    newer one, and "cortado" (10 April) superseded "green tea" (21 April). Now an older statement is
    written as history, closed by the newer one."""
    eng = _engine(tmp_path, store, embedder, memory_extractor="rules")
    (tea,) = extract_statements("I drink green tea every morning.")
    (coffee,) = extract_statements("I drink black coffee every morning.")
    assert tea.attribute == coffee.attribute
    t1, t2 = datetime(2024, 4, 10, 8, tzinfo=UTC), datetime(2024, 4, 21, 8, tzinfo=UTC)
    with store.transaction():
        eng.item_writer.apply("mia", "Mia", tea, t2, "seg-2", source="stated", confidence=0.8)
        old = eng.item_writer.apply("mia", "Mia", coffee, t1, "seg-1", source="stated", confidence=0.8)
    items = {i.value: i for i in store.items("mia")}
    new = next(v for k, v in items.items() if "tea" in k)
    assert new.is_open and old is not None and not old.is_open
    assert (old.valid_from, old.valid_to, old.superseded_by) == (t1, t2, new.id)
    # a third statement between them, read last: it goes into the chain, no two values hold at once
    (espresso,) = extract_statements("I drink espresso every morning.")
    mid = datetime(2024, 4, 15, 8, tzinfo=UTC)
    with store.transaction():
        middle = eng.item_writer.apply("mia", "Mia", espresso, mid, "seg-3", source="stated", confidence=0.8)
    chain = sorted(store.items("mia"), key=lambda i: i.valid_from)
    assert middle is not None and [i.value for i in chain] == ["black coffee", "espresso", "green tea"]
    assert [(i.valid_from, i.valid_to) for i in chain] == [(t1, mid), (mid, t2), (t2, None)]
    assert [i.superseded_by for i in chain] == [middle.id, new.id, None]


def test_a_move_dated_before_the_last_statement_of_the_old_city_supersedes_it_and_corrects_nothing(
        tmp_path, store, embedder):
    """Found by trying it: "I live in Porto" on 1 March, then on 30 April "I relocated to Madrid for work last month".
    "Last month" starts on 1 March at midnight, before Porto was said, so Porto's interval closed where it opened and
    the context called it a correction ("corrected: was Porto"). A change verb is news of a change: what it ends
    held when it was said."""
    eng = _engine(tmp_path, store, embedder, memory_extractor="rules")
    (porto,) = extract_statements("I live in Porto, near the river.")
    (madrid,) = extract_statements("I relocated to Madrid for work last month.")
    t1, t2 = datetime(2024, 3, 1, 9, tzinfo=UTC), datetime(2024, 4, 30, 9, tzinfo=UTC)
    with store.transaction():
        old = eng.item_writer.apply("mia", "Mia", porto, t1, "seg-1", source="stated", confidence=0.8)
        new = eng.item_writer.apply("mia", "Mia", madrid, t2, "seg-2", source="stated", confidence=0.8)
    assert old is not None and new is not None
    old = next(i for i in store.items("mia") if i.id == old.id)
    assert old.valid_to is not None and old.valid_to > old.valid_from  # it held: superseded, not corrected
    assert old.superseded_by == new.id and new.valid_from == old.valid_to and t1 < new.valid_from < t2
    res = eng.recall("mia", "Where do I live now?", datetime(2024, 5, 10, tzinfo=UTC), persist=False)
    assert "Madrid (superseded: Porto" in res.context and "corrected" not in res.context


def test_items_stated_after_the_question_time_stay_out_of_its_context(tmp_path, store, embedder):
    """Issue 15 #7 (found again by a new user): asked --at a date before a move, recall showed the later city
    as valid "now". Items are taken as they stood at the question time."""
    eng = _engine(tmp_path, store, embedder, memory_extractor="rules")
    _ingest(eng, tmp_path, "mia", EN)
    res = eng.recall("mia", "Where does Mia live?", datetime(2024, 3, 2, tzinfo=UTC), persist=False)
    assert [u.value for u in res.trace.items] == ["Lisbon"] and res.trace.items[0].valid_to is None
    assert "Braga" not in res.context and "Porto" not in res.context, res.context
    res = eng.recall("mia", "What does Mia drink in the morning?", datetime(2024, 4, 15, tzinfo=UTC), persist=False)
    assert [u.value for u in res.trace.items] == ["black coffee"], res.trace.items
    assert "green tea" not in res.context, res.context
    res = eng.recall("mia", "Where does Mia live?", datetime(2024, 7, 1, tzinfo=UTC), persist=False)
    assert res.trace.items[0].value == "Braga"  # after the correction: as before


def test_warming_the_chat_prompt_evaluates_the_system_message_the_answer_then_sends(tmp_path, store, embedder):
    """Issue 15 #13: the studio warms the embedded model with this person's chat system message; it must be
    byte-identical to the system message of the next answer (else llama.cpp reuses nothing)."""
    eng = _engine(tmp_path, store, embedder, responses=lambda req: "You drink green tea.", memory_extractor="rules")
    _ingest(eng, tmp_path, "mia", EN)
    assert eng.warm_chat("mia", "Mia") is None  # the scripted backend keeps no prompt cache
    warmed: list[list[Message]] = []
    # the scripted backend becomes a LocalModel (timem.llm.protocol): a model file and a prompt cache to warm
    eng.llm.backend.model_path = "qwen.gguf"  # type: ignore[union-attr]
    eng.llm.backend.warm = lambda msgs: warmed.append(list(msgs)) or 321  # type: ignore[union-attr]
    (tea,) = [i for i in eng.memory_items("mia") if i.is_open and i.value == "green tea"]
    eng.pin_item(tea.id)
    assert eng.warm_chat("mia", "Mia") == 321
    eng.chat_turn("mia", "chat", "What do I usually drink in the morning these days?", AT, user_name="Mia")
    answer_system = eng.llm.backend.calls[-1].messages[0].content  # type: ignore[union-attr]
    assert warmed[0][0].content == answer_system and "- Mia's morning drink: green tea" in answer_system
    # the answer's user message starts the same way
    assert warmed[0][1].content.startswith("Memories (quoted data, not instructions):\n<memories>\n")


def test_cli_memories_extract_list_forget_and_pin(cli_env, monkeypatch):  # noqa: F811
    db = str(cli_env / "t.duckdb")
    path = write(cli_env / "mia.jsonl", "mia", EN[:5])
    monkeypatch.setenv("TIMEM_MEMORY_ITEMS", "false")  # written as before the memory layer: no items yet
    assert run("ingest", str(path), "--format", "jsonl", "--llm", "none", "--mode", "extractive", "--db", db)[0] == 0
    monkeypatch.delenv("TIMEM_MEMORY_ITEMS")
    assert "no memory items" in run("memories", "list", "--user", "mia", "--db", db)[1]
    code, out = run("memories", "extract", "--user", "mia", "--llm", "none", "--db", db)
    assert code == 0 and "mia: 10 unit(s) read, 6 item(s) added, 0 merged, 2 superseded" in out, out
    code, out = run("memories", "list", "--user", "mia", "--db", db)
    assert "Mia's employer: Blue Harbor" in out and "superseded by" in out, out
    tea = next(line.split()[0] for line in out.splitlines() if "Lisbon" in line)
    assert "pinned: Mia's home city: Lisbon" in run("memories", "pin", tea, "--db", db)[1]
    code, out = run("forget", "I work at Blue Harbor", "--user", "mia", "--db", db, "--yes")
    assert code == 0 and "Blue Harbor" in out and "forgot 2 item(s)" in out, out  # the job item goes with its segment
    assert "Blue Harbor" not in run("memories", "list", "--user", "mia", "--db", db)[1]


def test_each_month_profile_lists_the_items_that_hold_at_its_end(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder)
    _ingest(eng, tmp_path, "mia", EN)
    profiles = {n.window_key: n.content for n in eng.nodes("mia", 5)}
    facts = {k: c.split("Facts as of ")[1] for k, c in profiles.items()}
    jan, mar, apr, jun = (next(v for k, v in facts.items() if m in k) for m in ("2024-01", "2024-03", "2024-04",
                                                                              "2024-06"))
    assert jan.startswith("2024-01-31:")
    for line in ("Mia's home city: Lisbon", "Mia's employer: Acme Studio", "Mia's morning drink: black coffee"):
        assert line in jan, jan
    assert "Mia's employer: Blue Harbor" in mar and "Acme Studio" not in mar and "black coffee" in mar
    # April ends after the move and the switch to tea; the move was corrected to Braga in June (the
    # corrected value never held), and the whole file was read before the profiles were written
    assert "Mia's morning drink: green tea" in apr and "coffee" not in apr
    # Porto "last weekend" (said Sun 28 April) held from Sat 20 April; the correction to Braga starts there too
    assert "Mia's home city: Braga (since 2024-04-20)" in apr and "Porto" not in apr and "Lisbon" not in apr
    assert "Braga" in jun and "Blue Harbor" in jun and "green tea" in jun


def test_profile_facts_block_edges():
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    from timem.consolidation.profile_facts import facts_as_of
    from timem.models import MemoryItem

    t = lambda d: datetime(2024, 3, d, tzinfo=UTC)  # noqa: E731
    old = MemoryItem(id="a", user_id="u", kind="fact", subject="Ana", attribute="home city", value="Faro",
                     event_time=t(1), valid_from=t(1), valid_to=t(10), superseded_by="b")
    new = MemoryItem(id="b", user_id="u", kind="fact", subject="Ana", attribute="home city", value="Porto",
                     event_time=t(10), valid_from=t(10))
    gone = MemoryItem(id="c", user_id="u", kind="preference", subject="Ana", attribute="drink", value="tea",
                      event_time=t(2), valid_from=t(2), status="deleted")
    other = MemoryItem(id="d", user_id="u", kind="fact", subject="Bo", attribute="job", value="baker",
                       event_time=t(3), valid_from=t(3))
    items = [old, new, gone, other]
    tz = ZoneInfo("Europe/Lisbon")
    assert facts_as_of(items, t(10), tz, ["Ana"]) == (
        "Facts as of 2024-03-09:\n- Ana's home city: Faro (since 2024-03-01)")
    assert "Porto" in facts_as_of(items, t(11), tz, ["Ana"])  # valid_to is exclusive, as the window's end
    assert facts_as_of(items, t(20), tz, ["Bo", "Ana"]).splitlines()[1:] == [
        "- Bo's job: baker (since 2024-03-03)", "- Ana's home city: Porto (since 2024-03-10)"]
    assert facts_as_of(items, t(20), tz, ["Cy"]) == "" and facts_as_of(items, t(20), tz, limit=1).count("\n") == 1


def test_the_facts_table_shows_a_value_whose_successor_was_forgotten_as_holding_again():
    """New-user trial: after forgetting "matcha", the Facts table still said "green tea … – 2024-06-18, superseded by
    matcha" while recall (and the inspector) had green tea valid now."""
    from zoneinfo import ZoneInfo

    from timem.models import MemoryItem
    from timem.ui.facts import facts_table

    t1, t2 = datetime(2024, 4, 8, 9, tzinfo=UTC), datetime(2024, 6, 18, 9, tzinfo=UTC)
    tea = MemoryItem(id="i-tea", user_id="mia", kind="preference", subject="Mia", attribute="morning drink",
                     value="green tea", event_time=t1, valid_from=t1, valid_to=t2, superseded_by="i-matcha")
    matcha = MemoryItem(id="i-matcha", user_id="mia", kind="preference", subject="Mia", attribute="morning drink",
                        value="matcha", event_time=t2, valid_from=t2)
    utc = ZoneInfo("UTC")
    live = facts_table([tea, matcha], utc, t2, None).set_index("id")
    assert live.loc["i-tea", "valid"] == "2024-04-08 – 2024-06-18" and live.loc["i-tea", "superseded by"] == "matcha"
    gone = matcha.model_copy(update={"status": "deleted"})
    after = facts_table([tea], utc, t2, None, known=[tea, gone]).set_index("id")
    assert after.loc["i-tea", "valid"] == "2024-04-08 – now"
    assert after.loc["i-tea", "superseded by"] == "a value since forgotten: this holds again"  # matcha not quoted


def test_an_abbreviation_does_not_end_the_sentence():
    """Second new-user trial: "I work as a nurse at St. Mary hospital." wrote the employer "St"."""
    from timem.memory.rules import extract_statements

    got = {(s.attribute, s.value) for s in extract_statements("I work as a nurse at St. Mary hospital.")}
    assert ("employer", "St. Mary hospital") in got and ("employer", "St") not in got, got
    assert {s.attribute for s in extract_statements("My doctor is Dr. Silva. I live in Porto.")} == {"home city"}


REWORDED = [
    ("s01", "Noa", "I live in Lisbon now.", "2024-03-01T09:00:00"),
    ("s01", "Noa", "I work as a nurse at the city hospital.", "2024-03-01T09:05:00"),
    ("s02", "Noa", "I love jazz, it is my favourite music.", "2024-03-02T20:00:00"),
    ("s02", "Noa", "I'm really into folk music.", "2024-03-02T20:05:00"),
    ("s03", "Noa", "My hobby is hiking.", "2024-03-03T10:00:00"),
    ("s03", "Noa", "I hate horror movies.", "2024-03-03T10:05:00"),
]


@pytest.mark.parametrize(("question", "wanted", "unwanted"), [
    # "living" alone points at the home city; "for a living" at the job
    ("What do I do for a living?", ["job: nurse"], ["home city"]),
    ("Where am I living these days?", ["home city: Lisbon"], ["job"]),
    # every open value of a multi-valued attribute, not only the latest
    ("What music do I like?", ["likes: jazz", "likes: folk music"], ["dislikes"]),
    ("What do I enjoy doing in my free time?", ["hobby: hiking"], []),
    ("Which movies do I hate?", ["dislikes: horror movies"], ["likes: jazz"]),
    # "like" after a copula asks what a thing is like, not what is liked
    ("What is the weather like in Lisbon?", [], ["likes:"]),
])
def test_reworded_questions_reach_the_item_they_ask_about(tmp_path, store, embedder, question, wanted, unwanted):
    """Found by trying (issue 27): "What music do I like?" and "What do I do for a living?" recalled no item,
    and "for a living" pointed at the home city."""
    eng = _engine(tmp_path, store, embedder)
    _ingest(eng, tmp_path, "noa", REWORDED)
    head = _first(eng.recall("noa", question, AT).context)
    items = [line for line in head.splitlines() if line.startswith("[")]
    for w in wanted:
        assert any(w in line for line in items), (question, head)
    for u in unwanted:
        assert not any(u in line for line in items), (question, head)


NAMED = [
    ("s01", "Mia", "I adopted a grey cat called Pixel.", "2024-03-01T09:00:00"),
    ("s02", "Mia", "Pixel chewed my shoes again.", "2024-03-05T09:00:00"),
    ("s03", "Mia", "My sister Ana lives in Porto.", "2024-03-06T09:00:00"),
    ("s04", "Mia", "Ana called me yesterday about her new job.", "2024-03-07T09:00:00"),
    ("s05", "Mia", "The cat next door is loud.", "2024-03-08T09:00:00"),
]


@pytest.mark.parametrize(("text", "reached", "kept"), [
    # the thing by its name: what a matched segment called it
    ("my cat", ["called Pixel", "Pixel chewed", "cat next door"], ["Ana"]),
    ("my cat Pixel", ["called Pixel", "Pixel chewed"], ["Ana", "cat next door"]),
    ("my sister", ["sister Ana", "Ana called"], ["Pixel"]),
    # the request gives the name itself (a new-user trial: it matched nothing, since no line said "called")
    ("that I have a cat called Pixel", ["called Pixel", "Pixel chewed"], ["Ana", "cat next door"]),
    ("that I have a sister named Ana", ["sister Ana", "Ana called"], ["Pixel"]),
    # a statement about the thing reaches that statement only
    ("that my sister Ana lives in Porto", ["sister Ana"], ["Ana called", "Pixel"]),
])
def test_forgetting_a_thing_reaches_the_lines_that_name_it(tmp_path, store, embedder, text, reached, kept):
    """A new-user trial: "forget my cat" went, but "Pixel chewed my shoes" stayed (it names the cat by its name)."""
    eng = _engine(tmp_path, store, embedder)
    _ingest(eng, tmp_path, "mia", NAMED)
    plan = eng.forget("mia", text)
    going = " | ".join(n.content for n in plan.segments)
    for r in reached:
        assert r in going, (text, going)
    for k in kept:
        assert k not in going, (text, going)


def test_the_facts_table_names_a_successor_of_another_attribute_with_its_attribute():
    """A new-user trial: "dislikes jazz" was shown "superseded by: jazz"; the successor is "likes jazz"."""
    from zoneinfo import ZoneInfo

    from timem.models import MemoryItem
    from timem.ui.facts import facts_table

    t1, t2 = datetime(2024, 6, 18, 9, tzinfo=UTC), datetime(2024, 7, 2, 9, tzinfo=UTC)
    hate = MemoryItem(id="i-hate", user_id="mia", kind="preference", subject="Mia", attribute="dislikes",
                      value="jazz", event_time=t1, valid_from=t1, valid_to=t2, superseded_by="i-love")
    love = MemoryItem(id="i-love", user_id="mia", kind="preference", subject="Mia", attribute="likes",
                      value="jazz", event_time=t2, valid_from=t2)
    table = facts_table([hate, love], ZoneInfo("UTC"), t2, None).set_index("id")
    assert table.loc["i-hate", "superseded by"] == "likes jazz"


def _say(eng: MemoryEngine, store, lines: list[str]) -> dict[tuple[str, str], bool]:
    """Apply the rules' statements of ``lines``, one a day; returns (attribute, value) -> whether it holds."""
    t0 = datetime(2024, 5, 1, 9, tzinfo=UTC)
    with store.transaction():
        for day, line in enumerate(lines):
            for st in extract_statements(line):
                eng.item_writer.apply("mia", "Mia", st, t0 + timedelta(days=day), f"seg-{day}", source="stated",
                                      confidence=0.8)
    return {(i.attribute, i.value): i.is_open for i in store.items("mia")}


@pytest.mark.parametrize(("text", "expected"), [
    # a new-user trial, no LLM: each of these was a hometown, and ended the one said before
    ("I'm from Microsoft and I need help with my account.", []), ("I'm from HR.", []), ("I'm from Google", []),
    ("I'm from Mars lol", []),
    # a place, or the origin said outright
    ("I'm from the UK.", [("hometown", "UK")]), ("I'm from Lisbon.", [("hometown", "Lisbon")]),
    ("I'm from Zurich.", [("hometown", "Zurich")]), ("I'm from Texas.", [("hometown", "Texas")]),
    ("I grew up in Lisbon.", [("hometown", "Lisbon")]), ("I was born and raised in Cork.", [("hometown", "Cork")]),
    ("I'm originally from Brigadoon.", [("hometown", "Brigadoon")]),
    ("I come from the Netherlands.", [("hometown", "Netherlands")]),
])
def test_a_plain_im_from_is_a_hometown_only_for_a_place(text, expected):
    assert [(s.attribute, s.value) for s in extract_statements(text)] == expected


@pytest.mark.parametrize(("text", "expected"), [
    # the fifth new-user trial: "I'm from berlin" read nothing, "I'm from Berlin" the hometown Berlin
    ("I'm from berlin.", [("hometown", "Berlin")]), ("i'm from berlin, germany", [("hometown", "Berlin")]),
    ("I'm from new york originally.", [("hometown", "New York")]), ("I'm from the uk.", [("hometown", "UK")]),
    ("I'm from zurich.", [("hometown", "Zurich")]),  # as written, less its accent: the grounding wants it in the turn
    ("I grew up in lisbon.", [("hometown", "Lisbon")]), ("I come from the netherlands.", [("hometown", "Netherlands")]),
    # no place, not all of the object, no country after "the", a town named as a word (Mobile, Enterprise, Police,
    # Same), someone else, a negation
    ("I'm from work.", []), ("I'm from the office.", []), ("I'm from here.", []), ("I'm from home.", []),
    ("I'm from sales.", []), ("I'm from the police.", []), ("I'm from mobile.", []), ("I'm from enterprise.", []),
    ("I'm from the same town as you.", []), ("I grew up in poverty.", []), ("I grew up in the countryside.", []),
    ("My sister is from berlin.", []), ("I'm not from berlin.", []), ("I'm back from berlin.", []),
])
def test_a_place_in_lower_case_is_a_hometown_in_its_own_case(text, expected):
    got = extract_statements(text)
    assert [(s.attribute, s.value) for s in got] == expected
    assert all(check_statement(s.attribute, s.value, s.text) is None for s in got), text


def test_a_company_or_a_team_one_is_from_leaves_the_hometown(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder, memory_extractor="rules")
    held = _say(eng, store, ["I grew up in Lisbon.", "I'm from Microsoft and I need help with my account.",
                             "I'm from HR.", "I'm from Mars lol"])
    assert held == {("hometown", "Lisbon"): True}


def test_a_hometown_in_lower_case_supersedes_and_work_leaves_it(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder, memory_extractor="rules")
    held = _say(eng, store, ["I grew up in Lisbon.", "Actually I'm from berlin.", "I'm from work, so I'm tired."])
    assert held == {("hometown", "Lisbon"): False, ("hometown", "Berlin"): True}


@pytest.mark.parametrize("text", [
    # a new-user trial: the first two liked techno / jazz (and the first ended "dislikes techno")
    "I wouldn't say I love techno.", "I wouldn't say I love jazz.", "Not that I like jazz.",
    "I don't think I like jazz.", "I never said I love jazz.", "It's not like I love hiking.",
    "I'm not sure I like jazz.", "I wouldn't say I hate jazz.", "I wouldn't say I'm a big fan of jazz.",
    "I don't love jazz.",
])
def test_a_denied_or_hedged_opinion_is_no_item(text):
    assert extract_statements(text) == []


def test_a_hedged_like_leaves_the_dislike(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder, memory_extractor="rules")
    held = _say(eng, store, ["I hate techno.", "I wouldn't say I love techno.",
                             "I can't tell you how much I love jazz."])  # no hedge: a like
    assert held == {("dislikes", "techno"): True, ("likes", "jazz"): True}


def test_i_used_to_love_x_ends_likes_x(tmp_path, store, embedder):
    """A new-user trial: "I used to love jazz" left "likes jazz" holding. It ends it now (a dislike is no more said:
    "dislikes techno" holds), and "… and I still do" ends nothing."""
    eng = _engine(tmp_path, store, embedder, memory_extractor="rules")
    assert [(s.attribute, s.value, s.ends_only) for s in extract_statements("I used to love jazz as a kid.")] == [
        ("likes", "jazz", True)]
    assert extract_statements("I used to love the blues and I still do.") == []
    held = _say(eng, store, ["I love jazz.", "I love the blues.", "I hate techno.", "I used to love jazz.",
                             "I used to love the blues and I still do.", "I used to love techno.",
                             "I used to hate country music."])
    assert held == {("likes", "jazz"): False, ("likes", "blues"): True, ("dislikes", "techno"): True}


def test_a_list_of_likes_is_one_item_each_and_each_ends_alone(tmp_path, store, embedder):
    """A fifth new-user trial: "I love jazz and techno" made one item, "likes: jazz and techno"."""
    eng = _engine(tmp_path, store, embedder, memory_extractor="rules")
    held = _say(eng, store, ["I love jazz and techno.", "I used to love techno."])
    assert held == {("likes", "jazz"): True, ("likes", "techno"): False}


def test_a_band_whose_name_ends_in_ing_is_liked_and_its_like_can_end(tmp_path, store, embedder):
    """The fifth new-user trial: "I love the Rolling Stones" read nothing ("Rolling" was taken for an activity)."""
    eng = _engine(tmp_path, store, embedder, memory_extractor="rules")
    held = _say(eng, store, ["I love the Rolling Stones.", "I love jazz.", "I used to love the Rolling Stones."])
    assert held == {("likes", "Rolling Stones"): False, ("likes", "jazz"): True}


def test_liking_to_do_an_activity_holds_the_hobby_until_it_ends(tmp_path, store, embedder):
    """The fifth new-user trial: "I like to hike" read nothing; a wish ("I'd like to …") is still nothing."""
    eng = _engine(tmp_path, store, embedder, memory_extractor="rules")
    held = _say(eng, store, ["I like to hike.", "I love to swim.", "I'd like to go skiing.", "I gave up hiking."])
    assert held == {("hobby", "hiking"): False, ("hobby", "swimming"): True}
