"""OpenAI-compatible backend against a real HTTP server on 127.0.0.1 (no mocks of the openai package)."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import BaseModel

from timem.errors import LLMError
from timem.llm.client import LLM
from timem.llm.openai_backend import OpenAIBackend
from timem.llm.protocol import ChatBackend, ChatRequest, Message
from timem.store.duckdb_store import Store


class Answer(BaseModel):
    answer: str
    year: int


def completion(content: str, prompt_tokens: int = 11, completion_tokens: int = 7) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "served-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


class FakeServer:
    """Records every POST; answers from ``self.replies`` (list of (status, body, delay_s))."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.replies: list[tuple[int, dict, float]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                       "body": body})
                status, payload, delay = outer.replies.pop(0) if outer.replies else (
                    500, {"error": {"message": "no reply scripted"}}, 0.0)
                time.sleep(delay)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


@pytest.fixture(scope="module")
def _module_store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("llm") / "t.duckdb", "test-embed", 4)  # opening costs ~0.2 s
    yield s
    s.close()


@pytest.fixture
def store(_module_store):
    """A real DuckDB store whose LLM cache and call log are empty at the start of each test."""
    _module_store.con.execute("DELETE FROM llm_cache")
    _module_store.con.execute("DELETE FROM llm_calls")
    return _module_store


MSGS = [Message(role="system", content="Answer briefly."), Message(role="user", content="When did X happen?")]


def test_json_schema_mode_round_trip(server, store):
    server.replies.append((200, completion('{"answer": "moon landing", "year": 1969}'), 0.0))
    backend = OpenAIBackend(server.url, None, "served-model", timeout_s=5)
    assert isinstance(backend, ChatBackend)
    assert backend.model_id == f"served-model @ 127.0.0.1:{server.httpd.server_address[1]}"
    llm = LLM(backend, store, max_tokens=200)
    out = llm.complete_json(MSGS, Answer, purpose="answer", user_id="u1")
    assert out == Answer(answer="moon landing", year=1969)
    [req] = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["authorization"] == "Bearer not-needed"
    body = req["body"]
    assert body["model"] == "served-model" and body["temperature"] == 0 and body["max_tokens"] == 200
    assert body["messages"] == [m.model_dump() for m in MSGS]
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "response", "schema": Answer.model_json_schema(), "strict": False}}
    # the usage counts are logged, and a repeat is a cache hit without HTTP
    assert llm.complete_json(MSGS, Answer, purpose="answer", user_id="u1") == out
    assert len(server.requests) == 1
    rows = store.con.execute("SELECT cached, prompt_tokens, completion_tokens FROM llm_calls "
                             "ORDER BY cached").fetchall()
    assert rows == [(False, 11, 7), (True, 11, 7)]


def test_json_object_mode_puts_schema_in_system_message(server):
    server.replies.append((200, completion('Here you go: {"answer": "a", "year": 2001}'), 0.0))
    backend = OpenAIBackend(server.url, "sk-test", "m", timeout_s=5, json_mode="json_object")
    assert LLM(backend, None).complete_json(MSGS, Answer, purpose="p").year == 2001
    body = server.requests[0]["body"]
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-test"
    assert body["response_format"] == {"type": "json_object"}
    system = body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Answer briefly.")
    assert json.dumps(Answer.model_json_schema()) in system["content"]
    assert body["messages"][1:] == [MSGS[1].model_dump()]


def test_json_object_mode_without_system_message_adds_one(server):
    server.replies.append((200, completion('{"answer": "b", "year": 1}'), 0.0))
    backend = OpenAIBackend(server.url, None, "m", timeout_s=5, json_mode="json_object")
    backend.chat(ChatRequest(messages=[MSGS[1]], json_schema={"type": "object"}))
    msgs = server.requests[0]["body"]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user"] and '{"type": "object"}' in msgs[0]["content"]


def test_plain_completion_has_no_response_format(server):
    server.replies.append((200, completion("It happened in 1969."), 0.0))
    text = LLM(OpenAIBackend(server.url, None, "m", timeout_s=5), None).complete(MSGS, purpose="p")
    assert text == "It happened in 1969."
    assert "response_format" not in server.requests[0]["body"]


def test_connection_refused_is_llm_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = OpenAIBackend(f"http://127.0.0.1:{port}/v1", None, "m", timeout_s=2)
    backend._client = backend._client.with_options(max_retries=0)  # skip the backoff sleep in tests
    with pytest.raises(LLMError, match="cannot reach .*TIMEM_OPENAI_BASE_URL"):
        LLM(backend, None).complete(MSGS, purpose="p")


@pytest.mark.parametrize("status, pattern", [
    (401, "TIMEM_OPENAI_API_KEY"),
    (404, "TIMEM_OPENAI_MODEL"),
    (400, "TIMEM_OPENAI_JSON_MODE=json_object"),
])
def test_http_errors_say_what_to_do(server, status, pattern):
    server.replies.append((status, {"error": {"message": f"boom {status}"}}, 0.0))
    backend = OpenAIBackend(server.url, None, "m", timeout_s=5)
    with pytest.raises(LLMError, match=pattern) as ei:
        backend.chat(ChatRequest(messages=MSGS, json_schema={"type": "object"}))
    assert (f"boom {status}" in str(ei.value)) == (status != 401)
    assert len(server.requests) == 1  # 4xx are not retried


def test_timeout_is_llm_error(server):
    server.replies.append((200, completion("late"), 1.0))
    backend = OpenAIBackend(server.url, None, "m", timeout_s=0.2)
    backend._client = backend._client.with_options(max_retries=0)
    with pytest.raises(LLMError, match="timed out .*TIMEM_OPENAI_TIMEOUT_S"):
        backend.chat(ChatRequest(messages=MSGS))


def test_null_content_is_llm_error(server):
    payload = completion("x")
    payload["choices"][0]["message"]["content"] = None
    server.replies.append((200, payload, 0.0))
    with pytest.raises(LLMError, match="no text"):
        OpenAIBackend(server.url, None, "m", timeout_s=5).chat(ChatRequest(messages=MSGS))
