"""The OpenAI-compatible routes of the memory service: ``POST /v1/chat/completions`` and ``GET /v1/models``.

Thin over :mod:`timem.openai_chat` (recall before the call, the call, remember after it). Same keys and tenants as
every ``/v1`` route; the memory user is the request's ``user`` field or the ``X-Timem-User`` header (one of them,
or both equal), stored as ``<tenant>/<user>``. Request headers:

- ``X-Timem-Memory``: ``remember`` (default: recall, then write the exchange), ``recall`` (recall only) or ``off``
  (a plain proxy: no recall, nothing written, no user needed).
- ``X-Timem-Session``: the session the exchange goes to (default: the user's live chat session, else a new one).
- ``X-Timem-Event-Time``: when the message was said (ISO 8601 with an offset; default now).

Response headers: ``X-Timem-Memory``, ``X-Timem-User``, ``X-Timem-Session``, ``X-Timem-Trace-Id`` (open it in the
studio's Recall inspector), ``X-Timem-Memories`` (memories in the context), ``X-Timem-Mem-Len`` (its tokens) and,
without streaming, ``X-Timem-Warning`` when the answer was not (fully) remembered. Errors are the service's:
``{"error": "<one line>"}`` with the status of the error class; an upstream endpoint's error status is answered
as it is. With ``stream: true`` the exchange is written when the stream ends, before ``data: [DONE]``; if the
client goes away, what it was sent is written, and nothing if that was no content.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated, Any

import anyio
import anyio.to_thread
from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import TypeAdapter, ValidationError

from timem import openai_chat
from timem.errors import InputError, TimemError
from timem.ids import ID_PATTERN, check_service_id
from timem.llm.openai_backend import OpenAIBackend
from timem.openai_chat import ChatCall, ReplyStream, text_of
from timem.service.context import S, Service, T, Tenant, _one_line
from timem.service.models import EventTime
from timem.service.openai_models import ChatCompletionIn, ModelOut, ModelsOut

_log = logging.getLogger(__name__)

router = APIRouter(tags=["OpenAI-compatible"])

MemoryHeader = Annotated[openai_chat.Mode, Header(alias="X-Timem-Memory",
                                                  description="off, recall (only) or remember (recall and write)")]
UserHeader = Annotated[str | None, Header(alias="X-Timem-User", pattern=ID_PATTERN, description="whose memory")]
SessionHeader = Annotated[str | None, Header(alias="X-Timem-Session", pattern=ID_PATTERN,
                                             description="the session the exchange goes to")]
TimeHeader = Annotated[str | None, Header(alias="X-Timem-Event-Time",
                                          description="when the message was said, ISO 8601 with an offset")]
_TIME = TypeAdapter(EventTime)


def _memory_user(field: str | None, header: str | None, mode: str) -> str | None:
    """The memory user: the ``user`` field or the header (both: equal); ``None`` with mode ``off``."""
    if mode == "off":
        return None
    if field is not None and header is not None and field != header:
        raise InputError(f"the user field ({field!r}) and the X-Timem-User header ({header!r}) differ; send one",
                         field="user")
    user = field if field is not None else header
    return None if user is None else check_service_id(user, "user id", "user")


def _event_time(value: str | None) -> datetime:
    """``X-Timem-Event-Time`` as an aware time that keeps its offset: the speaker's offset of the turns it writes
    (:func:`timem.tree.windows.offset_minutes`) and the zone its question's dates are read in
    (:func:`timem.tree.windows.speaker_zone`); it was converted to UTC here, so "yesterday" said at 22:00-05:00 was
    the UTC day's. Default: now (UTC)."""
    if value is None:
        return datetime.now(UTC)
    try:
        return _TIME.validate_python(value)
    except ValidationError as exc:
        raise InputError(f"X-Timem-Event-Time {value!r}: {exc.errors()[0]['msg']}", field="X-Timem-Event-Time") from exc


def _header(text: str) -> str:
    """One line of printable ASCII, for a response header."""
    return _one_line(text).encode("ascii", "backslashreplace").decode("ascii")


def _headers(call: ChatCall, user: str | None, warning: str | None = None) -> dict[str, str]:
    out: dict[str, str] = {"X-Timem-Memory": call.mode}
    if user is not None and call.user_id is not None:
        out["X-Timem-User"] = user
        out["X-Timem-Memories"] = str(call.memories)
        out["X-Timem-Mem-Len"] = str(call.mem_len)
    if call.trace is not None:
        out["X-Timem-Trace-Id"] = call.trace.trace_id
    if call.session_id is not None:
        out["X-Timem-Session"] = call.session_id
    if warning:
        out["X-Timem-Warning"] = _header(warning)
    return out


def _finish(s: Service, t: Tenant, call: ChatCall, reply: str, calls_tools: bool) -> tuple[str | None, bool]:
    """Step 3 under the engine lock (:func:`timem.openai_chat.finish`): ``(warning, whether writing failed)``; a
    failure is logged and returned as the warning (the client has its answer already)."""
    try:
        with s.use() as eng:
            return openai_chat.finish(eng, call, reply, calls_tools=calls_tools)[1], False
    except TimemError as exc:
        msg = str(exc).replace(t.prefix, "")
        _log.warning("an exchange of %s was answered but not remembered: %s", call.user_id, msg)
        return f"the answer was not remembered: {msg}", True


@router.post("/v1/chat/completions")
async def chat_completions(body: ChatCompletionIn, request: Request, s: S, t: T, memory: MemoryHeader = "remember",
                           x_user: UserHeader = None, session: SessionHeader = None,
                           event_time: TimeHeader = None) -> Any:
    """An OpenAI chat completion with memory: recall on the last user message, answer with the service's LLM (the
    embedded model, or an upstream endpoint that gets the request unchanged), write the exchange."""
    sent = body.as_sent()
    user = _memory_user(body.user, x_user, memory)
    at = _event_time(event_time)
    asked = next((m for m in reversed(sent["messages"]) if m.get("role") == "user"), None)
    s.check_text("message", text_of(asked.get("content")) if asked else None)

    def step1() -> tuple[ChatCall, Any, int]:
        with s.use() as eng:
            call = openai_chat.prepare(eng, sent, user_id=t.internal(user) if user else None, mode=memory, at=at,
                                       session_id=session)
            return call, eng.llm.backend, eng.llm.max_tokens  # type: ignore[union-attr]

    call, backend, max_tokens = await anyio.to_thread.run_sync(step1)
    if not body.stream:
        response = await anyio.to_thread.run_sync(openai_chat.complete, backend, call, max_tokens)
        reply, calls_tools = openai_chat.reply_of(response)
        warning, _ = await anyio.to_thread.run_sync(_finish, s, t, call, reply, calls_tools)
        return JSONResponse(response, headers=_headers(call, user, warning))
    chunks = await anyio.to_thread.run_sync(openai_chat.stream, backend, call, max_tokens)
    try:  # an error before the first chunk is answered with its status, not inside a 200 stream
        first = await anyio.to_thread.run_sync(next, chunks, None)
    except BaseException:
        await anyio.to_thread.run_sync(chunks.close)
        raise
    return StreamingResponse(_events(request, s, t, call, chunks, first), media_type="text/event-stream",
                             headers={**_headers(call, user), "Cache-Control": "no-cache"})


def _event(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


async def _events(request: Request, s: Service, t: Tenant, call: ChatCall, chunks: ReplyStream,
                  first: dict[str, Any] | None) -> AsyncIterator[str]:
    """The SSE body: the chunks, then (the stream ended) the exchange is written and ``[DONE]`` sent. A client that
    goes away gets what it was sent written, nothing if that was no content; a model that fails mid-stream gets an
    error event and nothing written."""
    sent: list[str] = []
    state = "open"  # open -> ended | failed -> writing
    try:
        try:
            chunk = first
            while chunk is not None:
                if await request.is_disconnected():
                    break
                yield _event(chunk)
                sent.append(chunks.content(chunk))
                chunk = await anyio.to_thread.run_sync(next, chunks, None)
            else:
                state = "ended"
        except TimemError as exc:
            state = "failed"
            msg = _one_line(str(exc).replace(t.prefix, ""))
            _log.warning("a streamed answer for %s failed: %s", call.user_id, msg)
            yield _event({"error": {"message": msg, "type": type(exc).__name__}})
        if state == "ended":
            state = "writing"
            warning, failed = await anyio.to_thread.run_sync(_finish, s, t, call, "".join(sent), chunks.calls_tools)
            if failed and warning:  # the client has the answer, and must learn that it is not remembered
                yield _event({"error": {"message": _one_line(warning), "type": "timem_not_remembered"}})
            elif warning:
                yield f": timem warning: {_one_line(warning)}\n\n"
            yield "data: [DONE]\n\n"
    finally:
        await _close(s, t, call, chunks, "".join(sent), gone=state == "open")


async def _close(s: Service, t: Tenant, call: ChatCall, chunks: ReplyStream, sent: str, *, gone: bool) -> None:
    """Close the model's stream; if the client went away (``gone``) after some content, write what it was sent."""
    with anyio.CancelScope(shield=True):
        await anyio.to_thread.run_sync(chunks.close)
        if not gone:
            return
        if sent.strip():  # the client went away after some content: what it was sent is the reply
            await anyio.to_thread.run_sync(_finish, s, t, call, sent, chunks.calls_tools)
        _log.info("the client of a streamed answer for %s went away after %d characters; %s", call.user_id,
                  len(sent), "they are remembered" if sent.strip() else "nothing is written")


@router.get("/v1/models")
async def list_models(s: S) -> Any:
    """The models: an upstream endpoint's list as it is, else the embedded model (none without an LLM)."""
    llm = s.engine.llm
    backend = getattr(llm, "backend", None)
    if isinstance(backend, OpenAIBackend):
        return JSONResponse(await anyio.to_thread.run_sync(backend.models))
    return ModelsOut(data=[ModelOut(id=openai_chat.model_name(backend))] if backend is not None else [])
