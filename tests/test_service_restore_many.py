"""Found by trying it: `timem restore ID… --user U` undoes a forget's segments at once, all or nothing, while the
memory service restored one id per request, so a client undoing a forget of several segments could stop halfway.
``POST /v1/users/{user}/memories/restore`` with ``{"ids": [...]}`` checks every id first (404: not a memory of the
user; 422: not forgotten) and restores nothing on a bad one; the single-id route stays. Real HTTP on 127.0.0.1, real
DuckDB file, real embedder, rule-based memory items."""

from __future__ import annotations

import pytest
from service_support import client, two_tenants

AT = "2024-05-02T09:00:00+00:00"


@pytest.fixture()
def svc(tmp_path, embedder):
    with two_tenants(tmp_path, embedder) as (base, keys), client(base, keys["acme"]) as a, \
            client(base, keys["beta"]) as b:
        for k, (message, reply) in enumerate([("I work at Blue Harbor.", "Nice."),
                                              ("I adopted a grey cat called Pixel. I live in Porto.", "Sweet!"),
                                              ("My favourite colour is teal.", "Noted.")]):
            r = a.post("/v1/users/lea/turns", json={"session_id": "s1", "message": message, "reply": reply,
                                                     "event_time": f"2024-05-02T09:0{k}:00+00:00"})
            assert r.status_code == 200, r.text
        yield a, b


def _status(a, ids: list[str]) -> dict[str, str]:
    memories = a.get("/v1/users/lea/memories", params={"status": "all", "ids": ids}).json()["memories"]
    return {m["id"]: m["status"] for m in memories}


def _forget(a, text: str) -> list[str]:
    done = a.post("/v1/users/lea/forget", json={"text": text, "confirm": True})
    assert done.status_code == 200 and done.json()["forgotten"] is True, done.text
    return done.json()["segments"]


def test_several_ids_are_restored_together_with_their_items(svc):
    a, _ = svc
    segments = _forget(a, "Pixel")  # the line (Porto goes with it, said in the same message) and the reply
    assert len(segments) == 2 and set(_status(a, segments).values()) == {"deleted"}
    assert "Porto" not in {i["value"] for i in a.get("/v1/users/lea/items").json()["items"]}
    r = a.post("/v1/users/lea/memories/restore", json={"ids": [*segments, segments[0]]})  # a repeat counts once
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["user"] == "lea" and [x["memory"]["id"] for x in body["restored"]] == segments
    assert {x["memory"]["status"] for x in body["restored"]} == {"active"}
    assert [i["value"] for x in body["restored"] for i in x["items"]] == ["Porto"]
    assert all(x["still_forgotten"] == [] for x in body["restored"])
    assert "lea/" not in r.text and "acme" not in r.text  # the tenant's ids, never the stored ones
    assert set(_status(a, segments).values()) == {"active"}
    assert "Porto" in {i["value"] for i in a.get("/v1/users/lea/items").json()["items"]}


def test_a_fact_forgotten_by_name_stays_forgotten(svc):
    a, _ = svc
    segments = _forget(a, "I work at Blue Harbor")
    r = a.post("/v1/users/lea/memories/restore", json={"ids": segments})
    assert r.status_code == 200, r.text
    assert [i["value"] for x in r.json()["restored"] for i in x["still_forgotten"]] == ["Blue Harbor"]
    assert [i for x in r.json()["restored"] for i in x["items"]] == []
    assert set(_status(a, segments).values()) == {"active"}


@pytest.mark.parametrize(("bad", "code", "said"), [
    ("L1-0000000000000000", 404, "no memory 'L1-0000000000000000' for user 'lea'"),
    ("active", 422, "is active, not forgotten; nothing to restore, and nothing was restored"),
])
def test_one_bad_id_restores_nothing(svc, bad, code, said):
    a, _ = svc
    segments = _forget(a, "Pixel")
    if bad == "active":
        bad = next(m["id"] for m in a.get("/v1/users/lea/memories", params={"level": 1}).json()["memories"])
    r = a.post("/v1/users/lea/memories/restore", json={"ids": [segments[0], bad, segments[1]]})
    assert r.status_code == code and said in r.text, r.text
    assert set(_status(a, segments).values()) == {"deleted"}  # checked first: the one before it stayed forgotten
    assert "Porto" not in {i["value"] for i in a.get("/v1/users/lea/items").json()["items"]}


def test_another_tenant_and_an_empty_list_restore_nothing(svc):
    a, b = svc
    segments = _forget(a, "teal")
    r = b.post("/v1/users/lea/memories/restore", json={"ids": segments})
    assert r.status_code == 404, r.text
    r = a.post("/v1/users/lea/memories/restore", json={"ids": []})
    assert r.status_code == 422 and "ids" in r.text, r.text
    r = a.post("/v1/users/lea/memories/restore", json={"id": segments[0]})  # a typo of the field is named
    assert r.status_code == 422, r.text
    assert set(_status(a, segments).values()) == {"deleted"}


def test_the_single_id_route_still_restores_one(svc):
    a, _ = svc
    segments = _forget(a, "teal")
    r = a.post(f"/v1/users/lea/memories/{segments[0]}/restore")
    assert r.status_code == 200 and r.json()["id"] == segments[0] and r.json()["status"] == "active", r.text
    assert _status(a, segments) == {segments[0]: "active", segments[1]: "deleted"}
