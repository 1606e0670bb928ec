"""Forget by text with a request of verbs only (a new-user trial: ``timem forget "loved"`` previewed five facts and
every segment saying "love"; "I painted" 51 segments of a LoCoMo conversation; "I lived in" the home city). Such a
request names no thing to look for: it is refused as "I was going to have been" was, and nothing goes. A gerund or a
noun ("hiking", "painting", "jazz") still names a thing; so does a name ("Ahmed"). A capitalised verb alone ("Loved",
"Painted") is refused as its lower-case form is (a trial: it was read as a name and reached every line saying "love"):
the request's first capital is no evidence of a name, the memories are ("I met Ahmed"). And the preview labels "also
goes" only the facts that go without being asked for (a trial saw the only match labelled so)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from memory_scenario import extractive_engine
from test_cli import cli_env, run  # noqa: F401  (fixture)

from timem.memory.forget_words import RequestWords, request_words, written_as_name

SAID = ["I love the blues.", "I love hiking and swimming.", "I love jazz and hate techno.", "I lived in Hamburg."]
T0 = datetime(2024, 3, 1, 9, tzinfo=UTC)
ALSO = "(also goes: it was said in the same message as what you asked to forget)"


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    return fake_embedder


@pytest.fixture()
def eng(tmp_path, store, embedder):
    engine = extractive_engine(tmp_path, store, embedder)
    for k, text in enumerate(SAID):
        engine.remember("u", f"s{k}", text, T0 + timedelta(days=k))
    return engine


@pytest.mark.parametrize(("text", "only_verbs"), [
    ("loved", True), ("I painted", True), ("I lived in", True), ("I like", True), ("Loved it", True),
    ("I loved it", True), ("我喜欢", True), ("I was going to have been", True),
    ("Loved", True), ("Painted", True), ("Just Moved", True),
    ("hiking", False), ("painting", False), ("jazz", False), ("my garden", False), ("Sweden", False),
    ("Rose", False), ("Mark", False), ("Ahmed moved to Porto", False), ("I lived in Hamburg", False),
    ("I love to swim", False),
])
def test_a_request_of_verbs_only_is_told_from_one_naming_a_thing(text, only_verbs):
    assert request_words(text).only_verbs is only_verbs, request_words(text)


def test_a_capitalised_past_form_alone_may_be_a_name_the_memories_tell():
    """Alone, "Ahmed" and "Loved" look alike: both are read as a verb that may be a name."""
    assert request_words("Loved").maybe_name == "Loved" and request_words("Ahmed").maybe_name == "Ahmed"
    assert request_words("Ahmed").as_name() == RequestWords(key=("Ahmed",), verbs=())
    assert request_words("loved").maybe_name is None and request_words("Loved it").maybe_name is None
    assert written_as_name("Ahmed", ["User: I met Ahmed at the gym."])
    assert written_as_name("Ahmed", ["User: Yesterday [= 9 March 2024] Ahmed moved to Porto."])
    assert not written_as_name("Ahmed", ["User: Ahmed called."])  # a sentence's first word: no evidence
    assert not written_as_name("Loved", ["User: Loved the show!", "User: I love jazz."])
    assert not written_as_name("Loved", ["User: we saw Loved, a film.", "User: I loved it."])  # "loved" goes too


def test_a_name_or_noun_with_no_subject_is_no_verb():
    assert request_words("Ahmed moved to Porto") == request_words("Ahmed moved to Porto")
    assert request_words("Ahmed moved to Porto").key == ("Ahmed", "Porto")
    assert request_words("Sweden").key == ("Sweden",) and request_words("my garden").key == ("garden",)
    assert request_words("Loved the concert").verbs == ("Loved",)


@pytest.mark.parametrize("text", ["loved", "I loved", "I lived in", "I like", "I painted", "Loved it", "Loved",
                                  "Painted", "Lived"])
def test_forgetting_verbs_only_is_refused_and_nothing_goes(eng, text):
    plan = eng.forget("u", text)
    assert plan.empty and "it names no thing to look for, only what was done" in plan.describe(), plan.describe()
    eng.forget("u", text, confirm=True)
    assert len(eng.memory_items("u")) == 5 and len(eng.forget("u", "jazz").segments) == 1


@pytest.mark.parametrize(("text", "value"), [("hiking", "hiking"), ("jazz", "jazz"), ("I love jazz", "jazz")])
def test_a_thing_is_still_forgotten(eng, text, value):
    plan = eng.forget("u", text)
    assert any(i.value == value and i.id not in plan.collateral for i in plan.items), plan.describe()


def test_only_the_facts_not_asked_for_are_labelled_also_goes(eng):
    plan = eng.forget("u", "I love to swim")  # matched by its segment, not by the fact's value ("swim")
    lines = plan.describe().splitlines()
    assert any(line.endswith("hobby: swimming") for line in lines), lines
    assert any("hobby: hiking" in line and line.endswith(ALSO) for line in lines), lines
    assert {i.value for i in plan.items if i.id in plan.collateral} == {"hiking"}


def test_chat_forget_that_i_loved_it_is_refused(eng):
    turn = eng.chat_turn("u", "c1", "forget that I loved it", T0 + timedelta(days=9), confirm_forget=True)
    assert turn.forgotten is not None and turn.forgotten.empty
    assert "it names no thing to look for" in turn.reply and len(eng.memory_items("u")) == 5


def test_cli_forget_of_verbs_only_exits_1(cli_env):  # noqa: F811
    import timem

    db = str(cli_env / "u.duckdb")
    with timem.open(db, llm_backend="none") as m:
        for k, text in enumerate(SAID):
            m.remember("u", f"s{k}", text, T0 + timedelta(days=k))
    code, out = run("forget", "loved", "--user", "u", "--db", db, "--yes")
    assert code == 1 and "nothing matched 'loved', so nothing was forgotten: it names no thing" in out, out
    code, out = run("forget", "hiking", "--user", "u", "--db", db, "--yes")
    assert code == 0 and "forgot 2 item(s) and 1 segment(s)" in out, out


def test_a_request_in_the_first_person_reaches_only_what_the_user_said(tmp_path, store, embedder):
    """A trial: "I painted" reached 51 LoCoMo segments, the other speaker's too. A request in the first person
    reaches what the user said (turns of role user) when the conversation tells the speakers apart."""
    import json

    from timem.datasets import load_dataset

    engine = extractive_engine(tmp_path, store, embedder)
    cfg = engine.config
    rows = [("user", "Cara", "I painted a lake at dawn.", "2024-03-01T09:00:00"),
            ("other", "Mel", "I painted a lake too, last summer.", "2024-03-01T09:01:00")]
    f = tmp_path / "c.jsonl"
    f.write_text("".join(json.dumps({"user_id": "cara", "session_id": "s1", "role": role, "speaker": speaker,
                                     "text": text, "timestamp": ts}) + "\n" for role, speaker, text, ts in rows))
    engine.ingest(load_dataset(f, "jsonl", tz=cfg.time.tz, user_tz=cfg.time.user_tz))
    mine = " | ".join(n.content for n in engine.forget("cara", "I painted a lake").segments)
    assert "at dawn" in mine and "last summer" not in mine, mine
    both = " | ".join(n.content for n in engine.forget("cara", "a lake").segments)  # not in the first person
    assert "at dawn" in both and "last summer" in both, both


@pytest.mark.parametrize(("text", "said"), [
    ("Ahmed", "Yesterday Ahmed moved to Porto."), ("Ahmed", "I met Ahmed at the gym."),
    ("Rose", "Rose gave me a book about Lisbon."), ("Mark", "Mark and I went climbing."),
    ("Will", "I met Will at the gym."),
])
def test_a_name_alone_still_reaches_the_lines_naming_it(eng, text, said):
    eng.remember("u", "names", said, T0 + timedelta(days=20))
    plan = eng.forget("u", text)
    assert [n for n in plan.segments if said.split(" ")[-1] in n.content and text in n.content], plan.describe()
    assert not any("love" in n.content for n in plan.segments), plan.describe()


def test_a_name_the_memories_write_only_first_in_a_sentence_is_told_how_to_ask(eng):
    eng.remember("u", "names", "Ahmed called me about the flat.", T0 + timedelta(days=20))
    plan = eng.forget("u", "Ahmed")
    assert plan.empty and "If 'Ahmed' is a name, add another word that was said with it, a thing or a place (e.g. " \
        "'Ahmed flat' for \"Ahmed called me about the flat\")" in plan.hint, plan.hint
    assert [n.content for n in eng.forget("u", "Ahmed called").segments if "Ahmed called me" in n.content]
    assert [n.content for n in eng.forget("u", "Ahmed flat").segments if "Ahmed called me" in n.content]


def test_the_hints_give_sensible_examples(eng):
    """A new-user trial: refusing "Loved" suggested "add a word it was said with (e.g. 'Loved called')", and "a"
    (no word that says what) was told to "try a shorter request"."""
    hint = eng.forget("u", "Loved").hint
    assert "'Loved called'" not in hint and "(e.g. 'Ahmed flat' for" in hint, hint
    for text in ("a", "the", "and so"):
        hint = eng.forget("u", text).hint
        assert "shorter" not in hint and "it names no thing to look for" in hint, hint
        assert "Say what to forget as it was said (e.g. 'Berlin', 'jazz' or 'my cat')" in hint, hint


@pytest.mark.parametrize("text", ["techno", "I love techno"])
def test_a_fact_whose_value_holds_the_request_is_matched_not_also_goes(tmp_path, store, embedder, text):
    """A new-user trial: forgetting "techno" labelled "likes: techno music" "also goes: said in the same message",
    though it is what was asked for; only "likes: classical music" goes without being named."""
    engine = extractive_engine(tmp_path, store, embedder)
    engine.remember("u", "s1", "I love techno music and classical music.", T0)
    plan = engine.forget("u", text)
    lines = plan.describe().splitlines()
    assert any(line.endswith("likes: techno music") for line in lines), lines
    assert any("likes: classical music" in line and line.endswith(ALSO) for line in lines), lines
    assert {i.value for i in plan.items if i.id in plan.collateral} == {"classical music"}
    music = engine.forget("u", "techno music")  # "music" alone does not name classical music
    assert {i.value for i in music.items if i.id in music.collateral} == {"classical music"}
