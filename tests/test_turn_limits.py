"""Limits on what one turn may hold: ``max_turn_chars`` (section ``[store]``, default 100,000) on every path, with
one clear error naming where the turn is and writing nothing; a LoCoMo year written ``0001`` is not read as 2001."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from service_support import client, engine_factory, running
from test_import_faults import line, timem

from timem.config import load_config
from timem.datasets import load_dataset
from timem.engine import MemoryEngine
from timem.errors import InputError, TextTooLongError
from timem.service import KeyFile
from timem.settings import StoreSettings

AT = datetime(2024, 4, 1, 9, tzinfo=UTC)
UTC_ZONE = ZoneInfo("UTC")
LIMIT = StoreSettings().max_turn_chars


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    return fake_embedder


def test_the_default_holds_every_locomo_dev_turn_with_room_to_spare(locomo_dev):
    users = load_dataset(locomo_dev, "locomo", tz=UTC_ZONE, max_turn_chars=LIMIT)
    longest = max(len(t.text) + len(t.image_caption or "") for u in users for t in u.turns)
    assert LIMIT == 100_000 and longest * 50 < LIMIT, longest


def test_an_over_long_jsonl_turn_is_one_line_through_the_cli(tmp_path):
    src = tmp_path / "long.jsonl"
    src.write_text(line("amy", "I collect postcards.") + line("amy", "x" * (LIMIT + 1), ts="2024-04-01T10:00:00"))
    db = tmp_path / "t.duckdb"
    res = timem("ingest", str(src), "--format", "jsonl", "--l1-only", "--llm", "none", "--db", str(db), cwd=tmp_path)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and "max_turn_chars" in err and "100,001 characters" in err, err
    assert f"file {src}" in err and "line 2" in err and "field 'text'" in err, err
    assert not db.exists()


def test_locomo_turns_and_captions_are_limited_too(tmp_path):
    conv = {"speaker_a": "Ann", "speaker_b": "Ben", "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ann", "text": "Hello.", "dia_id": "D1:1"},
                          {"speaker": "Ben", "text": "Look.", "dia_id": "D1:2", "blip_caption": "a photo " * 10}]}
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{"sample_id": "conv-x", "conversation": conv}]))
    with pytest.raises(TextTooLongError, match=r"max_turn_chars = 50.*record conv-x D1:2, field 'image_caption'"):
        load_dataset(path, "locomo", tz=UTC_ZONE, max_turn_chars=50)
    assert len(load_dataset(path, "locomo", tz=UTC_ZONE, max_turn_chars=100)[0].turns) == 2


def test_engine_ingest_and_chat_use_the_configured_limit(store, embedder, tmp_path):
    cfg = load_config(env={}, db_path=store.path, max_turn_chars=40)
    eng = MemoryEngine(cfg, store, embedder, None)
    with pytest.raises(TextTooLongError, match=r"41 characters, more than max_turn_chars = 40.*field 'text'"):
        eng.add_exchange("amy", "s1", "x" * 41, "Ok.", AT)
    with pytest.raises(TextTooLongError, match="field 'text'"):
        eng.chat_turn("amy", "s1", "y" * 41, AT)
    src = tmp_path / "a.jsonl"
    src.write_text(line("amy", "z" * 41))
    from timem.datasets import load_jsonl

    with pytest.raises(TextTooLongError, match="record turn amy:s1:0"):
        eng.ingest(load_jsonl(src, UTC_ZONE), upper_levels=False)  # an API caller's users, not limited at load
    assert store.users() == []
    eng.add_exchange("amy", "s1", "x" * 40, "Ok.", AT)


def test_service_refuses_a_turn_over_the_limit_with_413(tmp_path, embedder):
    kf = KeyFile(tmp_path / "keys.json")
    key = kf.add("acme")
    with running(engine_factory(tmp_path / "t.duckdb", embedder, max_turn_chars=30), kf) as base, \
            client(base, key) as c:
        r = c.post("/v1/users/mia/turns", json={"session_id": "s1", "event_time": "2024-04-01T09:00:00+00:00",
                                                "message": "m" * 31, "reply": "Ok."})
        assert r.status_code == 413 and "max_turn_chars" in r.json()["error"], r.text
        assert c.get("/v1/users").json()["users"] == []


@pytest.mark.parametrize("label, year", [("1:56 pm on 1 January, 0001", None), ("1:56 pm on 8 May, 0023", 23),
                                         ("1:56 pm on 8 May, 2023", 2023)])
def test_a_locomo_year_stays_as_written(tmp_path, label, year):
    conv = {"speaker_a": "Ann", "speaker_b": "Ben", "session_1_date_time": label,
            "session_1": [{"speaker": "Ann", "text": "Hello.", "dia_id": "D1:1"}]}
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{"sample_id": "conv-x", "conversation": conv}]))
    if year is None:  # year 1 is outside the calendar windows' years: refused, never 2001
        with pytest.raises(InputError, match=r"outside the years 2-9998.*field 'session_1_date_time'"):
            load_dataset(path, "locomo", tz=UTC_ZONE)
    else:
        (user,) = load_dataset(path, "locomo", tz=UTC_ZONE)
        assert user.turns[0].event_time.year == year
