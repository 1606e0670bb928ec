"""A new-user trial with no LLM: forgetting a line left the assistant's reply of the same exchange, which repeated
it in other words. The reply goes with the line, and the preview says so (:mod:`timem.memory.forget_scope`). Real
DuckDB file, no LLM."""

from __future__ import annotations

from trial_support import fixtures

from timem.memory.forget import forgotten_turn_ids
from timem.models import Level

EXCHANGES = [
    ("I adopted a grey cat called Pixel.", "What a lovely little furball!"),
    ("I love jazz.", "Nice, that genre is great!"),
]


embedder, eng = fixtures(EXCHANGES)


def test_the_reply_of_the_exchange_goes_with_the_line_and_the_preview_says_so(eng, store):
    plan = eng.forget("mia", "my cat Pixel")
    contents = [n.content for n in plan.segments]
    assert any("grey cat called Pixel" in c for c in contents) and any("lovely little furball" in c for c in contents)
    assert not any("jazz" in c or "genre" in c for c in contents)
    reply = next(n for n in plan.segments if "furball" in n.content)
    assert reply.id in plan.replies
    assert f"segment {reply.id} (the assistant's reply to a line that goes)" in plan.describe()
    eng.forget("mia", "my cat Pixel", confirm=True)
    gone = forgotten_turn_ids(store.nodes("mia", Level.SEGMENT, status=None))
    texts = {t.text for t in store.turns("mia") if t.id in gone}
    assert texts == {"I adopted a grey cat called Pixel.", "What a lovely little furball!"}
