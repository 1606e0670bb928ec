"""The queue worker's consolidation of one user no longer holds up every other user's writes.

Measured under load (bench/results/service-load.md): the service's one lock was held by the queue worker for most
of a run (the whole computation of each consolidation step), and every chat write waited for it: turns p50 ~1 s.
Now a chat write and each worker step hold the lock of their user's stripe only (:class:`UserLocks`); everything
else holds every stripe, as the one lock was held.

Real HTTP on 127.0.0.1, a real DuckDB file, the queue on, no LLM. The worker's consolidation of ``ana`` is held
inside its step (an event), so the test does not depend on the machine's speed.
"""

from __future__ import annotations

import threading

import httpx
import pytest
from service_support import client, engine_factory, running

from timem.engine_writes import MemoryWrites
from timem.service import KeyFile
from timem.service.context import UserLocks

AT = "2024-05-02T09:00:00+00:00"


@pytest.fixture()
def held(tmp_path, fake_embedder, monkeypatch):
    """The service, whose worker stops inside its consolidation step of ``ana`` until ``release`` is set."""
    entered, release = threading.Event(), threading.Event()
    consolidate_online = MemoryWrites.consolidate_online

    def held_step(self, user_id, **kw):
        if user_id.endswith("/ana"):
            entered.set()
            release.wait(60)
        return consolidate_online(self, user_id, **kw)

    monkeypatch.setattr(MemoryWrites, "consolidate_online", held_step)
    kf = KeyFile(tmp_path / "timem.duckdb.keys.json")
    key = kf.add("acme")
    factory = engine_factory(tmp_path / "timem.duckdb", fake_embedder, memory_extractor="rules", online_queue=True)
    with running(factory, kf) as base, client(base, key) as c:
        try:
            yield c, entered, release
        finally:
            release.set()


def _write(c: httpx.Client, user: str, session: str, text: str) -> httpx.Response:
    return c.post(f"/v1/users/{user}/turns", json={"session_id": session, "event_time": AT, "message": text,
                                                   "reply": "Noted."})


def test_another_users_write_is_acknowledged_while_the_worker_consolidates(held):
    c, entered, release = held
    assert _write(c, "ana", "s1", "I live in Dublin.").status_code == 200
    assert entered.wait(30), "the worker did not start on ana's job"
    # with the one lock, this waited for the worker's step (here: for ever; the client gives up after 20 s)
    r = c.post("/v1/users/bob/turns", json={"session_id": "s1", "event_time": AT, "message": "I live in Cork.",
                                            "reply": "Noted."}, timeout=20)
    assert r.status_code == 200 and r.json()["queued"] is True, r.text
    assert not release.is_set()  # ana's step is still running

    # ana's own next write waits for her step: her turns and the step never interleave
    done: list[int] = []
    other = threading.Thread(target=lambda: done.append(_write(c, "ana", "s1", "I have a dog.").status_code))
    other.start()
    other.join(1.0)
    assert done == []
    release.set()
    other.join(30)
    assert done == [200]
    assert c.get("/v1/users/ana/turns", params={"session_id": "s1"}).status_code == 200


def test_every_stripe_is_taken_in_order_and_a_user_keeps_one_stripe():
    locks = UserLocks(stripes=8)
    assert locks.user("acme/ana") is locks.user("acme/ana")
    with locks.every:
        assert all(lock.locked() for lock in {locks.user(f"acme/u{i}") for i in range(50)})
    assert not any(lock.locked() for lock in {locks.user(f"acme/u{i}") for i in range(50)})
