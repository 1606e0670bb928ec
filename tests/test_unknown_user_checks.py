"""Who checks that a recall's user exists: :meth:`MemoryEngine.recall` / ``ask`` raise :class:`UnknownUserError`
(a :class:`NotFoundError`) themselves, so the memory service, the MCP ``recall`` and ``forget`` tools and the
OpenAI proxy no longer check first. The service listed every user of the store (all tenants) for each recall and
answer; its 404 keeps its own words (no file path, no other user), and an unknown user is still a 404 before a
service without an LLM says 409. Real HTTP on 127.0.0.1; the MCP tools in process.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.server.mcpserver.exceptions import ToolError
from service_support import client, engine_factory, running
from studio_support import studio_answer

from timem.engine import MemoryEngine
from timem.errors import NotFoundError, UnknownUserError
from timem.llm.protocol import ChatRequest
from timem.service import KeyFile
from timem.service.mcp_server import build_server

AT = "2024-05-02T09:00:00+00:00"


def _answer(request: ChatRequest) -> str:
    return studio_answer(request) if request.json_schema is not None else "Your cat is called Pixel."


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    return fake_embedder


def _service(folder: Path, embedder, answer) -> Iterator[tuple[str, dict[str, str], list[MemoryEngine]]]:
    kf = KeyFile(folder / "timem.duckdb.keys.json")
    keys = {t: kf.add(t) for t in ("acme", "beta")}
    engines: list[MemoryEngine] = []
    make = engine_factory(folder / "timem.duckdb", embedder, answer=answer, memory_extractor="rules")

    def factory() -> MemoryEngine:
        engines.append(make())
        return engines[-1]

    with running(factory, kf) as base, client(base, keys["acme"]) as c:
        r = c.post("/v1/users/mia/turns", json={"session_id": "s1", "event_time": AT, "reply": "Lovely!",
                                                "message": "I adopted a grey cat called Pixel."})
        assert r.status_code == 200, r.text
        yield base, keys, engines


@pytest.fixture(scope="module")
def no_llm(tmp_path_factory, embedder):
    yield from _service(tmp_path_factory.mktemp("no-llm"), embedder, None)


@pytest.fixture(scope="module")
def with_llm(tmp_path_factory, embedder):
    yield from _service(tmp_path_factory.mktemp("with-llm"), embedder, _answer)


def _no_listing(engines: list[MemoryEngine], monkeypatch) -> None:
    """Make listing the store's users fail: a recall of a known user must not need it."""
    (eng,) = engines

    def listing() -> list[str]:
        raise AssertionError("the store's users were listed")
    monkeypatch.setattr(eng.store, "users", listing)


def _error(r, status: int) -> str:
    assert r.status_code == status, (r.status_code, r.text)
    return str(r.json()["error"])


ASKED = "/v1/users/{}/{}"
SAID = "no user {0!r}; add turns first (POST /v1/users/{0}/turns)"


@pytest.mark.parametrize("route", ["recall", "answer"])
def test_unknown_user_is_404_in_the_services_words_on_a_service_without_llm(no_llm, route):
    base, keys, _ = no_llm
    with client(base, keys["acme"]) as acme, client(base, keys["beta"]) as beta:
        assert _error(acme.post(ASKED.format("ghost", route), json={"query": "cat"}), 404) == SAID.format("ghost")
        # beta has no mia of its own: acme's is not hers to see, and neither its tenant nor the file is named
        assert _error(beta.post(ASKED.format("mia", route), json={"query": "cat"}), 404) == SAID.format("mia")
        assert _error(acme.post(ASKED.format("mia", "answer"), json={"query": "cat"}), 409).startswith(
            "this service has no LLM")


@pytest.mark.parametrize("route", ["recall", "answer"])
def test_unknown_user_is_404_in_the_services_words_with_an_llm(with_llm, route):
    base, keys, _ = with_llm
    with client(base, keys["beta"]) as beta:
        assert _error(beta.post(ASKED.format("mia", route), json={"query": "cat"}), 404) == SAID.format("mia")


@pytest.mark.parametrize(("service", "route", "field", "said"), [
    ("no_llm", "recall", "context", "Pixel"), ("with_llm", "answer", "answer", "Your cat is called Pixel.")])
def test_a_known_users_recall_and_answer_do_not_list_the_stores_users(request, monkeypatch, service, route, field,
                                                                       said):
    base, keys, engines = request.getfixturevalue(service)
    _no_listing(engines, monkeypatch)
    with client(base, keys["acme"]) as acme:
        r = acme.post(ASKED.format("mia", route), json={"query": "What is my cat called?"})
    assert r.status_code == 200, r.text
    assert said in r.json()[field]


def test_mcp_recall_and_forget_check_the_user_once(tmp_path, embedder, monkeypatch):
    eng = engine_factory(tmp_path / "m.duckdb", embedder, memory_extractor="rules")()
    asked: list[str] = []
    has_user = eng.store.has_user

    def counted(user_id: str) -> bool:
        asked.append(user_id)
        return has_user(user_id)
    monkeypatch.setattr(eng.store, "has_user", counted)
    try:
        server = build_server(eng, "mia")
        with pytest.raises(ToolError, match="no user 'mia'"):  # nothing stored yet: the engine's message
            anyio.run(server.call_tool, "recall", {"query": "cat"})
        with pytest.raises(ToolError, match="no user 'mia'"):
            anyio.run(server.call_tool, "forget", {"text": "forget that I have a cat"})
        assert asked == ["mia", "mia"]
        anyio.run(server.call_tool, "remember", {"text": "I adopted a grey cat called Pixel.", "event_time": AT})
        asked.clear()
        anyio.run(server.call_tool, "recall", {"query": "What is my cat called?"})
        assert asked == ["mia"]
    finally:
        eng.close()


def test_unknown_user_error_names_the_user_and_survives_pickling():
    exc = UnknownUserError("no user 'acme/ghost' in x.duckdb; users: none", "acme/ghost")
    back = pickle.loads(pickle.dumps(exc))
    assert isinstance(back, NotFoundError) and back.user_id == "acme/ghost" and str(back) == str(exc)
