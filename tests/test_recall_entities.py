"""Entity and Rocchio channels (:mod:`timem.recall.entities`, issue 23) on hand-built cases with known evidence
(tests/data/cases/channels/), real MiniLM, real DuckDB, no LLM.

* ``entity.jsonl``: "What do Mia's kids like?" Mia says in four turns of one session what her kids like (school,
  stories, songs, the bus); Leo's kids like soccer in another; in a fourth session Mia says "My kids are crazy about
  dinosaurs" (no "like"). The fused ranking fills a small budget from the first session.
* ``rocchio.jsonl``: "What does Mia make with her kids?" Mia makes clay bowls and cups with them (session 1); in
  another session "We painted a big sunflower canvas together" (no word of the question), while other sessions
  name the kids without making anything (a cold, screen time, a new school).
"""

from __future__ import annotations

import pytest
from channel_support import case_engine

from timem.engine import MemoryEngine
from timem.recall.entities import entity_terms, subject_of


def _engine(folder, embedder, case: str, **settings) -> MemoryEngine:
    return case_engine(folder, embedder, case, second_hop=0, **settings)


@pytest.fixture(scope="module")
def folder(tmp_path_factory, embedder):
    path = tmp_path_factory.mktemp("entities")
    for case in ("entity", "rocchio"):
        _engine(path, embedder, case).close()
    return path


def test_subject_and_entity_terms():
    people = ("Melanie", "Caroline")
    assert subject_of("What does Melanie think about Caroline's decision to adopt?", people) == "Melanie"
    assert subject_of("Who supports Caroline when she has a negative experience?", people) == "Caroline"
    assert subject_of("What is the weather like?", people) is None
    assert subject_of("What did Mel paint?", ("Mel Smith",)) == "Mel Smith"  # a first name names them
    assert entity_terms("What activities has Melanie done with her family?", people) == ["family"]
    assert entity_terms('What did Caroline take away from the book "Becoming Nicole"?', people) == [
        "take", "away", "book", "becoming", "nicole"]
    assert entity_terms("Who is Melanie?", people) == []


def test_entity_channel_brings_the_subjects_turn_from_another_session(folder, embedder):
    q = "What do Mia's kids like?"
    with _engine(folder, embedder, "entity", token_budget=90, channel_slot=1) as eng:
        before = eng.recall("mia", q, participants=("Mia", "Leo"), persist=False)
    with _engine(folder, embedder, "entity", token_budget=90, channel_slot=1, entity_leaves=1) as eng:
        after = eng.recall("mia", q, participants=("Mia", "Leo"), persist=False)
    assert "dinosaurs" not in before.context, before.context  # the first session's turns fill the budget
    assert "dinosaurs" in after.context, after.context
    placed = [c for c in after.trace.candidates if c.channel]
    assert len(placed) == 1 and placed[0].rank == 2 and placed[0].kept
    assert placed[0].channel == "entity: kids by Mia"
    assert "entity channel (kids; speaker Mia): 1 leaf from other sessions" in after.trace.notes, after.trace.notes
    assert after.mem_len <= 90
    with _engine(folder, embedder, "entity", token_budget=90, channel_slot=1, entity_leaves=1,
                 entity_scope="any") as eng:
        anyone = eng.recall("mia", q, participants=("Mia", "Leo"), persist=False)
    assert "soccer" in anyone.context and "dinosaurs" not in anyone.context, anyone.context  # Leo's kids win then


def test_rocchio_channel_brings_a_turn_like_the_best_ones(folder, embedder):
    q = "What does Mia make with her kids?"
    with _engine(folder, embedder, "rocchio", token_budget=130, channel_slot=2) as eng:
        before = eng.recall("mia", q, participants=("Mia", "Leo"), persist=False)
    with _engine(folder, embedder, "rocchio", token_budget=130, channel_slot=2, rocchio_leaves=1,
                 rocchio_beta=1.0) as eng:
        after = eng.recall("mia", q, participants=("Mia", "Leo"), persist=False)
    assert "craft table" not in before.context, before.context
    assert "craft table" in after.context and "clay" in after.context, after.context
    placed = [c for c in after.trace.candidates if c.channel]
    assert len(placed) == 1 and placed[0].rank == 3 and placed[0].channel.startswith("rocchio: ")
    assert after.mem_len <= 130


def test_channels_off_leave_the_ranking_alone(folder, embedder):
    with _engine(folder, embedder, "entity", token_budget=90, channel_slot=1) as eng:
        r = eng.recall("mia", "What do Mia's kids like?", participants=("Mia", "Leo"), persist=False)
    assert all(c.channel is None for c in r.trace.candidates)
    assert not any(n.startswith(("entity channel", "Rocchio channel")) for n in r.trace.notes)
