"""The grounding filter that keeps small models from copying history or inventing facts into L2-L5."""

from __future__ import annotations

import pytest
from helpers import ABSTRACTIVE, make_turn

from timem.consolidation.grounding import content_words, ground, ground_content


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    """Logic tests: the deterministic hashing embedder instead of MiniLM (tests/conftest.py)."""
    return fake_embedder

CHILDREN = ["[2023-06-09 (Fri)]\nOn 9 June 2023: Caroline: I gave a talk at my school event about my transition. "
            "Melanie: Wow! I took the kids camping at the beach last weekend."]
HISTORY = ["Caroline and Melanie talked about the LGBTQ support group Caroline attended on 7 May 2023. "
           "Caroline wants to study counseling."]


def test_content_words_stem_and_skip_dates_and_summary_verbs():
    assert content_words("Melanie discussed camping trips on 9 June 2023") == {"melani", "camp", "trip"}
    assert content_words("她周末去露营") >= {"露", "营"}  # CJK characters count one by one


def test_copied_and_invented_sentences_are_dropped_supported_ones_kept():
    summary = ("Caroline gave a talk about her transition at a school event. "
               "Caroline and Melanie talked about the LGBTQ support group Caroline attended on 7 May 2023. "
               "Melanie is a 25-year-old pilot who loves opera and chess. "
               "Melanie took her kids camping at the beach.")
    g = ground(summary, CHILDREN, HISTORY)
    assert g.text == ("Caroline gave a talk about her transition at a school event. "
                      "Melanie took her kids camping at the beach.")
    assert [r for _, r in g.dropped] == ["copied", "unsupported"]


def test_a_summary_that_only_copies_history_leaves_nothing():
    assert ground(HISTORY[0], CHILDREN, HISTORY).text == ""


def test_profiles_may_carry_history_forward_but_not_invent():
    content = ("Caroline: Caroline wants to study counseling. Caroline gave a talk at her school event.\n"
               "Melanie: Melanie is a 25-year-old pilot who loves opera and chess.")
    text, dropped = ground_content(content, CHILDREN, HISTORY, profile_lines=True)
    assert text == "Caroline: Caroline wants to study counseling. Caroline gave a talk at her school event."
    assert dropped == [("Melanie is a 25-year-old pilot who loves opera and chess.", "unsupported")]


def test_a_copying_model_is_asked_again_without_history_and_the_drop_is_audited(store, embedder, tmp_path):
    """Integration: the first answer for the second session copies the first session's memory."""
    from datetime import UTC, datetime

    from timem.config import load_config
    from timem.engine import MemoryEngine
    from timem.llm.client import LLM
    from timem.llm.fake import ScriptedBackend

    answers: list[str] = []

    def copier(request):
        text = request.messages[-1].content
        if "profiles" in (request.json_schema or {}).get("properties", {}):
            return '{"profiles": [{"person": "Zoe", "profile": "Zoe adopted a rescue dog called Rex."}]}'
        if "Earlier session memories" in text and "Rex" in text.split("Earlier session memories")[1]:
            answers.append("copy")
            return '{"summary": "Zoe adopted a rescue dog called Rex."}'  # copies the history
        answers.append("fresh")
        body = text.split("\n\nEarlier ")[0]
        return '{"summary": "Zoe adopted a rescue dog called Rex."}' if "Rex" in body else \
            '{"summary": "Zoe ran five kilometres along the river."}'

    cfg = load_config(env={}, db_path=str(tmp_path / "timem.duckdb"), **ABSTRACTIVE,  # the LLM writes L2-L5
                      memory_extractor="rules")  # and nothing else: the answers below are consolidation's
    eng = MemoryEngine(cfg, store, embedder, LLM(ScriptedBackend(copier, model_id="copier"), store))
    t1, t2 = datetime(2024, 5, 2, 9, tzinfo=UTC), datetime(2024, 5, 9, 7, tzinfo=UTC)
    eng.store.add_turns([make_turn("zoe", "s1", 0, "Zoe", "I adopted a rescue dog called Rex.", t1),
                         make_turn("zoe", "s2", 0, "Zoe", "I ran five kilometres along the river.", t2)])
    for s in ("s1", "s2"):
        eng.store.end_session("zoe", s)
    eng.consolidate("zoe", flush=True)
    l2 = eng.store.nodes("zoe", 2)
    assert [n.content for n in l2] == ["Zoe adopted a rescue dog called Rex.",
                                       "Zoe ran five kilometres along the river."]
    assert l2[1].history_ids == []  # the surviving answer was written without history
    assert answers[:3] == ["fresh", "copy", "fresh"]
    audit = eng.store.con.execute("SELECT node_id, detail FROM audit WHERE action = 'grounding-drop'").fetchall()
    assert [a[0] for a in audit] == [l2[1].id] and '"copied"' in audit[0][1]


MAY = ["[2024-05-03 (Fri)]\nMia: I can't stand jazz, honestly.",
       "[2024-05-20 (Mon)]\nMia: I love jazz now, I went to a jazz concert with my sister Ana."]


@pytest.mark.parametrize("invented", ["Mia is a 30-year-old woman who loves jazz now and goes to jazz concerts.",
                                      "Mia, a thirty-year-old woman, loves jazz now and goes to jazz concerts.",
                                      "Mia loves jazz now and paid 45 euros for a jazz concert with her sister."])
def test_a_profile_sentence_with_a_number_nobody_said_is_dropped(invented):
    """Issue 27 #12: the abstractive May profile's invented age passed on its other (supported) words."""
    content = f"Mia: {invented} Mia went to a jazz concert with her sister Ana on 20 May 2024."
    text, dropped = ground_content(content, MAY, [], profile_lines=True)
    assert dropped == [(invented, "unsupported")]
    assert text == "Mia: Mia went to a jazz concert with her sister Ana on 20 May 2024."  # its date was said


def test_a_number_the_conversation_said_is_kept():
    children = [*MAY, "[2024-05-25 (Sat)]\nMia: I turned 30 today and I love jazz now."]
    content = "Mia: Mia is a 30-year-old woman who loves jazz now and goes to jazz concerts."
    assert ground_content(content, children, [], profile_lines=True) == (content, [])
