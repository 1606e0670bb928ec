"""A question's relative dates are read in the asker's zone: the UTC offset of the question time when it has one
other than UTC, else the user's zone (``user_timezones``), else ``timezone`` (timem.tree.windows.speaker_zone).

Found by a tester through the memory service: asked at 2024-05-08T09:00-05:00, "What did I do yesterday?" got the
UTC day 7 May (00:00Z-24:00Z) as its window, so what was said at 22:00 on 7 May in Chicago (03:00Z on 8 May) was
out of it and what was said at 21:00 on 6 May (02:00Z on 7 May) was in.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from helpers import EXCHANGE
from service_support import client, engine_factory, running

from timem.config import load_config
from timem.engine import MemoryEngine
from timem.service import KeyFile
from timem.store import Store
from timem.tree.windows import speaker_zone

CHICAGO = timezone(timedelta(hours=-5))  # CDT in May
SAID = [  # (session, when, message): both are "yesterday" of a question asked on 8 May, one in UTC, one in Chicago
    ("s1", datetime(2024, 5, 6, 21, tzinfo=CHICAGO), "I watched a documentary about volcanoes."),  # 7 May 02:00Z
    ("s2", datetime(2024, 5, 7, 22, tzinfo=CHICAGO), "I repainted the garden fence."),  # 8 May 03:00Z
]
LOCAL_YESTERDAY = datetime(2024, 5, 7, 5, tzinfo=UTC)  # 7 May 00:00 in Chicago


@pytest.fixture(scope="module")
def embedder(fake_embedder):
    """The time window decides here, not cosines: the hashing embedder."""
    return fake_embedder


def _window(trace: dict) -> tuple[datetime, datetime]:
    w = trace["plan"]["time_window"]
    return datetime.fromisoformat(w["start"]), datetime.fromisoformat(w["end"])


def _bonus(trace: dict, word: str, contents: dict[str, str]) -> float:
    (c,) = [c for c in trace["candidates"] if word in contents.get(c["node_id"], "")]
    return c["time_bonus"]


def test_the_service_reads_yesterday_in_the_question_times_offset(tmp_path, embedder):
    kf = KeyFile(tmp_path / "keys.json")
    key = kf.add("acme")
    with running(engine_factory(tmp_path / "t.duckdb", embedder, **EXCHANGE), kf) as base, client(base, key) as c:
        for session, when, text in SAID:
            r = c.post("/v1/users/ana/turns", json={"session_id": session, "event_time": when.isoformat(),
                                                    "message": text, "reply": "Nice!"})
            assert r.status_code == 200, r.text
            c.post(f"/v1/users/ana/sessions/{session}/end")
        leaves = c.get("/v1/users/ana/memories", params={"level": 1}).json()["memories"]
        contents = {m["id"]: m["content"] for m in leaves}
        r = c.post("/v1/users/ana/recall", json={"query": "What did I do yesterday?", "persist": False,
                                                 "question_time": "2024-05-08T09:00:00-05:00"})
        assert r.status_code == 200, r.text
        trace = r.json()["trace"]
    assert _window(trace) == (LOCAL_YESTERDAY, LOCAL_YESTERDAY + timedelta(days=1)), trace["plan"]
    assert _bonus(trace, "fence", contents) > 0 and _bonus(trace, "volcanoes", contents) == 0
    assert "fence" in r.json()["context"]


def _engine(tmp_path, embedder, **settings) -> MemoryEngine:
    cfg = load_config(env={}, db_path=tmp_path / "t.duckdb", llm_backend="none", cache_dir=tmp_path / "cache",
                      consolidation_mode="extractive", memory_items=False, **{**EXCHANGE, **settings})
    eng = MemoryEngine(cfg, Store(cfg.store.db_path, embedder.model_id, embedder.dim), embedder, None)
    for user in ("ana", "otto"):
        for session, when, text in SAID:
            eng.add_exchange(user, session, text, "Nice!", when)
        eng.end_session(user, "s1")
        eng.end_session(user, "s2")
    return eng


@pytest.mark.parametrize(("user", "asked", "first_day"), [
    # a 'Z' time is an instant (often a machine's clock): the user's zone wins over it
    ("ana", datetime(2024, 5, 8, 14, tzinfo=UTC), LOCAL_YESTERDAY),
    ("ana", datetime(2024, 5, 8, 9), LOCAL_YESTERDAY),  # naive: wall-clock time in the user's zone
    ("otto", datetime(2024, 5, 8, 14, tzinfo=UTC), datetime(2024, 5, 7, tzinfo=UTC)),  # no zone of his own: UTC
    ("otto", datetime(2024, 5, 8, 9, tzinfo=CHICAGO), LOCAL_YESTERDAY),  # an explicit offset wins
    # an explicit offset other than the user's zone's: the speaker travels (Tokyo, 8 May 09:00 = 7 May 19:00 CDT)
    ("ana", datetime(2024, 5, 8, 9, tzinfo=timezone(timedelta(hours=9))), datetime(2024, 5, 6, 15, tzinfo=UTC)),
])
def test_the_user_zone_for_a_utc_or_naive_question_time(tmp_path, embedder, user, asked, first_day):
    eng = _engine(tmp_path, embedder, user_timezones={"ana": "America/Chicago"})
    try:
        trace = eng.recall(user, "What did I do yesterday?", asked, persist=False).trace
    finally:
        eng.close()
    assert trace.plan.time_window is not None
    assert (trace.plan.time_window.start, trace.plan.time_window.end) == (first_day, first_day + timedelta(days=1))


def test_speaker_zone_keeps_the_users_dst_zone_when_the_offset_is_its_own():
    chicago = ZoneInfo("America/Chicago")
    assert speaker_zone(datetime(2024, 5, 8, 9, tzinfo=CHICAGO), chicago) is chicago
    assert speaker_zone(datetime(2024, 5, 8, 9, tzinfo=UTC), chicago) is chicago
    assert speaker_zone(None, chicago) is chicago
    assert speaker_zone(datetime(2024, 5, 8, 9, tzinfo=timezone(timedelta(hours=2))), chicago) == \
        timezone(timedelta(hours=2))


def test_cli_at_keeps_its_offset(tmp_path, monkeypatch):
    """``timem ask --recall-only --at 2024-05-08T09:00-05:00``: the offset was dropped (converted to UTC first)."""
    from test_cli import run

    for var in [v for v in __import__("os").environ if v.startswith(("TIMEM_", "OPENAI_"))]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("TIMEM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    path, db = tmp_path / "chat.jsonl", str(tmp_path / "t.duckdb")
    path.write_text("".join(json.dumps({"user_id": "ana", "session_id": s, "role": role, "text": text,
                                        "timestamp": when.isoformat()}) + "\n"
                            for s, when, said in SAID for role, text in (("user", said), ("assistant", "Nice!"))))
    code, out = run("ingest", str(path), "--format", "jsonl", "--llm", "none", "--mode", "extractive", "--db", db)
    assert code == 0, out
    code, out = run("ask", "What did I do yesterday?", "--user", "ana", "--db", db, "--recall-only", "--json",
                    "--at", "2024-05-08T09:00-05:00")
    assert code == 0, out
    trace = json.loads(out[out.index("{"):])["trace"]
    assert _window(trace) == (LOCAL_YESTERDAY, LOCAL_YESTERDAY + timedelta(days=1)), trace["plan"]


def test_the_openai_proxy_says_now_in_the_askers_offset(tmp_path, embedder):
    """The proxy's memory message said "Now is Wednesday, 08 May 2024, 14:00." (the user's zone, UTC) for a
    question sent with X-Timem-Event-Time 2024-05-08T09:00-05:00, whose "yesterday" the recall read at -05:00."""
    from openai_support import sdk
    from test_openai_proxy import SEEN, echo

    from timem.prompts.memory_message import MARK

    kf = KeyFile(tmp_path / "keys.json")
    key = kf.add("acme")
    with running(engine_factory(tmp_path / "t.duckdb", embedder, answer=echo, **EXCHANGE), kf) as base:
        c = sdk(base, key)
        for _, when, text in SAID:
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": text}], user="ana",
                                      extra_headers={"X-Timem-Event-Time": when.isoformat()})
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "What did I do yesterday?"}],
                                  user="ana", extra_headers={"X-Timem-Event-Time": "2024-05-08T09:00:00-05:00"})
    (memory,) = [m.content for m in SEEN[-1].messages if m.content.startswith(MARK)]
    assert "Now is Wednesday, 08 May 2024, 09:00." in memory, memory
    assert "fence" in memory, memory
    # the turns it wrote keep the speaker's offset (the header was converted to UTC): 22:00-05:00 on 7 May is 7 May
    assert "[7 May 2024]\nUser: I repainted the garden fence." in memory, memory
