"""Idempotent writes over real HTTP: a retried POST turns with the same idempotency key is acknowledged
once and stored once, also after the service restarted on the same file; a key reused for another body
is refused and changes nothing; keys are per tenant and user, and erased with the user."""

from __future__ import annotations

import json

import pytest
from service_support import client, engine_factory, running

from timem.service import KeyFile

AT = "2024-05-02T09:00:00+00:00"


@pytest.fixture()
def setup(tmp_path, embedder):
    kf = KeyFile(tmp_path / "timem.duckdb.keys.json")
    keys = {t: kf.add(t) for t in ("acme", "beta")}
    return engine_factory(tmp_path / "timem.duckdb", embedder), kf, keys


def _post(c, user, key=None, field=None, message="I adopted a grey cat called Pixel.", at=AT):
    body = {"session_id": "s1", "event_time": at, "message": message, "reply": "Lovely!"}
    if field:
        body["idempotency_key"] = field
    return c.post(f"/v1/users/{user}/turns", json=body, headers={"Idempotency-Key": key} if key else {})


def _turns(c, user) -> list[str]:
    return [t["text"] for t in c.get(f"/v1/users/{user}/export").json()["turns"]]


def test_retry_with_header_or_field_is_stored_once(setup):
    factory, kf, keys = setup
    with running(factory, kf) as base, client(base, keys["acme"]) as a:
        first = _post(a, "mia", key="k-1")
        assert first.status_code == 200 and first.json()["replayed"] is False
        assert first.json()["turn_ids"] == ["mia:s1:0", "mia:s1:1"] and first.json()["written"]
        again = _post(a, "mia", key="k-1")
        assert again.status_code == 200, again.text
        assert again.json()["replayed"] is True and again.json()["turn_ids"] == ["mia:s1:0", "mia:s1:1"]
        assert again.json()["written"] == []
        by_field = _post(a, "mia", field="k-2", message="My sister Ana lives in Lisbon.")
        assert by_field.json()["turn_ids"] == ["mia:s1:2", "mia:s1:3"]
        assert _post(a, "mia", field="k-2", message="My sister Ana lives in Lisbon.").json()["replayed"] is True
        assert _post(a, "mia", key="k-2", message="My sister Ana lives in Lisbon.").json()["replayed"] is True
        # without a key a resent write is a new write (the documented behaviour)
        assert _post(a, "mia", message="Again.").json()["turn_ids"] == ["mia:s1:4", "mia:s1:5"]
        assert _post(a, "mia", message="Again.").json()["turn_ids"] == ["mia:s1:6", "mia:s1:7"]
        texts = _turns(a, "mia")
        assert texts.count("I adopted a grey cat called Pixel.") == 1
        assert texts.count("My sister Ana lives in Lisbon.") == 1 and len(texts) == 8


@pytest.mark.parametrize("case", ["other body", "header and field differ", "bad key"])
def test_key_misuse_is_422_and_changes_nothing(setup, case):
    factory, kf, keys = setup
    with running(factory, kf) as base, client(base, keys["acme"]) as a:
        assert _post(a, "mia", key="k-1").status_code == 200
        before = json.dumps(a.get("/v1/users/mia/export").json()["turns"])
        r = {"other body": lambda: _post(a, "mia", key="k-1", message="Something else."),
             "header and field differ": lambda: _post(a, "mia", key="k-9", field="k-8"),
             "bad key": lambda: _post(a, "mia", key="has space")}[case]()
        assert r.status_code == 422, r.text
        assert set(r.json()) == {"error"} and "\n" not in r.json()["error"] and "dempotency" in r.json()["error"]
        assert json.dumps(a.get("/v1/users/mia/export").json()["turns"]) == before


def test_keys_are_per_tenant_and_user(setup):
    factory, kf, keys = setup
    with running(factory, kf) as base, client(base, keys["acme"]) as a, client(base, keys["beta"]) as b:
        assert _post(a, "mia", key="k-1").json()["replayed"] is False
        assert _post(a, "ola", key="k-1").json()["replayed"] is False
        assert _post(b, "mia", key="k-1").json()["replayed"] is False
        assert [len(_turns(c, "mia")) for c in (a, b)] == [2, 2] and len(_turns(a, "ola")) == 2


def test_key_survives_a_restart_and_is_erased_with_the_user(setup):
    factory, kf, keys = setup
    with running(factory, kf) as base, client(base, keys["acme"]) as a:
        ids = _post(a, "mia", key="k-1").json()["turn_ids"]
    with running(factory, kf) as base, client(base, keys["acme"]) as a:
        again = _post(a, "mia", key="k-1")
        assert again.json() | {"turn_ids": ids} == again.json() and again.json()["replayed"] is True
        assert len(_turns(a, "mia")) == 2
        erased = a.delete("/v1/users/mia")
        assert erased.status_code == 200 and erased.json()["counts"]["write_requests"] == 1
        fresh = _post(a, "mia", key="k-1")  # the user is gone, and so is the key: a new write
        assert fresh.json()["replayed"] is False and len(_turns(a, "mia")) == 2


def test_retry_finishes_a_write_cut_short_after_its_turns_were_stored(setup):
    """A crash between the turns' commit and their consolidation: the retry is replayed and writes the L1."""
    from datetime import datetime

    from timem.service.context import write_request
    from timem.service.models import TurnsIn

    factory, kf, keys = setup
    body = {"session_id": "s1", "event_time": AT, "message": "I adopted a grey cat called Pixel.", "reply": "Lovely!"}
    eng = factory()
    eng.core.tenant_ids = True  # as the service's engine (timem.service.context.Service): users are tenant/user
    eng.add_exchange("acme/mia", "s1", body["message"], body["reply"], datetime.fromisoformat(AT), consolidate=False,
                     request=write_request("mia", TurnsIn(**body), "k-1"))
    assert eng.nodes("acme/mia", 1) == []  # the turns are stored, their L1 segment is not
    eng.close()
    with running(factory, kf) as base, client(base, keys["acme"]) as a:
        r = _post(a, "mia", key="k-1")
        assert r.status_code == 200 and r.json()["replayed"] is True
        assert r.json()["turn_ids"] == ["mia:s1:0", "mia:s1:1"]
        l1 = [m for m in r.json()["written"] if m["level"] == 1]
        assert sorted(t for m in l1 for t in m["source_turn_ids"]) == ["mia:s1:0", "mia:s1:1"]
        assert len(_turns(a, "mia")) == 2


def test_a_retry_while_the_first_write_is_queued_reports_no_memories(tmp_path, embedder):
    """A new-user trial: with the queue (the service's default) the first write answered ``queued`` with no memories,
    and its retry ran the user's consolidation in the request and listed the first write's L1-L4 as ``written``."""
    kf = KeyFile(tmp_path / "timem.duckdb.keys.json")
    key = kf.add("acme")
    factory = engine_factory(tmp_path / "timem.duckdb", embedder, online_queue=True)
    with running(factory, kf) as base, client(base, key) as a:
        first = _post(a, "mia", key="k-q")
        assert first.status_code == 200 and first.json()["replayed"] is False and first.json()["queued"] is True
        again = _post(a, "mia", key="k-q")
        assert again.status_code == 200, again.text
        assert again.json()["replayed"] is True and again.json()["turn_ids"] == first.json()["turn_ids"]
        assert again.json()["written"] == [] and again.json()["queued"] is True, again.json()
        assert _turns(a, "mia").count("I adopted a grey cat called Pixel.") == 1
