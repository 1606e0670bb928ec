"""Relative dates are resolved in the speaker's local time: the offset written in the input, else the
user's zone (``user_timezones``), else ``timezone`` (case c05_tz in tests/data/cases; DST changes)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from conftest import CASES
from helpers import EXCHANGE

from timem.config import load_config
from timem.datasets import load_dataset, load_jsonl, write_jsonl
from timem.engine import MemoryEngine
from timem.errors import ConfigError
from timem.models import Level
from timem.store import Store


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    """Logic tests: the deterministic hashing embedder instead of MiniLM (tests/conftest.py)."""
    return fake_embedder

CASE = CASES / "c05_tz.jsonl"


def engine(tmp_path, embedder, **settings) -> MemoryEngine:
    # one L1 segment per exchange: a statement and its reply are one segment (one text to check)
    cfg = load_config(env={}, db_path=tmp_path / "t.duckdb", llm_backend="none", **{**EXCHANGE, **settings})
    return MemoryEngine(cfg, Store(cfg.store.db_path, embedder.model_id, embedder.dim), embedder, None)


def l1_texts(eng: MemoryEngine, user: str) -> list[str]:
    return [n.content for n in eng.store.nodes(user, int(Level.SEGMENT))]


def test_explicit_offset_is_the_speakers_local_time(tmp_path, embedder):
    """'yesterday' said at 2024-03-10T00:30+09:00 is 9 March, whatever the configured zone."""
    for zone in ("UTC", "America/Los_Angeles"):
        eng = engine(tmp_path / zone.replace("/", "_"), embedder, timezone=zone)
        users = load_dataset(CASE, "jsonl", tz=eng.config.time.tz, user_tz=eng.config.time.user_tz)
        assert users[0].turns[0].utc_offset_minutes == 9 * 60
        eng.ingest(users, upper_levels=False)
        (text,) = l1_texts(eng, "kaito")
        assert "yesterday [= 9 March 2024]" in text, text
        assert eng.store.turns("kaito")[0].utc_offset_minutes == 540  # kept in the store
        eng.close()


def _naive_file(tmp_path: Path, user: str, stamps: list[str]) -> Path:
    path = tmp_path / f"{user}.jsonl"
    rows = []
    for i, ts in enumerate(stamps):
        rows.append({"user_id": user, "session_id": f"s{i}", "speaker": "Berta", "role": "user",
                     "text": "I signed the lease yesterday.", "timestamp": ts})
        rows.append({"user_id": user, "session_id": f"s{i}", "speaker": "Assistant", "role": "assistant",
                     "text": "Congratulations!", "timestamp": ts})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("stamp, offset, expect", [
    ("2024-03-31T00:30:00", 60, "30 March 2024"),     # CET, the night of the spring change
    ("2024-04-01T00:30:00", 120, "31 March 2024"),    # CEST: 22:30 UTC on 31 March
    ("2024-10-27T00:30:00", 120, "26 October 2024"),  # CEST, the night of the autumn change
    ("2024-10-28T00:30:00", 60, "27 October 2024"),   # CET again
])
def test_per_user_zone_for_naive_input_across_dst(tmp_path, embedder, stamp, offset, expect):
    eng = engine(tmp_path, embedder, user_timezones={"berta": "Europe/Berlin"})
    users = load_dataset(_naive_file(tmp_path, "berta", [stamp]), "jsonl", tz=eng.config.time.tz,
                         user_tz=eng.config.time.user_tz)
    turn = users[0].turns[0]
    assert turn.utc_offset_minutes == offset
    assert turn.event_time == datetime.fromisoformat(stamp).replace(tzinfo=ZoneInfo("Europe/Berlin")).astimezone(UTC)
    eng.ingest(users, upper_levels=False)
    (text,) = l1_texts(eng, "berta")
    assert f"yesterday [= {expect}]" in text, text
    eng.close()


def test_other_users_keep_the_default_zone_and_old_turns_fall_back(tmp_path, embedder):
    eng = engine(tmp_path, embedder, user_timezones={"berta": "Europe/Berlin"})
    when = eng.config.time
    (other,) = load_jsonl(_naive_file(tmp_path, "otto", ["2024-04-01T00:30:00"]), when.tz, when.user_tz)
    assert other.turns[0].utc_offset_minutes == 0 and other.turns[0].event_time.hour == 0
    # a turn stored before offsets were kept (NULL) resolves in the configured zone, as before
    old = other.turns[0].model_copy(update={"utc_offset_minutes": None})
    assert old.local_time(ZoneInfo("Asia/Tokyo")).utcoffset() == timedelta(hours=9)
    eng.close()


def test_chat_turns_record_the_users_zone_or_an_explicit_offset(tmp_path, embedder):
    eng = engine(tmp_path, embedder, user_timezones={"kaito": "Asia/Tokyo"})
    eng.add_exchange("kaito", "c1", "I passed my driving test yesterday!", "Well done!",
                     datetime(2024, 3, 9, 15, 30, tzinfo=UTC), consolidate=False)
    eng.add_exchange("ana", "c1", "I moved flats yesterday.", "Good luck!",
                     datetime(2024, 3, 10, 0, 30, tzinfo=timezone(timedelta(hours=-3))), consolidate=False)
    assert [t.utc_offset_minutes for t in eng.store.turns("kaito")] == [540, 540]
    assert [t.utc_offset_minutes for t in eng.store.turns("ana")] == [-180, -180]
    eng.consolidator.consolidate("kaito", flush=True, upper_levels=False)
    assert "yesterday [= 9 March 2024]" in l1_texts(eng, "kaito")[0]
    eng.close()


def test_jsonl_round_trip_keeps_the_speakers_offset(tmp_path):
    users = load_jsonl(CASE, ZoneInfo("UTC"))
    out = tmp_path / "out.jsonl"
    write_jsonl(users, out)
    assert json.loads(out.read_text().splitlines()[0])["timestamp"] == "2024-03-10T00:30:00+09:00"
    again = load_jsonl(out, ZoneInfo("UTC"))
    assert [t.model_dump(exclude={"ingested_at"}) for t in again[0].turns] == \
        [t.model_dump(exclude={"ingested_at"}) for t in users[0].turns]


def test_user_timezones_setting_from_toml_and_env(tmp_path):
    toml = tmp_path / "timem.toml"
    toml.write_text('timezone = "UTC"\n[user_timezones]\nkaito = "Asia/Tokyo"\n')
    assert load_config(toml, env={}).time.tz_for("kaito") == ZoneInfo("Asia/Tokyo")
    cfg = load_config(env={"TIMEM_USER_TIMEZONES": "kaito=Asia/Tokyo, berta=Europe/Berlin"})
    assert cfg.time.tz_for("berta") == ZoneInfo("Europe/Berlin") and cfg.time.tz_for("x") == ZoneInfo("UTC")
    with pytest.raises(ConfigError, match="Mars/Olympus"):
        load_config(env={"TIMEM_USER_TIMEZONES": "kaito=Mars/Olympus"})
    with pytest.raises(ConfigError, match="USER=ZONE"):
        load_config(env={"TIMEM_USER_TIMEZONES": "kaito"})


@pytest.mark.parametrize("stamp, expect", [
    ("2024-03-15T02:00:00Z", "13 March 2024"),       # 19:00 on 14 March in Los Angeles (PDT)
    ("2024-03-15T02:00:00+00:00", "13 March 2024"),  # UTC written out: an instant, the same rule
    ("2024-03-15T02:00:00+01:00", "14 March 2024"),  # an explicit offset is the speaker's local time
    ("2024-03-15T02:00:00", "14 March 2024"),        # naive: wall-clock time in Los Angeles
])
def test_jsonl_and_the_http_api_resolve_yesterday_alike(tmp_path, embedder, stamp, expect):
    """With timezone = America/Los_Angeles the 02:00Z turn said "yesterday" was 14 March through JSONL and 13 March
    through the HTTP API. One rule now (timem.tree.windows.offset_minutes): a UTC timestamp is an instant, read in
    the user's zone; another offset is the speaker's own local time."""
    from service_support import client, engine_factory, running

    from timem.service import KeyFile

    zone = {"timezone": "America/Los_Angeles"}
    eng = engine(tmp_path / "jsonl", embedder, **zone)
    path = tmp_path / "y.jsonl"
    path.write_text("".join(json.dumps({"user_id": "omar", "session_id": "s1", "speaker": who, "role": role,
                                        "text": text, "timestamp": stamp}) + "\n"
                            for who, role, text in (("Omar", "user", "I had sushi yesterday."),
                                                    ("Assistant", "assistant", "Sounds tasty!"))))
    eng.ingest(load_jsonl(path, eng.config.time.tz, eng.config.time.user_tz), upper_levels=False)
    (via_jsonl,) = l1_texts(eng, "omar")
    eng.close()
    kf = KeyFile(tmp_path / "keys.json")
    key = kf.add("acme")
    at = stamp if stamp[-1] == "Z" or "+" in stamp[10:] else stamp + "-07:00"  # the API takes aware times only
    with running(engine_factory(tmp_path / "api.duckdb", embedder, **EXCHANGE, **zone), kf) as base, \
            client(base, key) as c:
        r = c.post("/v1/users/omar/turns", json={"session_id": "s1", "event_time": at,
                                                 "message": "I had sushi yesterday.", "reply": "Sounds tasty!"})
        assert r.status_code == 200, r.text
        c.post("/v1/users/omar/sessions/s1/end")
        (via_api,) = [m["content"] for m in c.get("/v1/users/omar/memories", params={"level": 1}).json()["memories"]]
    assert f"yesterday [= {expect}]" in via_jsonl, via_jsonl
    assert f"yesterday [= {expect}]" in via_api, via_api
