"""Aspect queries and second-hop retrieval (:mod:`timem.recall.aspects`, issue 23) on hand-built cases with known
evidence (tests/data/cases/channels/), real MiniLM, real DuckDB, no LLM.

* ``second-hop.jsonl``: "Where did Ana move from?" Ana says once that she moved from her home country, and in
  another session that her necklace is from her grandma "in my home country, Portugal" (no word of the question);
  six other sessions get postcards, parcels and tomatoes *from* somewhere.
* ``aspects.jsonl``: "What do Ana and Ben both collect?" Ana talks about her stamps in six sessions; Ben's coins
  come up once, in words the question does not use ("my shelf of old coins keeps growing").
"""

from __future__ import annotations

import pytest
from channel_support import case_engine

from timem.engine import MemoryEngine
from timem.models import MemoryNode
from timem.recall.aspects import aspect_parts, hop_terms


def _engine(folder, embedder, case: str, **settings) -> MemoryEngine:
    return case_engine(folder, embedder, case, **settings)


@pytest.fixture(scope="module")
def folder(tmp_path_factory, embedder):
    path = tmp_path_factory.mktemp("channels")
    for case in ("second-hop", "aspects"):
        _engine(path, embedder, case).close()
    return path


def test_aspect_parts_split_people_and_coordinated_phrases():
    people = ("Jon", "Gina")
    assert aspect_parts("Did Jon and Gina both participate in dance competitions?", people) == [
        "Did Jon participate in dance competitions?", "Did Gina participate in dance competitions?"]
    assert aspect_parts("When did Caroline meet up with her friends, family, and mentors?", ("Caroline",)) == [
        "When did Caroline meet up with her friends?", "When did Caroline meet up with her family?",
        "When did Caroline meet up with her mentors?"]
    assert aspect_parts("Would Mel rather go to a national park or a theme park?", ("Mel",)) == [
        "Would Mel rather go to a national park?", "Would Mel rather go to a theme park?"]
    assert aspect_parts("Where did Ana move from?", ("Ana",)) == []  # nothing to split
    assert aspect_parts("What did Mel and her kids make?", ("Mel",)) == []  # one group, not two aspects


def test_hop_terms_are_the_matching_sentence_words_the_question_lacks():
    node = MemoryNode(id="x", user_id="u", level=1, content="Ana: Yeah, I'm lucky. I've known these friends for four "
                      "years, since I moved from my home country. Anyway!", span_start="2024-01-05T19:00:00Z",
                      span_end="2024-01-05T19:00:00Z", window_key="w", model_id="verbatim",
                      prompt_version="test")
    terms = hop_terms(node, "Where did Ana move from?", ("Ana",))
    assert "home" in terms and "country" in terms
    assert "moved" not in terms and "ana" not in terms and "lucky" not in terms  # the question's stem, a name
    assert hop_terms(node, "What is the weather like?", ("Ana",)) == []
    dated = node.model_copy(update={"content": "Sam: Big news: I moved to Madrid last week [= week of 22 April 2024]!"})
    assert hop_terms(dated, "Which city did I move to?") == ["news"]  # was ["news", "april"]: the resolved date
    # a code or number is a hop word, as it is a BM25 term ("LH1234" gave "lh", no term since schema 13); a year not
    coded = node.model_copy(update={"content": "Mia: I booked flight LH1234 to Lisbon in 2024. Gate B12."})
    assert hop_terms(coded, "Which flight did I book to Lisbon?") == ["lh1234"]
    room = node.model_copy(update={"content": "Mia: In 2023 we stayed at the Hotel Sol, in room 214."})
    assert hop_terms(room, "Where did we stay in Faro?") == ["room", "214"]  # Hotel Sol: capitalised, as a name


def test_second_hop_brings_the_turn_that_shares_no_word_with_the_question(folder, embedder):
    q = "Where did Ana move from?"
    with _engine(folder, embedder, "second-hop", token_budget=160, channel_slot=1, second_hop=0) as eng:
        before = eng.recall("ana", q, participants=("Ana",), persist=False)
    with _engine(folder, embedder, "second-hop", token_budget=160, channel_slot=1) as eng:  # second_hop = 1
        after = eng.recall("ana", q, participants=("Ana",), persist=False)
    assert "Portugal" not in before.context, before.context  # the case is hard without the second hop
    assert "Portugal" in after.context and "moved from my home country" in after.context, after.context
    second = next(c for c in after.trace.candidates if c.channel)
    assert second.rank == 2 and second.kept and second.channel.startswith("second hop: ")
    assert "home country" in second.channel
    assert any(n.startswith("second hop from leaf") for n in after.trace.notes)
    assert "channels placed 1 leaf after rank 1" in after.trace.notes, after.trace.notes  # was "1 leaves"
    assert after.mem_len <= 160


def test_aspect_queries_give_each_person_a_slot(folder, embedder):
    q = "What do Ana and Ben both collect?"
    with _engine(folder, embedder, "aspects", token_budget=170, channel_slot=1, second_hop=0) as eng:
        before = eng.recall("duo", q, participants=("Ana", "Ben"), persist=False)
    with _engine(folder, embedder, "aspects", token_budget=170, channel_slot=1, aspect_queries="rules",
                 second_hop=0) as eng:
        after = eng.recall("duo", q, participants=("Ana", "Ben"), persist=False)
    assert "coins" not in before.context, before.context  # Ana's stamps fill the budget without aspects
    assert "coins" in after.context and "stamp" in after.context, after.context
    placed = [c for c in after.trace.candidates if c.channel]
    assert any(c.channel.startswith("aspect: ") and "Ben" in c.channel and "Ana" not in c.channel for c in placed)
    assert [c.rank for c in sorted(after.trace.candidates, key=lambda c: c.rank)][:3] == [1, 2, 3]
    assert after.mem_len <= 170


def test_channels_off_leave_the_ranking_alone(folder, embedder):
    q = "What do Ana and Ben both collect?"
    with _engine(folder, embedder, "aspects", token_budget=170, second_hop=0) as eng:
        a = eng.recall("duo", q, participants=("Ana", "Ben"), persist=False)
    assert all(c.channel is None for c in a.trace.candidates)
    assert not any("aspect queries" in n or "second hop" in n for n in a.trace.notes)
