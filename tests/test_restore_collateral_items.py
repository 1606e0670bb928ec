"""Restoring a forgotten segment: "I live in Dublin and I love jazz." then "forget that I live in Dublin" took the
segment, Dublin (named) and "likes jazz" (it went only because it was said in that segment). Restoring the segment
left both forgotten, as if the user had forgotten jazz by name. A fact forgotten by name stays forgotten; one that
went only with its segment comes back with it. Real DuckDB file, the rules, no LLM."""

from __future__ import annotations

from trial_support import fixtures, say_lines

embedder, eng = fixtures()


def _labels(eng) -> set[str]:
    return {i.label() for i in eng.memory_items("mia")}


def test_restoring_a_segment_brings_back_its_collateral_facts_not_the_named_one(eng):
    say_lines(eng, ["I live in Dublin and I love jazz.", "I work as a nurse."])
    plan = eng.forget("mia", "I live in Dublin", confirm=True)
    assert {i.label() for i in plan.items} == {"Mia's home city: Dublin", "Mia's likes: jazz"}
    assert [i.label() for i in plan.items if i.id in plan.collateral] == ["Mia's likes: jazz"]
    assert _labels(eng) == {"Mia's job: nurse"}
    for seg in plan.segments:
        eng.restore_memory(seg.id)
    assert _labels(eng) == {"Mia's likes: jazz", "Mia's job: nurse"}  # Dublin was forgotten by name: it stays gone
    assert eng.memory_item(next(i.id for i in plan.items if i.value == "Dublin")).status == "deleted"


def test_facts_picked_in_the_facts_view_stay_forgotten_and_their_segment_mates_come_back(eng):
    say_lines(eng, ["I live in Dublin and I love jazz."])
    dublin = next(i for i in eng.memory_items("mia") if i.value == "Dublin")
    plan = eng.forget("mia", item_ids=[dublin.id], confirm=True)
    for seg in plan.segments:
        eng.restore_memory(seg.id)
    assert _labels(eng) == {"Mia's likes: jazz"}
