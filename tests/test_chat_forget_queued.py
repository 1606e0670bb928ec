"""A chat "forget that …" right after writes still queued for consolidation: found by trying the product, the
service's chat route previewed the forget at once, before its queue worker had written the L1 segment and read the
memory item of the turn just acknowledged, so "Forget that I work at Blue Harbor" sent right after "I work at Blue
Harbor" found nothing ("POST …/forget" waited for the user's queued writes; the chat did not). Now the chat waits
for the worker's jobs of that user (bounded) and consolidates the user's still pending jobs itself before the preview.

Real HTTP on 127.0.0.1, a real DuckDB file, the queue on (``online_queue``), no LLM (memory items read by rules).
The worker is held back, as on a busy service: it is not woken by writes and polls only every 60 s, so the write's
job is still pending when the forget arrives, whatever the machine's speed.
"""

from __future__ import annotations

import pytest
from service_support import client, engine_factory, running

from timem.engine_queue import ConsolidationQueue, QueueWorker
from timem.service import KeyFile

AT = "2024-05-02T09:00:00+00:00"


@pytest.fixture()
def busy_service(tmp_path, fake_embedder, monkeypatch):
    """The service with a queue worker that does not get to the user's jobs on its own during the test."""
    monkeypatch.setattr(QueueWorker, "wake", lambda self: None)  # writes do not wake it ...
    start = ConsolidationQueue.start_queue_worker
    monkeypatch.setattr(ConsolidationQueue, "start_queue_worker",
                        lambda self, lock=None, poll_seconds=1.0, user_lock=None:
                        start(self, lock, poll_seconds=60.0, user_lock=user_lock))  # ... nor polls
    kf = KeyFile(tmp_path / "timem.duckdb.keys.json")
    key = kf.add("acme")
    factory = engine_factory(tmp_path / "timem.duckdb", fake_embedder, memory_extractor="rules", online_queue=True,
                             queue_read_wait_seconds=0.5)
    with running(factory, kf) as base, client(base, key) as c:
        yield c


def test_forget_in_the_chat_sees_the_turn_just_written(busy_service):
    c = busy_service
    r = c.post("/v1/users/mia/turns", json={"session_id": "s1", "event_time": AT, "message": "I work at Blue Harbor.",
                                            "reply": "Nice, what do you do there?"})
    assert r.status_code == 200 and r.json()["queued"] is True, r.text
    assert c.get("/v1/queue").json()["pending"] >= 1  # the write's job waits for the (held back) worker

    r = c.post("/v1/users/mia/chat", json={"session_id": "s2", "event_time": "2024-05-02T09:05:00+00:00",
                                           "message": "Forget that I work at Blue Harbor."})
    assert r.status_code == 200, r.text
    preview = r.json()["forgotten"]
    assert [i["value"] for i in preview["items"]] == ["Blue Harbor"], preview  # the employer item just read
    assert preview["segments"] and preview["hint"] is None, preview
    assert preview["forgotten"] is False and "Nothing is forgotten until you confirm" in r.json()["reply"]

    r = c.post("/v1/users/mia/chat", json={"session_id": "s2", "event_time": "2024-05-02T09:06:00+00:00",
                                           "message": "Forget that I work at Blue Harbor.", "confirm_forget": True})
    assert r.status_code == 200 and r.json()["forgotten"]["forgotten"] is True, r.text
    assert c.get("/v1/users/mia/items").json()["items"] == []


def test_the_forget_route_sees_it_too_when_the_worker_is_behind(busy_service):
    """``POST …/forget`` waited (``queue_read_wait_seconds``) for the worker and then previewed what was written by
    then: with the worker behind, nothing. It now consolidates the user's pending jobs itself first."""
    c = busy_service
    r = c.post("/v1/users/mia/turns", json={"session_id": "s1", "event_time": AT, "message": "I work at Blue Harbor.",
                                            "reply": "Nice!"})
    assert r.status_code == 200 and r.json()["queued"] is True, r.text
    r = c.post("/v1/users/mia/forget", json={"text": "I work at Blue Harbor"})
    assert r.status_code == 200, r.text
    assert [i["value"] for i in r.json()["items"]] == ["Blue Harbor"] and r.json()["segments"], r.json()


def test_the_items_list_right_after_a_write_gives_the_new_item(busy_service):
    """``GET …/items`` waited (``queue_read_wait_seconds``) for the worker and, with the worker behind, listed the
    items as before the write: "I moved to Galway" still showed Dublin as the home city held now. It now reads the
    queued writes' items first (rule-based items), as a recall does."""
    c = busy_service
    for session, at, message in (("s1", AT, "I live in Dublin."), ("s2", "2024-05-04T09:00:00+00:00",
                                                                    "I moved to Galway.")):
        r = c.post("/v1/users/mia/turns", json={"session_id": session, "event_time": at, "message": message,
                                                "reply": "Noted."})
        assert r.status_code == 200 and r.json()["queued"] is True, r.text
    assert c.get("/v1/queue").json()["pending"] >= 1
    items = c.get("/v1/users/mia/items").json()["items"]
    homes = [(i["value"], i["valid_to"]) for i in items if i["attribute"] == "home city"]
    assert [v for v, _ in homes] == ["Dublin", "Galway"], items
    assert homes[0][1] is not None and homes[1][1] is None, homes
