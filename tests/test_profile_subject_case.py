"""The L5 profile's facts block ("Facts as of …") compared the month's participants exactly with the items' subjects:
a month in which the user spoke only through nameless turns (participant ``leo``) left out every item stored as
"Leo's …" (:func:`timem.memory.history.stored_subject` keeps the first spelling). Subjects now match there as they do
in the writer, case-insensitively, shown as first stored; items a file already holds under two spellings of one
subject read as one. Real DuckDB file, no LLM."""

from __future__ import annotations

from datetime import timedelta

from trial_support import T0, fixtures

from timem.models import MemoryItem

embedder, eng = fixtures()


def _facts(eng, user_id: str, month: str) -> str:
    (node,) = [n for n in eng.nodes(user_id, 5) if n.window_key == f"month:{month}"]
    return node.content.split("Facts as of ", 1)[-1] if "Facts as of " in node.content else ""


def test_a_month_of_nameless_turns_lists_the_items_of_the_named_user(eng):
    eng.remember("leo", "s0", "I live in Dublin", T0, reply="Noted.", user_name="Leo")
    eng.remember("leo", "s1", "I moved to Galway", T0 + timedelta(days=35), reply="Noted.")  # June, no name
    eng.extract_items(["leo"])
    eng.consolidate("leo", flush=True)
    assert "- Leo's home city: Dublin (since 2024-05-01)" in _facts(eng, "leo", "2024-05")
    june = _facts(eng, "leo", "2024-06")
    assert "- Leo's home city: Galway (since 2024-06-05)" in june, june
    assert "Dublin" not in june and "leo's" not in june, june


def test_items_under_two_spellings_read_as_one_subject(eng):
    eng.remember("leo", "s0", "I live in Dublin", T0, reply="Noted.", user_name="Leo")
    eng.remember("leo", "s1", "I love jazz", T0 + timedelta(days=2), reply="Noted.", user_name="Leo")
    eng.extract_items(["leo"])
    dublin = next(i for i in eng.memory_items("leo") if i.value == "Dublin")
    # as a file written before subjects matched case-insensitively holds them: a second spelling, a second city
    at = T0 + timedelta(days=3)
    for value, attribute in (("Galway", "home city"), ("tennis", "likes")):
        item = MemoryItem(id=f"item-old-{value}", user_id="leo", kind="fact", subject="leo", attribute=attribute,
                          value=value, event_time=at, valid_from=at, source_ids=dublin.source_ids,
                          created_at=dublin.created_at + timedelta(seconds=1))
        eng.store.add_item(item, eng.embedder.embed([item.label()])[0])
    eng.consolidate("leo", flush=True)
    may = _facts(eng, "leo", "2024-05")
    assert "- Leo's home city: Galway (since 2024-05-04)" in may, may
    assert "Dublin" not in may and "leo's" not in may, may
    assert "- Leo's likes: jazz" in may and "- Leo's likes: tennis" in may, may
