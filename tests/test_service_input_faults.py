"""Bad input to the memory service over real HTTP on 127.0.0.1: every case is a 4xx with one line and writes
nothing (it was a 500, or a 200 that stored a trace or answered for a session that does not exist).

Texts come from the shared cases (``../shared/cases/found-by-trying``: the zero-width-only and lone-surrogate
turns), tried as recall queries and chat messages.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from service_support import client, two_tenants

CASES = Path(__file__).resolve().parents[1].parent / "shared" / "cases" / "found-by-trying"
AT = "2024-05-02T09:00:00+00:00"
#: instants that fall outside the years a calendar window can hold once converted to UTC
OVERFLOWING = ["9999-12-31T23:00:00-05:00", "0001-01-01T01:00:00+05:00", "9999-06-01T00:00:00+00:00"]


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    return fake_embedder


def case_text(name: str) -> str:
    src = CASES / name
    if not src.exists():
        pytest.fail(f"{src} is missing: the shared cases must sit at ../shared beside the repo")
    return json.loads(src.read_text(encoding="utf-8", errors="surrogatepass").splitlines()[0])["text"]


@pytest.fixture(scope="module")
def svc(tmp_path_factory, embedder):
    with two_tenants(tmp_path_factory.mktemp("svc"), embedder) as (base, keys), client(base, keys["acme"]) as c:
        r = c.post("/v1/users/mia/turns", json={"session_id": "s1", "event_time": AT, "reply": "Lovely!",
                                                "message": "I adopted a grey cat called Pixel."})
        assert r.status_code == 200, r.text
        yield c


def one_line(r, status: int | tuple[int, ...] = 422) -> str:
    assert r.status_code in ((status,) if isinstance(status, int) else status), (r.status_code, r.text)
    err = r.json()["error"]
    assert err and "\n" not in err and "Traceback" not in err, err
    return err


def stored(c) -> str:
    data = c.get("/v1/users/mia/export").json()
    return json.dumps([data["turns"], data["nodes"], data.get("traces")], sort_keys=True)


@pytest.mark.parametrize("at", OVERFLOWING)
def test_overflowing_times_are_422_on_turns_recall_and_chat(svc, at):
    before = stored(svc)
    r = svc.post("/v1/users/mia/turns", json={"session_id": "s2", "event_time": at, "message": "Hello.",
                                              "reply": "Hi."})
    assert "event_time" in one_line(r)
    r = svc.post("/v1/users/mia/chat", json={"session_id": "s2", "event_time": at, "message": "Hello."})
    assert "event_time" in one_line(r)
    r = svc.post("/v1/users/mia/recall", json={"query": "What is my cat called?", "question_time": at})
    assert "question_time" in one_line(r)
    assert stored(svc) == before


def test_integer_event_time_is_refused(svc):
    before = stored(svc)
    for route, body in (("turns", {"message": "Hello.", "reply": "Hi."}), ("chat", {"message": "Hello."})):
        r = svc.post(f"/v1/users/mia/{route}", json={"session_id": "s2", "event_time": 1714640400, **body})
        assert "event_time" in one_line(r) and "ISO 8601" in r.json()["error"]
    r = svc.post("/v1/users/mia/recall", json={"query": "What is my cat called?", "question_time": 1714640400})
    assert "question_time" in one_line(r)
    assert stored(svc) == before


@pytest.mark.parametrize("case, what", [("c_lone_surrogate.jsonl", "surrogate"), ("b_zero_width.jsonl", "empty")])
def test_lone_surrogate_and_invisible_queries_are_422_and_store_no_trace(svc, case, what):
    query = case_text(case)
    before = stored(svc)
    body = json.dumps({"query": query}, ensure_ascii=True)  # "\ud83d" travels as a JSON escape
    r = svc.post("/v1/users/mia/recall", content=body, headers={"Content-Type": "application/json"})
    assert what in one_line(r)
    r = svc.post("/v1/users/mia/chat", content=json.dumps({"session_id": "s2", "event_time": AT, "message": query}),
                 headers={"Content-Type": "application/json"})
    assert what in one_line(r)
    assert stored(svc) == before


def test_unknown_session_is_404(svc):
    r = svc.get("/v1/users/mia/turns", params={"session_id": "nope"})
    assert "nope" in one_line(r, 404)
    assert [t["text"] for t in svc.get("/v1/users/mia/turns", params={"session_id": "s1"}).json()["turns"]][0] \
        .startswith("I adopted")
