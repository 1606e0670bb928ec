"""Stale values do not stay "current" (issue 27 item 12): a like ends the dislike of the same thing, a diet that
ends is no longer valid now, in the memory items, in the month-end "Facts as of …" block of the L5 profile, and in
what recall puts first. Real DuckDB, real MiniLM, rule extraction, extractive consolidation (no LLM)."""

from __future__ import annotations

from datetime import UTC, datetime

from memory_scenario import write

from timem.config import load_config
from timem.datasets import load_dataset
from timem.engine import MemoryEngine

ASKED = datetime(2024, 5, 25, 12, tzinfo=UTC)  #: after both statements, in May

JAZZ = [("s1", "Mia", "I really dislike jazz.", "2024-05-03T19:00:00"),
        ("s2", "Mia", "I love jazz now.", "2024-05-20T19:00:00")]
DIET = [("s1", "Tomas", "I'm vegetarian.", "2024-05-02T19:00:00"),
        ("s2", "Tomas", "I eat meat again now.", "2024-05-22T19:00:00")]


def _ingest(tmp_path, store, embedder, user_id: str, rows) -> MemoryEngine:
    cfg = load_config(env={}, db_path=store.path, llm_backend="none", cache_dir=tmp_path / "cache",
                      consolidation_mode="extractive", memory_extractor="rules")
    eng = MemoryEngine(cfg, store, embedder, None)
    f = write(tmp_path / f"{user_id}.jsonl", user_id, rows)
    eng.ingest(load_dataset(f, "jsonl", tz=cfg.time.tz, user_tz=cfg.time.user_tz))
    return eng


def _may_facts(eng: MemoryEngine, user_id: str) -> str:
    (may,) = [n for n in eng.nodes(user_id, 5) if n.window_key == "month:2024-05"]
    return may.content.split("\n\nFacts as of ", 1)[1] if "\n\nFacts as of " in may.content else ""


def test_a_like_ends_the_earlier_dislike_of_the_same_thing(tmp_path, store, embedder):
    eng = _ingest(tmp_path, store, embedder, "mia", JAZZ)
    items = {(i.attribute, i.value): i for i in eng.memory_items("mia")}
    dislike, like = items[("dislikes", "jazz")], items[("likes", "jazz")]
    assert like.is_open and not dislike.is_open  # kept as history, not deleted
    assert (dislike.valid_to, dislike.superseded_by) == (like.valid_from, like.id)

    facts = _may_facts(eng, "mia")  # the month-end block lists only what holds on 31 May
    assert facts.startswith("2024-05-31:") and "- Mia's likes: jazz (since 2024-05-20)" in facts, facts
    assert "dislikes" not in facts, facts

    context = eng.recall("mia", "Do I like jazz now?", ASKED, persist=False).context
    lines = context.splitlines()
    assert lines[0] == "[preference, valid 2024-05-20 – now] Mia's likes: jazz", context
    assert "dislikes: jazz" not in context  # no item line for the dislike: it no longer holds
    disliked = [n for n, line in enumerate(lines) if "dislike jazz" in line]  # the 3 May turn may follow, as history
    assert all(n > 0 for n in disliked), context


def test_a_diet_that_ended_is_not_presented_as_valid_now(tmp_path, store, embedder):
    eng = _ingest(tmp_path, store, embedder, "tomas", DIET)
    (veg,) = [i for i in eng.memory_items("tomas") if i.attribute == "diet"]
    assert veg.value == "vegetarian" and not veg.is_open
    assert veg.valid_to == datetime(2024, 5, 22, 19, tzinfo=UTC)  # ended when "I eat meat again" was said

    assert "vegetarian" not in _may_facts(eng, "tomas")

    context = eng.recall("tomas", "Is Tomas vegetarian?", ASKED, persist=False).context
    # given with its end, never as valid now (timem.recall.items: an ended value is shown ended)
    assert context.startswith("[preference, valid 2024-05-02 – 2024-05-22] Tomas's diet: vegetarian (ended "
                              "2024-05-22, nothing since)") and "– now" not in context, context
    assert "I eat meat again now." in context, context  # the turn that ended it reaches the answer
    # asked before the change, the diet held then
    before = eng.recall("tomas", "Is Tomas vegetarian?", datetime(2024, 5, 10, tzinfo=UTC), persist=False).context
    assert before.startswith("[preference, valid 2024-05-02 – now] Tomas's diet: vegetarian"), before
