"""The recall context's date header and a turn's "yesterday [= …]" follow one rule: the speaker's local time.

Found by a tester through the memory service (timezone UTC): "Yesterday I went hiking", said at 22:00 on 7 May in
Chicago (2024-05-07T22:00-05:00, 03:00Z on 8 May), was stored as "yesterday [= 6 May 2024]" (the speaker's zone)
but shown under the header "[8 May 2024]" (the configured zone): the header said the day after "yesterday"'s.
The L1 date line is now written in the speaker's local time and the header is read in the zone of that line
(timem.recall.context.said_zone). Real HTTP on 127.0.0.1, real DuckDB file, no LLM.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from helpers import EXCHANGE
from service_support import client, engine_factory, running

from timem.models import Level, MemoryNode
from timem.recall.context import render_context, said_zone
from timem.service import KeyFile

CHICAGO = timezone(timedelta(hours=-5))


@pytest.fixture(scope="module")
def embedder(fake_embedder):
    return fake_embedder


def test_the_header_is_the_speakers_day_like_the_annotation(tmp_path, embedder):
    kf = KeyFile(tmp_path / "keys.json")
    key = kf.add("acme")
    with running(engine_factory(tmp_path / "t.duckdb", embedder, **EXCHANGE), kf) as base, client(base, key) as c:
        r = c.post("/v1/users/ana/turns", json={"session_id": "s1", "event_time": "2024-05-07T22:00:00-05:00",
                                                "message": "Yesterday I went hiking up Mount Rigi.", "reply": "Nice!"})
        assert r.status_code == 200, r.text
        c.post("/v1/users/ana/sessions/s1/end")
        (leaf,) = c.get("/v1/users/ana/memories", params={"level": 1}).json()["memories"]
        r = c.post("/v1/users/ana/recall", json={"query": "Where did I go hiking?", "persist": False})
        assert r.status_code == 200, r.text
    assert leaf["content"].startswith("On 7 May 2024 (Tuesday) 22:00:"), leaf["content"]  # was 8 May, 03:00
    assert "Yesterday [= 6 May 2024]" in leaf["content"]
    context = r.json()["context"]
    assert "[7 May 2024]\nana: Yesterday [= 6 May 2024] I went hiking" in context, context


def _leaf(content: str, start: datetime) -> MemoryNode:
    return MemoryNode(id="L1-x", user_id="u", level=Level.SEGMENT, window_key="segment:u:s:0", span_start=start,
                      span_end=start, content=content, session_id="s", model_id="verbatim", prompt_version="v")


def test_said_zone_reads_the_date_lines_offset_and_falls_back():
    start = datetime(2024, 5, 8, 3, 0, 41, tzinfo=UTC)  # seconds: the date line has minutes only
    leaf = _leaf("On 7 May 2024 (Tuesday) 22:00:\nUser: Yesterday [= 6 May 2024] I went hiking.", start)
    assert said_zone(leaf, UTC) == CHICAGO
    assert render_context([leaf], UTC, "lines").startswith("L1 segments:\n- [Tue 7 May 2024, 22:00]")
    old = _leaf("On 8 May 2024 (Wednesday) 03:00:\nUser: hello", start)  # written in the configured zone
    assert said_zone(old, UTC) is UTC
    assert said_zone(_leaf("User: no date line", start), CHICAGO) is CHICAGO
