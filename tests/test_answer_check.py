"""The answer check (issue 27 #5): an answer that names only what no memory says is replaced by "I don't know".

A new-user trial forgot "I moved to Lisbon", asked "Which city do I live in now?" over off-topic lines that passed
the score gate, and the embedded model answered "You live in Porto.". Unit cases of the rule, then the chat over a
real DuckDB file with real MiniLM and a scripted LLM that invents.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from timem.config import load_config
from timem.engine import MemoryEngine
from timem.llm.client import LLM
from timem.llm.fake import ScriptedBackend
from timem.recall.answer_check import check_answer, names, unsupported_names

AT = datetime(2024, 6, 18, 21, 0, tzinfo=UTC)
CONTEXT = ("[Sun 16 Jun 2024, 10:00]\nMia: I went hiking in the Arrábida hills with Ana.\n"
           "Mia: The pool near my flat opened again.")


def test_names_are_capitalised_words_inside_a_sentence():
    assert names("You live in Porto.") == ["porto"]
    assert names("Porto. You went to Shanghai's market in May, Mia.", ["Mia"]) == ["shanghai"]
    assert names("Yes. On Monday I said OK to Ana's plan, User.") == ["ana"]
    assert names("You don't know yet.") == [] and names("你住在里斯本。") == []


@pytest.mark.parametrize("answer, unsupported", [
    ("You live in Porto.", ["porto"]),  # the trial's answer: no memory names Porto
    ("You live in Lisbon, Portugal.", ["lisbon", "portugal"]),  # neither is in the context
    ("You went hiking with Ana.", []),  # Ana is there
    ("You went hiking in the Arrábida hills, near Lisbon.", []),  # one supported name is enough
    ("Your friend Ana's hike was on Sunday 16 June.", []),  # a possessive; a weekday and a month are no names
    ("You don't know: the memories say nothing about it.", []),  # no names at all
    ("The Ana you know.", []),  # a word that opens a sentence is not taken
])
def test_an_answer_is_unsupported_only_when_none_of_its_names_is_in_the_sources(answer, unsupported):
    assert unsupported_names(answer, [CONTEXT, "Which city do I live in now?"], ["Mia"]) == unsupported


def test_a_name_matches_a_longer_or_shorter_form_of_four_letters_or_more():
    assert unsupported_names("You love Japanese food.", ["I flew to Japan."]) == []
    assert unsupported_names("You live in Porto.", ["We drove across Portugal."]) == ["porto"]
    assert unsupported_names("You met Al.", ["Alice called."]) == ["al"]


def test_check_answer_replaces_only_answers_to_questions_and_only_when_on():
    q = "Which city do I live in now?"
    text, note = check_answer("You live in Porto.", q, CONTEXT, [], "Mia", "names")
    assert text.startswith("I don't know") and note is not None and "'You live in Porto.'" in note
    assert check_answer("You live in Porto.", q, CONTEXT, ["Mia's home city: Porto"], "Mia", "names")[1] is None
    assert check_answer("You live in Porto.", q, CONTEXT, [], "Mia", "off") == ("You live in Porto.", None)
    # a chat message that asks nothing is acknowledged from the message itself, not checked
    said = "I moved to Porto last week."
    assert check_answer("You moved to Porto.", said, CONTEXT, [], "Mia", "names") == ("You moved to Porto.", None)
    # the question may name it: "Do I live in Porto?" answered "No, you don't live in Porto." is no invention
    assert check_answer("No, you don't live in Porto.", "Do I live in Porto?", CONTEXT, [], "Mia", "names")[1] is None
    # the question's language
    assert check_answer("你住在 Porto。", "我现在住在哪个城市？", CONTEXT, [], "Mia", "names")[0].startswith("我不知道")


def _engine(tmp_path, store, embedder, reply: str, **settings) -> MemoryEngine:
    cfg = load_config(env={}, db_path=store.path, llm_backend="none", cache_dir=tmp_path / "cache",
                      consolidation_mode="extractive", **settings)
    return MemoryEngine(cfg, store, embedder, LLM(ScriptedBackend(lambda _request: reply), store))


def _chat(eng: MemoryEngine) -> str:
    for minute, text in enumerate(["I went hiking in the Arrábida hills with Ana today, away from the city.",
                                   "The city pool near my flat opened again, so I swam twenty lengths."]):
        eng.add_exchange("mia", "chat-1", text, "Sounds lovely!", AT.replace(hour=9, minute=minute))
    turn = eng.chat_turn("mia", "chat-1", "Which city do I live in now?", AT, user_name="Mia")
    assert turn.trace is not None and "hiking" in turn.trace.context  # off-topic memories reach the prompt
    return turn.reply


def test_an_invented_city_in_a_chat_answer_becomes_dont_know_and_the_trace_says_why(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder, "You live in Porto.")
    reply = _chat(eng)
    assert reply == "I don't know: the memories I found do not say.", reply
    trace = eng.traces("mia")[0]
    assert trace.answer == reply and any("answered 'You live in Porto.'" in n and "porto" in n for n in trace.notes)
    # the stored reply is the replacement, so the invented city is never recalled as a memory later
    assert "Porto" not in " ".join(t.text for t in store.turns("mia"))


def test_the_check_can_be_turned_off(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder, "You live in Porto.", answer_check="off")
    assert _chat(eng) == "You live in Porto."


def test_a_supported_answer_is_kept(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder, "You went hiking with Ana in the Arrábida hills.")
    assert _chat(eng) == "You went hiking with Ana in the Arrábida hills."


ZH_CONTEXT = "[2024年6月16日 10:00]\n小美：我搬到里斯本了，在一家物流公司上班。\n小美：我姐姐安娜在波尔图结婚。"


@pytest.mark.parametrize("answer, unsupported", [
    ("你住在上海。", ["上海"]),  # no memory names Shanghai
    ("你住在里斯本。", []),
    ("你姐姐安娜住在波尔图。", []),
    ("你住在里斯本，不是上海。", []),  # one supported name is enough
    ("我不知道。", []),
])
def test_a_chinese_answer_is_checked_by_its_proper_nouns_over_chinese_memories(answer, unsupported):
    assert unsupported_names(answer, [ZH_CONTEXT, "我现在住在哪个城市？"], ["小美"]) == unsupported


def test_a_chinese_answer_over_english_memories_is_not_checked_by_its_han_names():
    """It transliterates: "Lisbon" is 里斯本, which no string match can confirm."""
    assert unsupported_names("你住在里斯本。", [CONTEXT + "\nMia: I moved to Lisbon.", "我现在住在哪个城市？"]) == []


ECHO = ("[Tue 18 Jun 2024, 21:39]\nMia: Where does my sister live?\nAssistant: Your sister lives in Porto.\n"
        "[Thu 4 Apr 2024, 19:34]\nAssistant: Then add the Kumano Kodo trail near Hakone.")


@pytest.mark.parametrize("question, answer, kept", [
    # a new-user trial: the assistant's own earlier (wrong) reply was the only line naming Porto
    ("Which city do I live in now?", "You live in Porto.", False),
    ("Do you know where I live?", "You live in Porto.", False),
    # a question about what the assistant said may be answered from its lines
    ("Which trail did you suggest?", "I suggested the Kumano Kodo trail.", True),
    ("What was your advice for Hakone?", "The Kumano Kodo trail near Hakone.", True),
    ("你推荐了哪条步道？", "Kumano Kodo 步道。", True),
])
def test_the_assistants_own_lines_are_evidence_only_for_what_it_said(question, answer, kept):
    text, note = check_answer(answer, question, ECHO, [], "Mia", "names", {"Assistant"})
    assert (note is None) is kept and (text == answer) is kept, (text, note)


def test_an_earlier_reply_of_the_assistant_does_not_license_the_same_invention(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder, "You live in Porto.")
    eng.add_exchange("mia", "chat-1", "Where does my sister live? I forget which city.", "Your sister lives in Porto.",
                     AT.replace(hour=9))
    turn = eng.chat_turn("mia", "chat-1", "Which city do I live in now?", AT, user_name="Mia")
    assert turn.trace is not None and "Assistant: Your sister lives in Porto." in turn.trace.context  # the case
    assert turn.reply.startswith("I don't know"), turn.reply


OWN = ("[Thu 2 May 2024, 09:00]\nMia: I live in Berlin and I really dislike jazz.\n"
       "[Mon 10 Jun 2024, 09:00]\nMia: I moved to Munich last week.\n"
       "[Sat 15 Jun 2024, 10:00]\nMia: My sister Ana is getting married in Porto.\nMia: Ana's new flat is in Braga.")


@pytest.mark.parametrize("question, answer, kept", [
    # a trial: no memory says anything of a brother, and Berlin is the person's own former city
    ("Where does my brother live?", "Your brother lives in Berlin.", False),
    ("Where does my brother live?", "Berlin", False),
    # lines that name the sister, or Ana whom such a line names, may answer for her
    ("Where does my sister live?", "Your sister Ana lives in Braga.", True),
    ("Where does my sister live?", "In Porto.", True),  # wrong (she married there), but from a line about her
    ("Where does my sister live?", "Your sister lives in Munich.", False),
    ("Does my brother live in Berlin?", "Yes, your brother lives in Berlin.", False),
    ("Where do I live now?", "You live in Munich.", True),  # no relation: the person's own lines
])
def test_a_question_about_a_relation_is_answered_only_from_lines_about_it(question, answer, kept):
    text, note = check_answer(answer, question, OWN, [], "Mia", "names")
    assert (note is None) is kept, (text, note)


def test_a_bare_answer_is_checked_when_the_memories_know_it_as_a_name():
    """A trial: the service's answer to "Where does my sister live?" was the bare word "Berlin"."""
    assert check_answer("Berlin", "Where does my brother live?", OWN, [], None, "names")[1] is not None
    assert check_answer("Berlin.", "Where did I live in May?", OWN, [], None, "names")[1] is None
    assert check_answer("Went on a walk.", "What did I do?", OWN, [], None, "names")[1] is None  # no name


def test_a_question_asked_before_in_the_chat_is_not_recalled_for_itself(tmp_path, store, embedder):
    """A new-user trial: the person's own earlier "Which city do I live in now?" filled the context of the same
    question asked again, pushing real memories out. A question with other words stays a memory."""
    eng = _engine(tmp_path, store, embedder, "You live in Lisbon.")
    eng.add_exchange("mia", "chat-1", "I moved to Lisbon for a new job.", "Welcome to Lisbon!", AT.replace(hour=8))
    eng.add_exchange("mia", "chat-1", "Which city do I live in now?", "You live in Lisbon.", AT.replace(hour=9))
    eng.add_exchange("mia", "chat-1", "Which city did my sister live in before Porto?", "I don't know.",
                     AT.replace(hour=10))
    res = eng.recall("mia", "Which city do I live in now?", AT, persist=False)
    assert "I moved to Lisbon" in res.context, res.context
    assert "Mia: Which city do I live in now?" not in res.context.replace("User:", "Mia:"), res.context
    other = eng.recall("mia", "Did my sister live somewhere before Porto?", AT, persist=False)
    assert "before Porto?" in other.context, other.context
