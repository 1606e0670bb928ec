"""A turn dated in the future: found by trying the product, the memory service stored a turn dated in year 9998 (and
`timem ingest` a file of them), which then was the user's "latest event", the default question time of every recall,
and closed every day, week and month window before it. Event time is when something was said, so both now refuse an
event time more than a day (:data:`timem.models.MAX_AHEAD`) after the clock: `timem ingest` with one line naming the
file, the line and the field, writing nothing; the service (turns, chat, the OpenAI proxy's header) with 422. A day of
slack keeps a naive time read in another zone, or a client clock a little ahead, working. Real HTTP on 127.0.0.1.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from service_support import client, two_tenants
from test_import_faults import _amy_store, line, timem

from timem.datasets import load_dataset
from timem.datasets.base import ahead_of_clock
from timem.errors import InputError

UTC_ZONE = __import__("zoneinfo").ZoneInfo("UTC")


def _iso(at: datetime) -> str:
    return at.replace(microsecond=0).isoformat()


def test_ingest_refuses_a_turn_two_days_ahead_and_writes_nothing(tmp_path):
    db, before = _amy_store(tmp_path)
    now = datetime.now(UTC)
    src = tmp_path / "ahead.jsonl"
    src.write_text(line("amy", "I took up pottery.", ts=_iso(now - timedelta(days=3)).removesuffix("+00:00"))
                   + line("amy", "Pottery again.", ts=_iso(now + timedelta(days=2))))
    res = timem("ingest", str(src), "--l1-only", "--llm", "none", "--db", str(db), cwd=tmp_path)
    assert res.returncode == 1, res
    err = res.stderr.strip().splitlines()[-1]
    assert re.search(r"lies 4[78] hours after the clock", err) and "at most a day ahead of now" in err, err
    assert "record line 2" in err and "field 'timestamp'" in err, err
    assert db.read_bytes() == before


def test_a_day_of_slack_and_the_past_are_taken(tmp_path):
    now = datetime.now(UTC)
    src = tmp_path / "ok.jsonl"
    src.write_text(line("amy", "Late evening in Kiritimati.", ts=_iso(now + timedelta(hours=14))))
    (user,) = load_dataset(src, "jsonl", tz=UTC_ZONE)
    assert user.turns[0].event_time > now


def test_a_locomo_session_in_2204_is_refused_naming_its_date_field(tmp_path):
    conv = {"speaker_a": "Ann", "speaker_b": "Ben", "session_1_date_time": "1:56 pm on 8 May, 2204",
            "session_1": [{"speaker": "Ann", "text": "Hello.", "dia_id": "D1:1"}]}
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{"sample_id": "conv-x", "conversation": conv}]))
    with pytest.raises(InputError, match=r"years after the clock.*field 'session_1_date_time'"):
        load_dataset(path, "locomo", tz=UTC_ZONE)


def test_ahead_of_clock_says_by_how_much():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert ahead_of_clock(now + timedelta(hours=24), "t", now) is None
    assert "lies 25 hours after" in (ahead_of_clock(now + timedelta(hours=25), "t", now) or "")
    assert "lies 7972 years after" in (ahead_of_clock(datetime(9998, 1, 1, tzinfo=UTC), "t", now) or "")


@pytest.fixture(scope="module")
def svc(tmp_path_factory, fake_embedder):
    with two_tenants(tmp_path_factory.mktemp("svc"), fake_embedder) as (base, keys), client(base, keys["acme"]) as c:
        yield c


@pytest.mark.parametrize("ahead", [timedelta(days=2), timedelta(days=365 * 7000)])
def test_the_service_refuses_the_same_on_turns_and_chat(svc, ahead):
    at = _iso(datetime.now(UTC) + ahead) if ahead.days < 3000 else "9998-06-01T09:00:00+00:00"
    r = svc.post("/v1/users/zed/turns", json={"session_id": "s1", "event_time": at, "message": "Hello.",
                                              "reply": "Hi."})
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err.startswith("event_time: ") and "after the clock" in err and "Value error" not in err, err
    r = svc.post("/v1/users/zed/chat", json={"session_id": "s1", "event_time": at, "message": "Hello."})
    assert r.status_code == 422 and "after the clock" in r.json()["error"], r.text
    r = svc.post("/v1/chat/completions", headers={"X-Timem-Event-Time": at, "X-Timem-User": "zed"},
                 json={"model": "timem", "messages": [{"role": "user", "content": "Hello."}]})
    assert r.status_code in (400, 422) and "after the clock" in r.text, r.text
    assert "zed" not in svc.get("/v1/users").json()["users"]  # nothing stored


def test_the_service_takes_a_turn_within_the_day_of_slack(svc):
    at = _iso(datetime.now(UTC) + timedelta(hours=20))
    r = svc.post("/v1/users/amy/turns", json={"session_id": "s1", "event_time": at, "message": "Hello.",
                                              "reply": "Hi."})
    assert r.status_code == 200, r.text


def test_mcp_remember_refuses_it_too(tmp_path, fake_embedder):
    """The MCP tool `remember` (in process, the SDK's own tool call) follows the service's rule; its default, now, is
    taken."""
    import anyio
    from mcp.server.mcpserver.exceptions import ToolError
    from service_support import engine_factory

    from timem.service.mcp_server import build_server

    eng = engine_factory(tmp_path / "m.duckdb", fake_embedder, memory_extractor="rules")()
    try:
        server = build_server(eng, "mia")
        ahead = _iso(datetime.now(UTC) + timedelta(days=3))
        with pytest.raises(ToolError, match="after the clock"):
            anyio.run(server.call_tool, "remember", {"text": "I adopted a cat.", "event_time": ahead})
        assert eng.store.users() == []
        anyio.run(server.call_tool, "remember", {"text": "I adopted a cat."})
        assert eng.store.users() == ["mia"]
    finally:
        eng.close()
