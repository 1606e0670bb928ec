"""Support for the OpenAI-compatible endpoint's tests: a fake upstream OpenAI-compatible server on 127.0.0.1, the
service over it, and the ``openai`` SDK as the client. Not a test module."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from timem.config import load_config
from timem.engine import MemoryEngine
from timem.llm.client import LLM
from timem.llm.openai_backend import OpenAIBackend
from timem.store import Store

UPSTREAM_KEY = "upstream-secret"


class FakeUpstream:
    """An OpenAI-compatible server: records every request (``requests``: body and Authorization header) and answers
    with the next queued reply (a function of the body giving a response), else a plain completion."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.replies: list[Callable[[dict[str, Any]], Any]] = []
        self.app = FastAPI()

        @self.app.post("/v1/chat/completions")
        async def chat(request: Request) -> Any:
            body = await request.json()
            self.requests.append({"body": body, "auth": request.headers.get("authorization")})
            reply = self.replies.pop(0) if self.replies else completion("Upstream says hi.")
            return reply(body)

        @self.app.get("/v1/models")
        def models() -> dict[str, Any]:
            return {"object": "list", "data": [{"id": "up-model-a", "object": "model", "created": 1,
                                                "owned_by": "fake-upstream"}]}


def completion(content: str | None, *, tool_calls: list | None = None, id: str = "chatcmpl-up-1"):
    def reply(body: dict[str, Any]) -> JSONResponse:
        msg: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            msg["tool_calls"] = tool_calls
        return JSONResponse({"id": id, "object": "chat.completion", "created": 1700000000, "model": body["model"],
                             "choices": [{"index": 0, "message": msg, "logprobs": None,
                                          "finish_reason": "tool_calls" if tool_calls else "stop"}],
                             "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}})
    return reply


def error(status: int, message: str):
    def reply(body: dict[str, Any]) -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": "invalid_request_error", "code": None}},
                            status_code=status)
    return reply


def streamed(pieces: list[str], *, id: str = "chatcmpl-up-s", wait: threading.Event | None = None):
    """A streamed answer: a role chunk, then (after ``wait`` is set, if given) one chunk per piece, the finish
    chunk and ``[DONE]``."""
    def reply(body: dict[str, Any]) -> StreamingResponse:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            data = {"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": body["model"],
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            return f"data: {json.dumps(data)}\n\n"

        def events() -> Iterator[str]:
            yield chunk({"role": "assistant", "content": ""})
            if wait is not None:
                wait.wait(60)
            for p in pieces:
                yield chunk({"content": p})
            yield chunk({}, "stop")
            yield "data: [DONE]\n\n"
        return StreamingResponse(events(), media_type="text/event-stream")
    return reply


def upstream_factory(db: Path, embedder, base_url: str) -> Callable[[], MemoryEngine]:
    """The engine over ``db`` answering through the upstream endpoint at ``base_url`` (model ``cfg-model``)."""
    def make() -> MemoryEngine:
        config = load_config(env={}, db_path=db, llm_backend="none", cache_dir=db.parent / "cache",
                             consolidation_mode="extractive", memory_extractor="rules")
        store = Store(db, embedder.model_id, embedder.dim)
        backend = OpenAIBackend(base_url, UPSTREAM_KEY, "cfg-model", timeout_s=60)
        return MemoryEngine(config, store, embedder, LLM(backend, store))
    return make


def sdk(base: str, key: str) -> openai.OpenAI:
    """The real OpenAI SDK pointed at the service (no retries: each request is sent once)."""
    return openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0, timeout=120)


def state(base: str, keys: dict[str, str]) -> dict[str, Any]:
    """Everything a write could change, per tenant: users, their turns and their recall traces."""
    out: dict[str, Any] = {}
    for tenant, key in keys.items():
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
            for user in c.get("/v1/users").json()["users"]:
                turns = c.get(f"/v1/users/{user}/turns").json()["turns"]
                traces = c.get(f"/v1/users/{user}/traces").json()["traces"]
                out[f"{tenant}/{user}"] = ([t["id"] for t in turns], [t["trace_id"] for t in traces])
    return out


@contextmanager
def fake_upstream() -> Iterator[tuple[str, FakeUpstream]]:
    from service_support import serving

    up = FakeUpstream()
    with serving(up.app) as (base, _):
        yield f"{base}/v1", up
