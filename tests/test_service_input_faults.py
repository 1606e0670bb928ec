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


@pytest.mark.parametrize("body, says", [
    (b'{"query": "caf\xe9?"}', "the body is not UTF-8 (byte 0xe9 at offset 14); send the JSON body encoded as UTF-8"),
    (b'{"query": "\xc3"}', "the body is not UTF-8 (byte 0xc3 at offset 11); send the JSON body encoded as UTF-8"),
    (b'\xff\xfe{"query": "x"}', "send a JSON object encoded as UTF-8")],  # json takes the BOM for UTF-16: bad JSON
    ids=["latin-1", "cut-utf8", "utf16-bom"])
def test_a_body_that_is_not_utf8_is_400_saying_so(svc, body, says):
    """A Latin-1 or cut UTF-8 body got FastAPI's generic 400 "There was an error parsing the body"."""
    before = stored(svc)
    for route in ("recall", "turns", "chat"):
        r = svc.post(f"/v1/users/mia/{route}", content=body, headers={"Content-Type": "application/json"})
        assert says in one_line(r, 400), (route, r.text)
    assert stored(svc) == before


RULE = ("use 1-128 ASCII letters (a-z, A-Z; no accents, no Chinese), digits, '.', '_' or '-', starting with a letter "
        "or digit")
COLON = "':' is refused: it separates the parts of a turn id (user:session:seq)"


def test_a_user_or_session_id_with_a_colon_is_told_the_rule_not_the_regex(svc):
    """A user id ``a:b`` got 422 "user: String should match pattern '^[A-Za-z0-9]...$'"; the session id (body, query,
    path and the proxy's headers) shares the pattern and the message."""
    before = stored(svc)
    msgs = {"user path": one_line(svc.post("/v1/users/a:b/turns", json={"session_id": "c", "event_time": AT,
                                                                         "message": "Hello.", "reply": "Hi."})),
            "session body": one_line(svc.post("/v1/users/mia/turns", json={"session_id": "b:c", "event_time": AT,
                                                                            "message": "Hello.", "reply": "Hi."})),
            "session query": one_line(svc.get("/v1/users/mia/turns", params={"session_id": "b:c"})),
            "session path": one_line(svc.post("/v1/users/mia/sessions/b:c/end")),
            "proxy header": one_line(svc.post("/v1/chat/completions", headers={"X-Timem-User": "a:b"}, json={
                "model": "timem", "messages": [{"role": "user", "content": "Hello."}]})),
            "proxy field": one_line(svc.post("/v1/chat/completions", json={
                "user": "a:b", "model": "timem", "messages": [{"role": "user", "content": "Hello."}]}))}
    assert msgs["user path"].startswith("user id 'a:b' is not valid: " + RULE), msgs
    assert msgs["session body"].startswith("session_id 'b:c' is not valid: " + RULE), msgs
    for where, msg in msgs.items():
        assert RULE in msg and COLON in msg and "pattern" not in msg and "^[" not in msg, (where, msg)
    slash = one_line(svc.get("/v1/users/mia/turns", params={"session_id": "x/y"}))
    assert RULE in slash and "'/' is refused: it separates the tenant from the user" in slash, slash
    plain = one_line(svc.get("/v1/users/mia/turns", params={"session_id": "-x"}))  # no separator: the rule alone
    assert plain == f"session_id '-x' is not valid: {RULE}", plain
    assert stored(svc) == before


def test_unclear_errors_found_by_a_trial_now_say_what_to_send(svc):
    """A new-user trial: a body sent without a JSON Content-Type got "request: Input should be a valid dictionary",
    a UTF-8 Idempotency-Key came back garbled ('ÐºÐ»Ñ…'), and a user id holding an encoded '/' a bare "Not Found"."""
    err = one_line(svc.post("/v1/users/mia/recall", content=b'{"query": "cat"}',
                            headers={"Content-Type": "application/x-www-form-urlencoded"}))
    assert "Content-Type: application/json" in err and "x-www-form-urlencoded" in err
    err = one_line(svc.post("/v1/users/mia/turns", json={"session_id": "s9", "event_time": AT, "message": "hi"},
                            headers={"Idempotency-Key": "ключ".encode()}))
    assert "ключ" in err and "Ð" not in err, err
    err = one_line(svc.get("/v1/users/a%2Fb/memories"), 404)
    assert "cannot hold '/'" in err and "no endpoint GET" in err
    assert "Not Found" not in one_line(svc.get("/v2/nothing"), 404)
    err = one_line(svc.post("/v1/users/mia/recall", content=b"", headers={"Content-Type": "application/json"}))
    assert "has no body" in err, err  # was "request: Field required"
    err = one_line(svc.post("/v1/users/mia/turns", json={"session_id": "s9", "event_time": AT, "message": "a\u0000b"}))
    assert "field 'message'" in err and "'text'" not in err, err  # the request's field, not the stored turn's


def test_a_chunked_body_past_the_limit_is_413_before_it_is_read_whole(svc):
    """A new-user trial: with ``Transfer-Encoding: chunked`` (no Content-Length) a 60 MB body was read and parsed
    in full, and refused only on the message's length; a body of one known size was refused at once."""
    def chunks(n: int):
        yield b'{"session_id": "s9", "event_time": "' + AT.encode() + b'", "message": "'
        for _ in range(n):
            yield b"a" * 65536
        yield b'"}'

    r = svc.post("/v1/users/mia/turns", content=chunks(960), headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "larger than" in r.json()["error"], r.text
    small = svc.post("/v1/users/mia/turns", content=chunks(0), headers={"Content-Type": "application/json"})
    assert small.status_code == 422 and "message" in small.text, small.text  # read whole, then the empty message
    fine = svc.post("/v1/users/mia/turns", content=(b for b in [b'{"session_id": "s9", "event_time": "',
                                                                 AT.encode(), b'", "message": "chunked hello"}']),
                    headers={"Content-Type": "application/json"})
    assert fine.status_code == 200, fine.text


def test_forget_says_what_to_send_and_confirm_is_a_real_boolean(svc):
    """A new-user trial: ``{"text": ""}`` was told "give either text or item_ids, not both", and
    ``"confirm": "yes"`` was taken as true and forgot."""
    err = one_line(svc.post("/v1/users/mia/forget", json={"text": ""}))
    assert "not both" not in err and "give text" in err and "item_ids" in err, err
    err = one_line(svc.post("/v1/users/mia/forget", json={"text": "cat", "confirm": "yes"}))
    assert "confirm" in err, err
    assert "Pixel" in svc.post("/v1/users/mia/recall", json={"query": "my grey cat", "persist": False}).text
    for flag in ("consolidate", "persist"):  # every boolean of a request body: true or false, nothing else
        body = {"session_id": "s9", "event_time": AT, "message": "hi", flag: "no"} if flag == "consolidate" else \
            {"query": "cat", flag: "no"}
        path = "/v1/users/mia/turns" if flag == "consolidate" else "/v1/users/mia/recall"
        assert flag in one_line(svc.post(path, json=body))


def test_a_bad_chat_completion_is_told_its_fault_before_the_missing_llm(svc):
    """A new-user trial: on a service without an LLM, `/v1/chat/completions` with no user or no messages answered
    409 "no LLM" where docs/openai-proxy.md gives 400 / 422; a good request still gets the 409."""
    hi = [{"role": "user", "content": "Hello."}]
    def ask(**body):
        return svc.post("/v1/chat/completions", json={"model": "timem", **body})

    assert "message list is empty" in one_line(ask(user="mia", messages=[]))
    assert "whose memory?" in one_line(ask(messages=hi), 400)
    assert "no LLM" in one_line(ask(user="mia", messages=hi), 409)
