"""A question naming a time window keeps lines outside it only for real relevance: a content word of the question
beyond its time and persons, or a cosine >= ``gate_floor_outside_window`` (0.6), not the plain floor (0.25).

Found by a tester through the memory service: a small user said one "Today I …" line a day from 1 to 20 April, and
"What did I do on 10 April?" (asked on 25 April) got nearly all twenty lines: each passed the score gate's floor
(MiniLM cosine 0.29-0.50 with the question; the line of 10 April itself only 0.44), though the window's line ranked
first. Real MiniLM (cosines decide), real HTTP on 127.0.0.1, a real DuckDB file, no LLM.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from helpers import EXCHANGE
from service_support import client, engine_factory, running

from timem.recall.gating import score_gate
from timem.recall.leaves import Candidate
from timem.recall.time_channel import topical
from timem.service import KeyFile

ACTS = ["went to the gym", "baked banana bread", "called my grandmother", "fixed the kitchen tap",
        "read a novel about pirates", "walked the dog by the river", "cleaned the garage",
        "watched a documentary about volcanoes", "painted the fence", "planted tomatoes", "went swimming",
        "had lunch with Tom", "repaired my bike", "wrote a letter to my aunt", "visited the museum",
        "learned a song on the guitar", "cooked a curry", "went to the dentist", "bought new shoes",
        "played chess online"]  # 1-20 April 2024, one a day
ASKED = "2024-04-25T12:00:00Z"


@pytest.fixture(scope="module")
def base(tmp_path_factory, embedder):
    folder = tmp_path_factory.mktemp("svc")
    kf = KeyFile(folder / "keys.json")
    key = kf.add("acme")
    with running(engine_factory(folder / "t.duckdb", embedder, memory_items=False, **EXCHANGE), kf) as url, \
            client(url, key) as c:
        start = datetime(2024, 4, 1, 18, tzinfo=UTC)
        said = [(f"Today I {a}.", start + timedelta(days=k)) for k, a in enumerate(ACTS)]
        said.append(("The tomatoes are already sprouting on the balcony.", datetime(2024, 4, 21, 18, tzinfo=UTC)))
        for k, (text, when) in enumerate(said):
            r = c.post("/v1/users/mia/turns", json={"session_id": f"s{k}", "event_time": when.isoformat(),
                                                    "message": text, "reply": "Nice!"})
            assert r.status_code == 200, r.text
            c.post(f"/v1/users/mia/sessions/s{k}/end")
        yield c


def _context(c, question: str) -> str:
    r = c.post("/v1/users/mia/recall", json={"query": question, "question_time": ASKED, "persist": False})
    assert r.status_code == 200, r.text
    return r.json()["context"]


def test_only_the_windows_line_for_a_question_of_one_day(base):
    context = _context(base, "What did I do on 10 April?")
    assert "planted tomatoes" in context, context
    others = [a for a in ACTS if a != "planted tomatoes" and a in context]
    assert others == [], context  # nearly all nineteen were there


def test_a_line_outside_the_window_that_shares_a_content_word_stays(base):
    context = _context(base, "Have the tomatoes I planted on 10 April grown?")
    assert "planted tomatoes" in context and "sprouting" in context, context
    assert "went to the gym" not in context and "cooked a curry" not in context, context


def test_score_gate_holds_outside_leaves_to_their_floor():
    def leaf(node_id: str, bonus: float, cosine: float) -> Candidate:
        return Candidate(node_id=node_id, semantic=0.2, bm25=0.0, fused=0.9, rank=1, cosine=cosine, time_bonus=bonus,
                         bm25_raw=1.0)

    leaves = [leaf("in", 0.3, 0.1), leaf("out", 0.0, 0.45), leaf("near", 0.0, 0.65), leaf("free", 0.0, 0.3)]
    kept, why = score_gate(leaves, [], threshold=0.5, floor=0.25, outside={"out", "near"}, outside_floor=0.6)
    assert kept == {"in", "near", "free"}
    assert "outside the question's time window" in why["out"]


def test_topical_leaves_out_time_words_speakers_and_names():
    assert topical("What did I cook on 17 April?", "User: Today [= 17 April 2024] I cooked a curry.")
    assert not topical("What did I do on 10 April?", "User: Today [= 3 April 2024] I went to the gym.")
    assert not topical("What did Caroline do on 3 May?", "Melanie: That's great, Caroline!",
                       frozenset({"caroline"}))
