"""Found by trying it: "What did I do on 7 May?" gave the assistant's "Nice!" of that day and not what was said
(Mia: "I watched a documentary about volcanoes.", cosine 0.226 to the question with MiniLM): the score gate's
relevance floor asked for a keyword match or a cosine >= 0.25, and a question that names only a time has no
keyword. A leaf inside the question's time window (said then, or mentioning a date then) is now relevant by its
time: "What did I do last week?" gives the whole week.

Real MiniLM (cosines decide here), a real DuckDB file, no LLM.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from trial_support import engine

from timem.recall.gating import score_gate
from timem.recall.leaves import Candidate

LINES = [  # (days after 1 May 2024 09:00 UTC, line): each its own session, answered "Nice!"
    (0, "I repainted the garden fence."),
    (3, "I baked sourdough bread for the neighbours."),
    (6, "I watched a documentary about volcanoes."),  # said on 7 May
    (7, "Yesterday I went hiking up Mount Rigi with my sister."),  # said on 8 May, about 7 May
    (9, "I fixed the bike's rear brake."),  # 10 May
    (20, "I planted tomatoes on the balcony."),  # 21 May
]


@pytest.fixture()
def eng(tmp_path, store, embedder):
    e = engine(tmp_path, store, embedder)
    start = datetime(2024, 5, 1, 9, tzinfo=UTC)
    for k, (day, line) in enumerate(LINES):
        e.remember("mia", f"s{k}", line, start + timedelta(days=day, minutes=k), reply="Nice!", user_name="Mia")
    return e


@pytest.mark.parametrize(("question", "asked", "wanted", "not_wanted"), [
    ("What did I do on 7 May?", datetime(2024, 5, 25, 12, tzinfo=UTC), ["volcanoes", "hiking"], []),
    ("What did I do yesterday?", datetime(2024, 5, 8, 18, tzinfo=UTC), ["volcanoes", "hiking"], ["tomatoes"]),
    ("What did I do last week?", datetime(2024, 5, 14, 12, tzinfo=UTC), ["volcanoes", "hiking", "brake"],
     ["tomatoes"]),
])
def test_what_was_said_in_the_window_reaches_the_context(eng, question, asked, wanted, not_wanted):
    context = eng.recall("mia", question, asked, persist=False).context
    assert all(w in context for w in wanted), context
    assert not any(w in context for w in not_wanted), context


def test_the_gate_counts_the_time_window_as_relevance():
    def leaf(node_id: str, bonus: float) -> Candidate:
        return Candidate(node_id=node_id, semantic=0.2, bm25=0.0, fused=0.9, rank=1, cosine=0.1, time_bonus=bonus)

    kept, why = score_gate([leaf("in", 0.3), leaf("out", 0.0)], [], threshold=0.5, floor=0.25)
    assert kept == {"in"}
    assert "relevance floor" in why["out"] and "relevance floor" not in why["in"]
