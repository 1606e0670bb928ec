"""Days of a month written in a turn ("on 7 May", "May 7th", "7 May 2024") are mentioned dates for the time window,
as relative ones ("yesterday [= 7 May 2024]") already were (``node_mentions``, timem.written_dates.mentioned_periods).

Found by a tester through the memory service: "On 7 May I went to the dentist.", said on 20 May, was not in the
window of "What did I do on 7 May?" (only when it was said, 20 May, and the annotations of relative dates counted);
"Yesterday I went to the dentist." said on 8 May was. Real HTTP on 127.0.0.1, real DuckDB file, no LLM.
"""

from __future__ import annotations

from datetime import date

import duckdb
import pytest
from helpers import EXCHANGE
from service_support import client, engine_factory, running

from timem.service import KeyFile
from timem.store import Store, mentions
from timem.store.migrations import MIGRATIONS
from timem.written_dates import mentioned_periods

SAID = [  # (session, event time, message)
    ("s1", "2024-05-20T10:00:00Z", "On 7 May I went to the dentist for a filling."),
    ("s2", "2024-05-21T10:00:00Z", "My sister's wedding is on 9 June; I will give a speech."),
    ("s3", "2024-05-22T10:00:00Z", "I started at the bakery on May 6th, 2024."),
    ("s4", "2024-05-23T10:00:00Z", "I repainted the garden fence."),
]


@pytest.fixture(scope="module")
def embedder(fake_embedder):
    return fake_embedder


def test_a_written_day_puts_the_turn_in_that_days_window(tmp_path, embedder):
    kf = KeyFile(tmp_path / "keys.json")
    key = kf.add("acme")
    db = tmp_path / "t.duckdb"
    with running(engine_factory(db, embedder, **EXCHANGE), kf) as base, client(base, key) as c:
        for session, when, text in SAID:
            r = c.post("/v1/users/ana/turns", json={"session_id": session, "event_time": when, "message": text,
                                                    "reply": "I see."})
            assert r.status_code == 200, r.text
            c.post(f"/v1/users/ana/sessions/{session}/end")
        leaves = {m["id"]: m["content"] for m in
                  c.get("/v1/users/ana/memories", params={"level": 1}).json()["memories"]}
        found = {}
        for question in ("What did I do on 7 May?", "What happens on 9 June 2024?", "What did I do on 6 May 2024?"):
            r = c.post("/v1/users/ana/recall", json={"query": question, "persist": False,
                                                     "question_time": "2024-05-25T12:00:00Z"})
            assert r.status_code == 200, r.text
            trace = r.json()["trace"]
            found[question] = {leaves[x["node_id"]].split("\n")[1] for x in trace["candidates"]
                               if x["time_bonus"] > 0 and x["node_id"] in leaves}
    assert any("dentist" in x for x in found["What did I do on 7 May?"]), found
    assert any("wedding" in x for x in found["What happens on 9 June 2024?"]), found  # the next 9 June: future tense
    assert any("bakery" in x for x in found["What did I do on 6 May 2024?"]), found
    assert not any("fence" in x for xs in found.values() for x in xs), found
    con = duckdb.connect(str(db))
    try:
        assert mentions.stale(con) == []  # what `timem check` compares: the table holds the written days
        days = {r[0] for r in con.execute("SELECT first_day FROM node_mentions").fetchall()}
    finally:
        con.close()
    assert {date(2024, 5, 7), date(2024, 6, 9), date(2024, 5, 6)} <= days


@pytest.mark.parametrize(("said", "text", "days"), [
    ("8 May 2024 (Wednesday) 09:00", "a: I saw Rome on 7 May and Pisa on 9 May.", [(2024, 5, 7), (2023, 5, 9)]),
    ("8 May 2024 (Wednesday) 09:00", "a: I'll fly on 3 May.", [(2025, 5, 3)]),  # future tense: the next one
    ("8 May 2024 (Wednesday) 09:00", "a: the 3rd of March was fun; Sept. 4 too", [(2024, 3, 3), (2023, 9, 4)]),
    ("8 May 2024 (Wednesday) 09:00", "a: May 7th, 2023 and 2024-05-01", [(2023, 5, 7), (2024, 5, 1)]),
    ("8 May 2024 (Wednesday) 09:00", "a: I may 7 times; at May 10:30; on 31 June", []),  # no date, a time, impossible
    ("8 May 2024 (Wednesday) 09:00", "a: yesterday [= 7 May 2024]", [(2024, 5, 7)]),  # the annotation, not twice
    ("8 May 2024 (Wednesday) 09:00", "a: nothing written", []),  # the date line is no mention
])
def test_mentioned_periods(said, text, days):
    got = mentioned_periods(f"On {said}:\n{text}")
    assert got == [(date(*d), date(*d)) for d in days]


def test_without_a_date_line_only_days_with_a_year_count():
    assert mentioned_periods("I moved on 7 May 2024, and on 9 May") == [(date(2024, 5, 7), date(2024, 5, 7))]


def test_a_file_of_schema_13_gets_the_written_days_when_opened(tmp_path, embedder):
    """Its rows were of the annotations only: `timem check` would report every leaf with a written day as stale."""
    from datetime import UTC, datetime

    from timem.config import load_config
    from timem.engine import MemoryEngine

    cfg = load_config(env={}, db_path=tmp_path / "t.duckdb", llm_backend="none", consolidation_mode="extractive",
                      cache_dir=tmp_path / "cache", memory_items=False, **EXCHANGE)
    store = Store(cfg.store.db_path, embedder.model_id, embedder.dim)
    eng = MemoryEngine(cfg, store, embedder, None)
    eng.add_exchange("ana", "s1", "On 7 May I went to the dentist.", "I see.", datetime(2024, 5, 20, 10, tzinfo=UTC))
    eng.end_session("ana", "s1")
    store.con.execute("DELETE FROM node_mentions")  # what schema 13 wrote for it: no annotation, no row
    store.con.execute("DELETE FROM schema_version WHERE version >= 14")
    assert mentions.stale(store.con) != []
    eng.close()
    with Store(cfg.store.db_path, embedder.model_id, embedder.dim) as reopened:
        assert reopened.schema_version == len(MIGRATIONS)
        assert mentions.stale(reopened.con) == []
        assert [r[0] for r in reopened.con.execute("SELECT first_day FROM node_mentions").fetchall()] == \
            [date(2024, 5, 7)]
