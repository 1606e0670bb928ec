"""A write after a hard erase in the same session: the next turn's seq was the session's turn count, which after the
erase named a stored turn, so the new message was dropped without a word (found by a service test: "I moved to
Zürich" vanished after an earlier hard erase of that user's first turn). Real DuckDB file, no LLM."""

from __future__ import annotations

from datetime import timedelta

from trial_support import T0, fixtures

from timem import editing

embedder, eng = fixtures()


def test_a_message_after_a_hard_erase_is_stored(eng):
    eng.remember("mia", "s0", "My favourite colour is teal.", T0, reply="Noted.", user_name="Mia")
    first = next(n.id for n in eng.store.nodes("mia", 1) if "teal" in n.content)
    editing.erase(eng.store, eng.consolidator, [first])
    assert [t.text for t in eng.store.turns("mia", "s0")] == ["Noted."]
    eng.remember("mia", "s0", "I moved to Zürich last spring.", T0 + timedelta(minutes=5), reply="Lovely city.",
                 user_name="Mia")
    texts = [t.text for t in eng.store.turns("mia", "s0")]
    assert texts == ["Noted.", "I moved to Zürich last spring.", "Lovely city."], texts
    assert len({t.id for t in eng.store.turns("mia", "s0")}) == 3
