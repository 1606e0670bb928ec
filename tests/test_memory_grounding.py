"""Memory items are written only when grounded (issue 27 item 1): the vocabulary, no placeholders, the value in a
clause of the speaker's own turn that speaks of the attribute, a trip is not a move; hobbies hold several values;
``auto`` reads with the rules unless the LLM is an OpenAI-compatible endpoint. Real DuckDB, real MiniLM, the
scripted fake LLM; the labelled set is bench/data/memory_items_labelled.jsonl."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from memory_scenario import write

from timem.config import load_config
from timem.datasets import load_dataset
from timem.engine import MemoryEngine
from timem.llm.client import LLM
from timem.llm.fake import ScriptedBackend
from timem.memory.grounding import canonical_attribute, check_statement
from timem.memory.rules import extract_statements
from timem.memory.writer import ItemWriter

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("attribute", "value", "text"), [
    # the false facts a newcomer's demo import showed (issue 27 item 1)
    ("home city", "not specified", "Hi! I'm Mia. I just moved to Lisbon for a new job."),
    ("home city", "Shanghai", "I'm back from Shanghai! The trip was exhausting but wonderful."),
    ("home city", "Porto", "The wedding in Porto was beautiful. Ana cried when she opened the gift."),
    ("home city", "Porto", "My sister Ana is getting married on June 15th in Porto. I need a gift idea."),
    ("job", "running", "I'm also training for a 10k race on April 21st. I run three mornings a week."),
    ("job", "not specified", "Long day at work today."),
    ("employer", "unknown", "I work a lot these days."),
    ("diet", "tea", "I don't even want coffee anymore, tea all the way."),
    ("morning drink", "water", "I'm planning a 3 km open-water swim in September."),
    # someone else's facts
    ("home city", "Porto", "My sister Ana lives in Porto with her fiancé."),
    ("diet", "vegetarian", "Tom is vegetarian, so we picked an Indian place."),
    ("employer", "Google", "My brother works at Google as an engineer."),
    ("home city", "广州", "我姐姐住在广州。"),
    ("home city", "上海", "下个月公司派我去上海出差一个星期。"),
    ("favourite colour", "green", "Her favourite colour is green."),
])
def test_ungrounded_statements_are_refused(attribute, value, text):
    assert check_statement(attribute, value, text) is not None


@pytest.mark.parametrize(("attribute", "value", "text"), [
    ("home city", "Lisbon", "Hi! I'm Mia. I just moved to Lisbon for a new job as a data engineer."),
    ("job", "data engineer", "I just moved to Lisbon for a new job as a data engineer at a logistics startup."),
    ("morning drink", "espresso", "My mornings start with a double espresso."),
    ("drink", "tea", "No coffee for two months now, only tea."),  # no pronoun: the speaker's own turn
    ("drink", "绿茶", "我不喝咖啡了，现在只喝绿茶。"),
    ("diet", "vegetarian", "I don't eat meat, but fish is fine."),  # a normal form, not a word of the turn
    ("home city", "杭州", "我搬到了杭州，离西湖很近。"),
    ("hobby", "yoga", "I stopped running, yoga is my thing now."),
])
def test_grounded_statements_pass(attribute, value, text):
    assert check_statement(attribute, value, text) is None


def test_the_vocabulary_maps_synonyms_and_refuses_the_rest():
    assert canonical_attribute("Occupation") == "job"
    assert canonical_attribute("favorite band") == "favourite band"
    assert canonical_attribute("city") == "home city"
    assert canonical_attribute("mood") is None and canonical_attribute("favourite") is None


def _engine(tmp_path, embedder, *, backend: str, extractor: str = "auto", responses=None) -> MemoryEngine:
    from timem.store import Store

    store = Store(tmp_path / "g.duckdb", embedder.model_id, embedder.dim)
    cfg = load_config(env={}, db_path=store.path, llm_backend="none", cache_dir=tmp_path / "cache",
                      consolidation_mode="extractive", memory_extractor=extractor)
    cfg = cfg.with_overrides(llm_backend=backend) if backend != "none" else cfg
    llm = LLM(ScriptedBackend(responses or (lambda req: "ok")), store)
    return MemoryEngine(cfg, store, embedder, llm)


def test_auto_reads_with_the_rules_unless_the_llm_is_an_endpoint(tmp_path, embedder):
    for backend, mode in (("local", "rules"), ("openai", "llm")):
        eng = _engine(tmp_path / backend, embedder, backend=backend)
        try:
            assert eng.item_writer.mode == mode, backend
        finally:
            eng.close()
    assert ItemWriter.mode.__doc__ and "embedded model" in ItemWriter.mode.__doc__


MIA = [  # each gets an assistant reply (memory_scenario.write)
    ("s1", "Mia", "Hi! I'm Mia. I just moved to Lisbon for a new job as a data engineer.", "2024-04-02T08:15:00"),
    ("s2", "Mia", "I'm back from Shanghai! The trip was exhausting but wonderful.", "2024-05-02T08:15:00"),
    ("s3", "Mia", "The wedding in Porto was beautiful. I run three mornings a week.", "2024-06-18T08:15:00"),
]


def test_the_llm_extractor_writes_only_grounded_items(tmp_path, embedder):
    """The scripted model answers with the false facts the embedded model wrote for the demo: only the true one
    is written, and each refusal is audited with its reason."""
    answers = {
        "Lisbon": [("home city", "not specified"), ("home city", "Lisbon"), ("job", "data engineer"),
                   ("employer", "not specified")],
        "Shanghai": [("home city", "Shanghai"), ("diet", "tea")],
        "Porto": [("home city", "Porto"), ("job", "running"), ("mood", "happy")],
    }

    def answer(req) -> str:
        if "durable facts" not in req.messages[0].content:
            return "ok"
        key = next(k for k in answers if k in req.messages[1].content)
        return json.dumps({"items": [{"turn": 1, "kind": "fact", "subject": "Mia", "attribute": a, "value": v}
                                     for a, v in answers[key]]})

    eng = _engine(tmp_path, embedder, backend="openai", responses=answer)
    try:
        f = write(tmp_path / "mia.jsonl", "mia", MIA)
        eng.ingest(load_dataset(f, "jsonl", tz=eng.config.time.tz, user_tz=eng.config.time.user_tz))
        items = {(i.attribute, i.value, i.is_open) for i in eng.memory_items("mia")}
        assert items == {("home city", "Lisbon", True), ("job", "data engineer", True)}
        reasons = [json.loads(r[0])["reason"] for r in eng.store.con.execute(
            "SELECT detail FROM audit WHERE action = 'item-ungrounded'").fetchall()]
        assert len(reasons) == 7
        assert any("placeholder" in r for r in reasons) and any("not in the vocabulary" in r for r in reasons)
    finally:
        eng.close()


def test_hobbies_hold_several_values_and_end_only_when_said(tmp_path, embedder):
    rows = [("s1", "Tomas", "I took up pottery in January.", "2024-01-10T09:00:00"),
            ("s2", "Tomas", "I started playing chess at a club.", "2024-02-10T09:00:00"),
            ("s3", "Tomas", "I love running along the river.", "2024-03-10T09:00:00"),
            ("s4", "Tomas", "I stopped running, yoga is my thing now.", "2024-04-10T09:00:00")]
    eng = _engine(tmp_path, embedder, backend="none", extractor="rules")
    try:
        f = write(tmp_path / "t.jsonl", "tomas", rows)
        eng.ingest(load_dataset(f, "jsonl", tz=eng.config.time.tz, user_tz=eng.config.time.user_tz))
        hobbies = {i.value: i.is_open for i in eng.memory_items("tomas") if i.attribute == "hobby"}
        assert hobbies == {"pottery": True, "chess": True, "running": False, "yoga": True}
    finally:
        eng.close()


@pytest.mark.parametrize("flip", ["No more running for me, yoga is my thing now.",
                                  "I don't run anymore, yoga is my thing now.",
                                  "I'm done with running, yoga is my thing now.",
                                  "I no longer run, yoga is my thing now."])
def test_other_ways_to_stop_a_hobby_supersede_it(tmp_path, embedder, flip):
    """Issue 27 #12: a flip phrased outside "I stopped / quit / gave up X-ing" left the old hobby open."""
    rows = [("s1", "Tomas", "I love running along the river.", "2024-03-10T09:00:00"),
            ("s2", "Tomas", flip, "2024-04-10T09:00:00")]
    eng = _engine(tmp_path, embedder, backend="none", extractor="rules")
    try:
        f = write(tmp_path / "t.jsonl", "tomas", rows)
        eng.ingest(load_dataset(f, "jsonl", tz=eng.config.time.tz, user_tz=eng.config.time.user_tz))
        hobbies = {i.value: i.is_open for i in eng.memory_items("tomas") if i.attribute == "hobby"}
        assert hobbies == {"running": False, "yoga": True}
    finally:
        eng.close()
    for other in ("I don't work anymore.", "I don't know anymore.", "No more meetings today!"):
        assert not any(x.attribute == "hobby" for x in extract_statements(other))


def test_rules_read_hobbies_but_not_other_gerunds():
    assert [(s.attribute, s.value, s.ends_only) for s in extract_statements("I gave up climbing last year.")] == [
        ("hobby", "climbing", True)]
    assert [(s.attribute, s.value) for s in extract_statements("I started working at Acme.")] == [("employer", "Acme")]
    assert [(s.attribute, s.value) for s in extract_statements("我最近开始学游泳。")] == [("hobby", "游泳")]


def test_the_default_extractor_keeps_its_score_on_the_labelled_set():
    """The published table's default row (bench/results/item-extraction.md): a change that makes the rules or the
    grounding filter write false items, or miss many, fails here."""
    sys.path.insert(0, str(REPO / "bench"))
    import item_extraction as bench

    rows = [json.loads(x) for x in bench.SET.read_text().splitlines() if x.strip()]
    assert len(rows) >= 60 and {r["lang"] for r in rows} == {"en", "zh"}
    score = bench.Score(false_items=[])
    for row in rows:
        bench.score_one(bench.grounded(bench.rules(row)), row, score)
    assert score.fp == 0, score.false_items
    assert score.recall >= 0.85, score.recall


@pytest.mark.parametrize("text", [  # from LoCoMo dev: the first hobby / likes patterns read these as items
    "I love caring for my kids.", "I started creating again after the move.", "I love all the yellow leaves!",
    "I like running my own studio.", "I love how the sunset is awesome.", "Then I started finding my way.",
    # running a business is no hobby of running (LoCoMo dev conv-30: Jon runs a dance studio, he does not run)
    "I love running my own studio.", "I started running my own business.", "I enjoy running a small bakery."])
def test_rules_read_no_hobby_or_like_from_loose_phrasing(text):
    assert [s for s in extract_statements(text) if s.attribute in ("hobby", "likes")] == []


def test_a_sentence_opening_with_an_adverb_is_the_speakers_own():
    """ "Just moved to Madrid with my partner." read "Just" as someone's name ("Ana moved …") and was refused as
    being about someone else, so the old city stayed current."""
    assert check_statement("home city", "Madrid", "Just moved to Madrid with my partner.") is None
    assert check_statement("home city", "Faro", "Ana moved to Faro.") is not None


def _grounded(text: str) -> list[tuple[str | None, str]]:
    return [(s.attribute, s.value) for s in extract_statements(text)
            if check_statement(s.attribute, s.value, s.text, ends=s.replaces) is None]


@pytest.mark.parametrize(("text", "expected"), [
    # issue 27 leftovers: "and my sister is …" in the speaker's clause made it someone else's, so nothing was written
    ("My sister is a nurse and I am a teacher.", [("job", "teacher")]),
    ("My husband is a nurse and I'm a teacher.", [("job", "teacher")]),
    ("I am a teacher and my sister is a nurse.", [("job", "teacher")]),
    ("I'm a teacher, my husband is a nurse.", [("job", "teacher")]),
    ("My sister and I moved to Porto.", [("home city", "Porto")]),
    ("I moved to Porto and my sister lives in Faro.", [("home city", "Porto")]),
    ("My sister lives in Faro and I moved to Porto.", [("home city", "Porto")]),
    ("My sister is a nurse and my brother is a teacher.", []),
    ("My sister is a nurse and she loves jazz.", []),
    ("我是老师，我姐姐是护士。", [("job", "老师")]),
    ("我姐姐是护士，我是老师。", [("job", "老师")]),
    ("我姐姐是护士而我是老师。", [("job", "老师")]),
    ("我姐姐是护士。", []),
])
def test_the_speakers_clause_beside_someone_elses_gives_the_speakers_item_only(text, expected):
    assert _grounded(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # issue 27 leftovers: "I'm a big fan of …" made no like
    ("I'm a big fan of jazz.", [("likes", "jazz")]),
    ("I am a huge Beatles fan.", [("likes", "Beatles")]),
    ("I'm a fan of the Beatles.", [("likes", "Beatles")]),
    ("I've always been a huge fan of Miles Davis.", [("likes", "Miles Davis")]),
    ("I'm a big sci-fi fan these days.", [("likes", "sci-fi")]),
    ("I'm a big fan of pottery - the creativity and skill is awesome", [("likes", "pottery")]),  # LoCoMo dev
    ("I'm not a fan of jazz.", [("dislikes", "jazz")]),
    ("I'm not a big fan of country music.", [("dislikes", "country music")]),
    ("I'm not really a jazz fan.", [("dislikes", "jazz")]),
    # a device, someone else, no object, a pronoun, the past, a doubt: no like
    ("The fan is broken.", []), ("I bought a ceiling fan.", []), ("My sister is a big fan of jazz.", []),
    ("I'm a big fan.", []), ("I'm a huge fan of yours!", []), ("I'm a big fan of what you do.", []),
    ("I'm a big fan of the idea.", []), ("I was a big fan of jazz as a kid.", []),
    ("I don't think I'm a fan of jazz.", []), ("Tom is a huge Beatles fan.", []),
    ("I'm a fan of both classical like Bach and Mozart, as well as modern music like Ed Sheeran's songs.", []),
])
def test_a_fan_of_something_likes_it(text, expected):
    assert _grounded(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # issue 27 leftovers, on the labelled set (like-04, move-09): no item before
    ("I'm really into jazz these days.", [("likes", "jazz")]),
    ("I'm so into Korean dramas now!", [("likes", "Korean dramas")]),
    ("We finally settled in Valencia after years of moving around.", [("home city", "Valencia")]),
    ("I settled down in Berlin.", [("home city", "Berlin")]),
    # no thing, an activity, someone else, a negation, "settled in" with no place: nothing
    ("I'm into it.", []), ("I'm into you.", []), ("I am into the idea.", []),
    # an activity is a hobby, not a like (LoCoMo dev: "I've been into dancing since I was a kid" read nothing)
    ("I'm into running.", [("hobby", "running")]),
    ("My sister is really into jazz.", []), ("I'm not into jazz.", []), ("We settled in for the night.", []),
])
def test_into_something_likes_it_and_settled_in_a_city_lives_there(text, expected):
    assert _grounded(text) == expected


def test_the_docs_give_the_labelled_sets_real_size():
    """docs/memory-items.md said 130 statements, 21 in Chinese, after the set had grown to 143 and 26."""
    import re

    rows = [json.loads(x) for x in (REPO / "bench" / "data" / "memory_items_labelled.jsonl").read_text(
        encoding="utf-8").splitlines() if x.strip()]
    doc = " ".join((REPO / "docs" / "memory-items.md").read_text(encoding="utf-8").split())
    m = re.search(r"memory_items_labelled\.jsonl` \((\d+) single-turn statements: [^)]*; (\d+) in Chinese\)", doc)
    assert m, "docs/memory-items.md no longer gives the labelled set's size where this test looks"
    assert (int(m[1]), int(m[2])) == (len(rows), sum(r["lang"] == "zh" for r in rows))


@pytest.mark.parametrize(("text", "expected"), [
    # a fifth new-user trial, no LLM: a list of likes was one value ("likes: jazz and techno"), or its first thing only
    ("I love jazz and techno.", [("likes", "jazz"), ("likes", "techno")]),
    ("I love jazz, techno and soul.", [("likes", "jazz"), ("likes", "techno"), ("likes", "soul")]),
    ("I love jazz, techno, and soul!", [("likes", "jazz"), ("likes", "techno"), ("likes", "soul")]),
    ("I love both jazz and techno.", [("likes", "jazz"), ("likes", "techno")]),
    ("I hate jazz and techno.", [("dislikes", "jazz"), ("dislikes", "techno")]),
    ("I don't like jazz or techno.", [("dislikes", "jazz"), ("dislikes", "techno")]),
    ("I love country music and hip hop so much.", [("likes", "country music"), ("likes", "hip hop")]),
    # a pair that names one thing stays whole (timem.memory.likes.BINOMIALS)
    ("I love rock and roll.", [("likes", "rock and roll")]),
    ("I love jazz, rock and roll and soul.", [("likes", "jazz"), ("likes", "rock and roll"), ("likes", "soul")]),
    ("I love salt and pepper.", [("likes", "salt and pepper")]),
    # an activity after a liked thing is a hobby of the list, or nothing
    ("I love jazz and hiking.", [("likes", "jazz"), ("hobby", "hiking")]),
    ("I love hiking and jazz.", [("hobby", "hiking"), ("likes", "jazz")]),
    ("I love jazz and running my own studio.", [("likes", "jazz")]),
    # no list: an aside after a comma, someone else's list, a clause after "and"
    ("I love jazz, especially bebop.", [("likes", "jazz")]),
    ("My sister loves jazz, techno and soul.", []),
    ("I love jazz and my wife loves techno.", [("likes", "jazz")]),  # the speaker's like, not the wife's (a trial)
])
def test_a_list_of_likes_gives_one_item_each(text, expected):
    assert _grounded(text) == expected


def test_a_further_thing_of_a_list_is_grounded_by_the_clause_the_list_goes_on_from():
    """The grounding cut "I love jazz, techno and soul" at its comma, so "techno and soul" spoke of no like."""
    assert check_statement("likes", "soul", "I love jazz, techno and soul.") is None
    assert check_statement("likes", "soul", "My sister loves jazz, techno and soul.") is not None
    assert check_statement("likes", "coffee", "I love my job, the coffee is bad.") is not None


@pytest.mark.parametrize(("text", "expected"), [
    # the fifth new-user trial: "Rolling" was read as an activity, so "I love the Rolling Stones" liked nothing
    ("I love the Rolling Stones.", [("likes", "Rolling Stones")]),
    ("I hate the Rolling Stones.", [("dislikes", "Rolling Stones")]),
    ("I love jazz and the Rolling Stones.", [("likes", "jazz"), ("likes", "Rolling Stones")]),
    # a name keeps its capitals, as "a fan of the Beatles" does ("miles davis" before); "R&B" read nothing
    ("I love Miles Davis.", [("likes", "Miles Davis")]),
    ("I love R&B and soul.", [("likes", "R&B"), ("likes", "soul")]),
    ("I love Bach and Mozart.", [("likes", "Bach and Mozart")]),
    ("I love Simon and Garfunkel.", [("likes", "Simon and Garfunkel")]),
    # a capitalised activity is still one; no thing liked
    ("I love Hiking.", [("hobby", "hiking")]), ("I love the way you think.", []), ("I love the photo!", []),
])
def test_a_name_liked_is_read_as_written(text, expected):
    assert _grounded(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # the fifth new-user trial: "I like to hike" / "I love to swim" read nothing, where "I like hiking" is a hobby
    ("I like to hike.", [("hobby", "hiking")]), ("I love to swim.", [("hobby", "swimming")]),
    ("I like to hike and swim.", [("hobby", "hiking"), ("hobby", "swimming")]),
    ("I love to go hiking on weekends.", [("hobby", "hiking")]), ("I like to play the guitar.", [("hobby", "guitar")]),
    ("I enjoy playing tennis.", [("hobby", "tennis")]), ("I like to read in the evening.", [("hobby", "reading")]),
    # a wish, a denial or a hedge, an activity with an object (a task), no activity of the list: no hobby
    ("I'd like to order a pizza.", []), ("I would love to visit Japan.", []), ("I'd love to go hiking.", []),
    ("I would like to learn to swim.", []), ("I don't like to swim.", []), ("It's not like I love to swim.", []),
    ("I like to run errands.", []), ("I like to run my own business.", []), ("I like to paint my nails.", []),
    ("I like to think so.", []), ("I love to make clay bowls with my kids.", []),
])
def test_liking_to_do_an_activity_is_a_hobby_and_a_wish_is_none(text, expected):
    assert _grounded(text) == expected
