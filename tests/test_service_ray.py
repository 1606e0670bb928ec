"""The memory service on Ray Serve (``timem serve --ray``): a local 2-CPU Ray cluster, two shard replicas behind the
router, real HTTP on 127.0.0.1, real DuckDB shard files and MiniLM. Writes land on the shard the hash names, each
user recalls only its own turns, a chat completion goes to its user's shard and streams through, an erase-user
leaves its shard, a tenant list, export and erase cover every shard, a killed shard replica comes back with its
data, and afterwards each shard file is served by the plain one-process service. Also, without Ray: the shard's
in-process ASGI driver, and the router over fake handles (keys, hash routing, fan-out, a shard that is down)."""

from __future__ import annotations

import asyncio
import json
import threading

import httpx
import pytest
from openai_support import UPSTREAM_KEY, fake_upstream, streamed
from service_support import client, free_port, serving
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from timem.config import load_config
from timem.service import KeyFile, create_app
from timem.service.shards import shard_of, shard_paths

ray = pytest.importorskip("ray")
serve = pytest.importorskip("ray.serve")

AT = "2024-05-02T09:00:00+00:00"
WORDS = ["avocado", "blizzard", "cinnamon", "dolphin", "emerald", "falcon"]
USERS = [f"u{i}" for i in range(len(WORDS))]


def _config(db, upstream=None):
    """No LLM, or (``upstream``) an OpenAI-compatible endpoint that only answers chat completions: the gate is the
    score gate and memories are extractive either way."""
    llm = {"llm_backend": "openai", "openai_base_url": upstream, "openai_api_key": UPSTREAM_KEY,
           "openai_model": "cfg-model", "gate": "score"} if upstream else {"llm_backend": "none"}
    return load_config(env={}, db_path=db, consolidation_mode="extractive", online_queue=False,
                       cache_dir=db.parent / "cache", memory_extractor="rules", **llm)


@pytest.fixture()
def cluster_service(tmp_path_factory, ray_cluster):
    from timem.service import ray_serve

    tmp = tmp_path_factory.mktemp("ray-serve")
    db = tmp / "memory.duckdb"
    kf = KeyFile(tmp / "memory.duckdb.keys.json")
    keys = {t: kf.add(t) for t in ("acme", "beta")}
    port = free_port()
    with fake_upstream() as (up_url, up):
        ray_serve.start(_config(db, up_url), str(kf.path), 2, "127.0.0.1", port)
        try:
            yield f"http://127.0.0.1:{port}", keys, db, kf, up
        finally:
            ray_serve.stop()
            serve.shutdown()


def _shard_users(shard: int, key: str) -> list[str]:
    """The tenant's users as one shard replica sees them (asked through its handle, not the router)."""
    h = serve.get_deployment_handle(f"timem-shard{shard}", app_name="timem")
    req = {"method": "GET", "path": "/v1/users", "query": b"",
           "headers": [(b"authorization", f"Bearer {key}".encode())], "body": b""}
    a = h.call.remote(req).result(timeout_s=60)
    assert a["status"] == 200, a
    return httpx.Response(200, content=a["body"]).json()["users"]


@pytest.mark.slow
def test_users_are_sharded_routed_erased_and_exported_over_ray_serve(cluster_service):
    base, keys, db, kf, up = cluster_service
    owner = {u: shard_of("acme", u, 2) for u in USERS}
    assert set(owner.values()) == {0, 1}, owner  # both shards hold users (else the test proves little)
    with client(base, keys["acme"]) as a, client(base, keys["beta"]) as b, client(base, None) as anon:
        assert anon.get("/v1/users").status_code == 401
        assert anon.get("/v1/health").json() == {"status": "ok", "shards": 2}
        for u, word in zip(USERS, WORDS, strict=True):
            r = a.post(f"/v1/users/{u}/turns", json={"session_id": "s1", "event_time": AT, "reply": "Noted.",
                                                      "message": f"My secret word is {word}."})
            assert r.status_code == 200, r.text
            assert r.json()["turn_ids"] == [f"{u}:s1:0", f"{u}:s1:1"]
        r = b.post("/v1/users/u0/turns", json={"session_id": "s1", "event_time": AT, "message": "Beta's word: zebra."})
        assert r.status_code == 200, r.text

        # an OpenAI chat completion goes to the shard of its user, and a stream is streamed through the router
        held = threading.Event()  # the upstream holds the rest of its answer until the first chunk came through
        up.replies.append(streamed(["Hello ", "from ", "upstream."], wait=held))
        with a.stream("POST", "/v1/chat/completions", headers={"X-Timem-Event-Time": "2024-05-03T09:00:00+00:00"},
                      json={"model": "m", "user": "u2", "stream": True,
                            "messages": [{"role": "user", "content": "Good morning!"}]}) as r:
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            lines = r.iter_lines()
            first = next(line for line in lines if line.startswith("data: "))
            assert '"role": "assistant"' in first and not held.is_set()  # streamed, not buffered
            held.set()
            events = [first, *(line for line in lines if line.startswith("data: "))]
        assert events[-1] == "data: [DONE]" and "upstream." in events[-3]
        said = [(t["role"], t["text"]) for t in a.get("/v1/users/u2/turns").json()["turns"]]
        assert said[-2:] == [("user", "Good morning!"), ("assistant", "Hello from upstream.")]

        # every write is on the shard the hash names, and only there
        for shard in (0, 1):
            assert _shard_users(shard, keys["acme"]) == sorted(u for u in USERS if owner[u] == shard)
        assert a.get("/v1/users").json() == {"users": USERS}  # the list fans out and merges
        assert b.get("/v1/users").json() == {"users": ["u0"]}

        # each user's recall sees its own turns only
        for u, word in zip(USERS, WORDS, strict=True):
            r = a.post(f"/v1/users/{u}/recall", json={"query": "What is my secret word?"})
            assert r.status_code == 200, r.text
            context = r.json()["context"]
            assert word in context, (u, context)
            assert not [w for w in [*WORDS, "zebra"] if w != word and w in context], (u, context)

        # a tenant export covers every shard
        data = a.get("/v1/export").json()
        assert sorted(data["users"]) == USERS
        for u, word in zip(USERS, WORDS, strict=True):
            assert [t["text"] for t in data["users"][u]["turns"]][0] == f"My secret word is {word}."
        assert "zebra" not in str(data)

        # erase one user: gone from its shard, from the list, from the export; the others stay
        gone = USERS[1]
        r = a.delete(f"/v1/users/{gone}")
        assert r.status_code == 200, r.text
        assert a.get(f"/v1/users/{gone}/export").status_code == 404
        assert gone not in _shard_users(owner[gone], keys["acme"])
        assert a.get("/v1/users").json() == {"users": [u for u in USERS if u != gone]}
        assert sorted(a.get("/v1/export").json()["users"]) == [u for u in USERS if u != gone]
        assert a.get("/v1/about").json()["shards"] == 2

        # erasing a tenant reaches every shard; the other tenant keeps its users
        r = b.delete("/v1/users")
        assert r.status_code == 422 and "confirm=true" in r.json()["error"]
        r = b.delete("/v1/users", params={"confirm": "true"})
        assert r.status_code == 200, r.text
        assert r.json()["erased"] == ["u0"] and r.json()["counts"]["turns"] == 1
        assert b.get("/v1/users").json() == {"users": []}
        assert a.get("/v1/users").json() == {"users": [u for u in USERS if u != gone]}

        # a shard replica killed (as kill -9 would): Ray Serve restarts it on its file, and the request waits
        victim = USERS[0]
        replica = next(a for a in ray.util.list_named_actors(all_namespaces=True)
                       if f"#timem-shard{owner[victim]}#" in a["name"])
        ray.kill(ray.get_actor(replica["name"], namespace=replica["namespace"]))
        r = a.get(f"/v1/users/{victim}/export", timeout=120)
        assert r.status_code == 200, r.text
        assert [t["text"] for t in r.json()["turns"]][0] == f"My secret word is {WORDS[0]}."

    # once the application is gone, each shard file is an ordinary TiMem file for the one-process service
    from timem.service import ray_serve

    ray_serve.stop()
    for shard, path in enumerate(shard_paths(db, 2)):
        assert path.exists()
        with serving(create_app(_config(path), kf)) as (one, _), client(one, keys["acme"]) as a:
            mine = sorted(u for u in USERS if owner[u] == shard and u != USERS[1])
            assert a.get("/v1/users").json() == {"users": mine}
            u = mine[0]
            word = WORDS[USERS.index(u)]
            assert word in a.post(f"/v1/users/{u}/recall", json={"query": "What is my secret word?"}).json()["context"]


def _req(path, body=b""):
    return {"method": "POST", "path": path, "query": b"a=1", "headers": [(b"content-type", b"application/json")],
            "body": body}


def test_call_app_runs_a_request_in_process_and_streams_as_the_app_sends():
    from timem.service.ray_serve import call_app, streamed_answer, whole_answer

    seen = {}

    async def echo(request: Request):
        seen["query"], seen["body"], seen["state"] = request.url.query, await request.body(), request.state.ready
        return JSONResponse({"ok": True}, status_code=201)

    async def chunks(request: Request):
        async def gen():
            for i in range(3):
                yield f"chunk{i} "
        return StreamingResponse(gen(), media_type="text/plain")

    async def boom(request: Request):
        raise RuntimeError("broken route")

    app = Starlette(routes=[Route("/echo", echo, methods=["POST"]), Route("/stream", chunks, methods=["POST"]),
                            Route("/boom", boom, methods=["POST"])])

    async def main():
        # what a shard replica answers, without Ray (with its lifespan's state)
        whole = await whole_answer(app, _req("/echo", b'{"x": 1}'), {"ready": "yes"})
        streamed = [m async for m in streamed_answer(app, _req("/stream"))]
        broken = await whole_answer(app, _req("/boom"))
        return whole, streamed, broken, [m["type"] async for m in call_app(app, _req("/missing"))]

    whole, streamed, broken, missing = asyncio.run(main())
    assert whole["status"] == 201 and whole["body"] == b'{"ok":true}'
    assert seen == {"query": "a=1", "body": b'{"x": 1}', "state": "yes"}  # the lifespan's state, as a server gives
    assert streamed[0]["status"] == 200 and streamed[1:] == [b"chunk0 ", b"chunk1 ", b"chunk2 "]
    assert broken["status"] == 500  # the app's own 500 (the error is logged, not swallowed)
    assert missing == ["http.response.start", "http.response.body"]


def test_call_app_tells_the_app_when_the_caller_goes_away():
    from timem.service.ray_serve import call_app

    told = asyncio.Event()

    async def endless(request: Request):
        async def gen():
            try:
                while True:
                    yield "tick "
                    await asyncio.sleep(0.01)
            finally:  # Starlette ends the stream when it receives http.disconnect
                told.set()
        return StreamingResponse(gen(), media_type="text/plain")

    app = Starlette(routes=[Route("/endless", endless, methods=["POST"])])

    async def main():
        got = []
        stream = call_app(app, _req("/endless"))
        async for m in stream:
            got.append(m)
            if len(got) == 3:
                break
        await stream.aclose()
        await asyncio.wait_for(told.wait(), 5)
        return got

    got = asyncio.run(main())
    assert got[0]["type"] == "http.response.start" and got[1]["body"] == b"tick "


@pytest.mark.slow
def test_a_shard_file_that_does_not_open_stops_the_start_with_its_error(tmp_path, ray_cluster):
    from timem.service import ray_serve

    db = tmp_path / "memory.duckdb"
    kf = KeyFile(tmp_path / "memory.duckdb.keys.json")
    kf.add("acme")
    shard_paths(db, 2)[1].write_bytes(b"this is not a DuckDB file" * 100)
    try:
        with pytest.raises(ray_serve.ShardServeError, match="did not start") as err:
            ray_serve.start(_config(db), str(kf.path), 2, "127.0.0.1", free_port())
        msg = str(err.value)
        assert "timem-shard1" in msg and "memory.shard1.duckdb exists but is not a DuckDB file" in msg, msg
        assert "timem-shard0" not in msg  # the shard that opened is not blamed
    finally:
        ray_serve.stop()


class _FakeShard:
    """A shard's handle without Ray: ``handle.call.remote(req)`` answers with ``answer(req)`` (or raises it)."""

    def __init__(self, answer):
        self.answer, self.seen = answer, []
        self.call = self

    def remote(self, req):
        self.seen.append(req["path"])

        async def reply():
            out = self.answer(req)
            if isinstance(out, Exception):
                raise out
            return {"status": 200, "headers": [(b"content-type", b"application/json")],
                    "body": json.dumps(out).encode()}
        return reply()


def _http(router, method, path, key=None):
    headers = [(b"authorization", f"Bearer {key}".encode())] if key else []
    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": headers, "scheme": "http", "server": ("127.0.0.1", 80), "root_path": ""}

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    res = asyncio.run(router(Request(scope, receive)))
    return res.status_code, json.loads(res.body)


def test_the_router_checks_the_key_routes_by_the_hash_fans_out_and_says_when_a_shard_is_down(tmp_path):
    from ray.exceptions import RayError

    from timem.service.ray_serve import ShardRouter

    kf = KeyFile(tmp_path / "k.json")
    key = kf.add("acme")
    shards = [_FakeShard(lambda req, i=i: {"users": [f"from{i}"]}) for i in range(2)]
    router = ShardRouter(shards, str(kf.path))
    assert _http(router, "GET", "/v1/users")[0] == 401
    assert _http(router, "GET", "/v1/users/mia/export", "tmk_00000000_" + "x" * 30)[0] == 401
    assert shards[0].seen == shards[1].seen == []  # nothing forwarded without a valid key
    assert _http(router, "GET", "/v1/users", key) == (200, {"users": ["from0", "from1"]})
    for user in USERS:
        before = [len(s.seen) for s in shards]
        _http(router, "GET", f"/v1/users/{user}/export", key)
        assert [len(s.seen) - b for s, b in zip(shards, before, strict=True)] == [
            int(shard_of("acme", user, 2) == i) for i in range(2)]
    shards[1].answer = lambda req: RayError("the replica died")
    status, body = _http(router, "GET", "/v1/users", key)
    assert status == 503 and "not available" in body["error"] and "retry" in body["error"]
