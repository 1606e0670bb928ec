"""An OpenAI chat completion with memory (``POST /v1/chat/completions`` of ``timem serve``), over the engine facade.

One request, in three steps the memory service runs (:mod:`timem.service.openai_proxy`; it holds the engine
lock for the first and the last, not while the model answers):

1. :func:`prepare`: check the request, recall on the last user message at its time (``at``, UTC-aware) and put
   the context into the conversation as one system message (:mod:`timem.prompts.memory_message`, marked so that
   it is never written back as memory), after the client's leading system messages; pick the session.
2. :func:`complete` or :func:`stream`: the configured LLM answers. An upstream OpenAI-compatible endpoint
   (:class:`~timem.llm.openai_backend.OpenAIBackend`) gets the request as the client sent it (model, tools,
   ``response_format``, every other field) with the memory message added, and its answer goes back as it is; the
   embedded model (any other backend) honours :data:`EMBEDDED_FIELDS` and refuses the rest, naming them.
3. :func:`finish`: the recall trace is stored with the reply as its answer (not before: a failed call leaves
   nothing behind), and the user message and the reply are written as one exchange
   (:meth:`~timem.engine.MemoryEngine.add_exchange`, which consolidates what closed, as chat does). A reply that
   calls tools is not written: the exchange is written with the final text reply of the tool round.

Memory modes (per request): ``off`` (a plain proxy: no recall, nothing written), ``recall`` (nothing written),
``remember`` (recall and remember, the default).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from timem.chat_sessions import new_session_id, open_chat_session, session_is_live
from timem.chat_turns import check_chat, check_names, check_question
from timem.datasets.base import check_length, is_blank
from timem.errors import BadRequestError, ConfigError, ConsolidationIncomplete, InputError
from timem.llm.openai_backend import OpenAIBackend
from timem.llm.protocol import ChatBackend, ChatRequest, Message
from timem.models import MemoryNode
from timem.prompts.memory_message import is_memory_message, memory_message
from timem.recall.answering import pinned_lines
from timem.recall.options import RecallOptions
from timem.recall.pipeline import persist
from timem.recall.trace import RecallTrace
from timem.tree.windows import speaker_zone

if TYPE_CHECKING:
    from timem.engine import MemoryEngine

Mode = Literal["off", "recall", "remember"]
MODES: tuple[Mode, ...] = ("off", "recall", "remember")

#: request fields the embedded model honours; any other field with a value (not null) is refused by name
EMBEDDED_FIELDS = frozenset({"model", "messages", "stream", "stream_options", "user", "temperature", "max_tokens",
                             "max_completion_tokens", "n"})
_MESSAGE_FIELDS = frozenset({"role", "content", "name"})


@dataclass
class ChatCall:
    """One prepared request (:func:`prepare`): what the model gets and what recall found."""

    #: the request body as the client sent it (JSON)
    body: dict[str, Any]
    mode: Mode
    #: the message's time (UTC-aware): recall's question time and the exchange's event time
    at: datetime
    #: the store's user id (``tenant/user``), ``None`` with mode ``off``
    user_id: str | None
    #: the last user message's text (its text parts)
    question: str
    user_name: str
    #: the conversation the model gets: the client's messages with the memory message
    messages: list[dict[str, Any]]
    #: the session the exchange goes to (mode ``remember``)
    session_id: str | None = None
    #: the recall trace (stored by :func:`finish`), ``None`` with mode ``off`` or for a user without memories yet
    trace: RecallTrace | None = None
    memories: int = 0
    #: Mem Len: tokens of the recalled context (cl100k)
    mem_len: int = 0
    upstream: bool = False


def text_of(content: Any) -> str:
    """The text of an OpenAI message's ``content``: a string, or the ``text`` parts of a list joined by line
    breaks (other parts, e.g. images, have no text); ``None`` is empty."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def unsupported_fields(body: dict[str, Any]) -> list[str]:
    """The fields of a request that the embedded model cannot honour (empty: it can answer it): fields outside
    :data:`EMBEDDED_FIELDS`, ``n`` other than 1, ``stream_options`` other than ``include_usage``, tool or function
    messages, message fields other than role, content and name, and content parts that are not text."""
    out = [k for k, v in body.items() if k not in EMBEDDED_FIELDS and v is not None]
    if body.get("n") not in (None, 1):
        out.append("n (only 1)")
    out += [f"stream_options.{k}" for k, v in (body.get("stream_options") or {}).items()
            if k != "include_usage" and v is not None]
    for i, m in enumerate(body.get("messages") or []):
        if m.get("role") not in ("system", "developer", "user", "assistant"):
            out.append(f"messages[{i}].role {m.get('role')!r}")
        out += [f"messages[{i}].{k}" for k, v in m.items() if k not in _MESSAGE_FIELDS and v is not None]
        parts = m.get("content") if isinstance(m.get("content"), list) else []
        out += [f"messages[{i}].content[{j}].type {p.get('type')!r}" for j, p in enumerate(parts)
                if not (isinstance(p, dict) and p.get("type") == "text")]
    return out


def _last_user_message(messages: list[dict[str, Any]], upstream: bool) -> dict[str, Any]:
    last = messages[-1].get("role")
    if last != "user" and not (upstream and last in ("tool", "function")):
        raise InputError(f"the last message is from {last!r}, not the user; send the user's message last: it is the "
                         "one answered and remembered", field="messages")
    found: dict[str, Any] | None = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    if found is None:
        raise InputError("there is no user message; send the user's message", field="messages")
    return found


def prepare(eng: MemoryEngine, body: dict[str, Any], *, user_id: str | None, mode: Mode, at: datetime,
            session_id: str | None = None) -> ChatCall:
    """Check the request, recall for it and build the conversation the model gets (step 1; hold the engine lock).

    Args:
        body: the request as sent (``messages`` a list of message objects).
        user_id: the store's user id; needed unless ``mode`` is ``off``.
        at: the message's time (UTC-aware).
        session_id: the session to write to (default: the user's live chat session, else a new one; the rule of
            the studio's chat, :mod:`timem.chat_sessions`).

    Raises:
        BadRequestError: no memory user (mode other than ``off``), or fields the embedded model cannot honour.
        ConfigError: the engine has no LLM (after the request's own checks).
        InputError: an empty message list, a last message not from the user, an empty user message, a name that
            is not one line, a time outside the calendar, an ended session or a time before its last turn.
        TextTooLongError: the user message is longer than ``max_turn_chars``. Nothing is written in any case.
    """
    # the request is checked first: a bad one is its 400 / 422 on a service without an LLM too (a trial got 409)
    upstream = eng.llm is not None and isinstance(eng.llm.backend, OpenAIBackend)  # type: ignore[attr-defined]
    messages = list(body.get("messages") or [])
    if not messages:
        raise InputError("the message list is empty; send the conversation with the user's message last",
                         field="messages")
    if eng.llm is not None and not upstream and (refused := unsupported_fields(body)):
        shown = ", ".join(refused[:8]) + (f" and {len(refused) - 8} more" if len(refused) > 8 else "")
        raise BadRequestError(f"the embedded model cannot honour {shown}; drop them, or run the service with an "
                              "upstream endpoint (--llm openai), which gets every field unchanged")
    asked = _last_user_message(messages, upstream)
    question = text_of(asked.get("content"))
    name = asked.get("name") or "User"
    if mode != "off":
        if user_id is None:
            raise BadRequestError("whose memory? give the request's `user` field or the X-Timem-User header (your "
                                  "user id, e.g. mia), or send X-Timem-Memory: off for no memory")
        check_chat(question, at)
        check_length(question, eng.config.store.max_turn_chars, field="message")
        check_names(user_name=name)
        check_question(question, at, eng.config.time.tz)
    if eng.llm is None:
        raise ConfigError("this service has no LLM to answer with; start it with `timem serve --llm local` "
                          "(or openai)")
    call = ChatCall(body=body, mode=mode, at=at, user_id=user_id if mode != "off" else None, question=question,
                    user_name=name, messages=messages, upstream=upstream)
    if call.user_id is None:
        return call
    context, pinned = "", []
    if eng.store.has_user(call.user_id):  # a user with nothing stored yet: no memories to give
        res = eng.recall(call.user_id, question, at,  # stored by finish()
                         RecallOptions(persist=False, config=eng.chat_config()))
        call.trace, call.memories, call.mem_len = res.trace, len(res.nodes), res.trace.context_tokens
        context, pinned = res.context, pinned_lines(eng.store, eng.config, call.user_id, at)
    kept = [m for m in messages if not is_memory_message(m)]  # a memory message sent back is replaced
    lead = next((i for i, m in enumerate(kept) if m.get("role") not in ("system", "developer")), len(kept))
    # "now" in the zone the recall read the question's dates in (its offset, else the user's zone)
    text = memory_message(context, at.astimezone(speaker_zone(at, eng.config.time.tz_for(call.user_id))),
                          pinned=pinned)
    call.messages = [*kept[:lead], {"role": "system", "content": text}, *kept[lead:]]
    if mode == "remember":
        call.session_id = session_id or _session_for(eng, call.user_id, at)
        _check_session(eng, call.user_id, call.session_id, at)
    return call


def _session_for(eng: MemoryEngine, user_id: str, at: datetime) -> str:
    idle = timedelta(minutes=eng.config.time.session_idle_timeout_minutes)
    sid = open_chat_session(eng.sessions(user_id))
    if sid and session_is_live(eng.turns(user_id, sid), at, idle):
        return sid
    return new_session_id(at.astimezone(eng.config.time.tz_for(user_id)))


def _check_session(eng: MemoryEngine, user_id: str, session_id: str, at: datetime) -> None:
    """Refuse before the model is called what the write would refuse afterwards: an ended session, or a message
    earlier than the session's last turn."""
    info = next((s for s in eng.sessions(user_id) if s.session_id == session_id), None)
    if info is not None and info.ended:
        raise InputError(f"session {session_id!r} was ended; send the message in a new session (another "
                         "X-Timem-Session, or none)", field="session_id")
    if info is not None and at < info.last_event_at:
        raise InputError(f"the message's time {at.isoformat()} is earlier than the last turn of session "
                         f"{session_id!r} ({info.last_event_at.isoformat()}); send a later X-Timem-Event-Time or "
                         "start a new session", field="event_time")


# ------------------------------------------------------------------ step 2: the model answers
def model_name(backend: ChatBackend) -> str:
    """The name the embedded model answers with in ``model`` (e.g. ``qwen2.5-coder-1.5b-instruct-q4_k_m``)."""
    return str(getattr(backend, "model_name", None) or backend.model_id)


def _embedded_request(call: ChatCall, default_max_tokens: int) -> ChatRequest:
    msgs = [Message(role="system" if m["role"] == "developer" else m["role"], content=text_of(m.get("content")))
            for m in call.messages]
    body = call.body
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or default_max_tokens
    return ChatRequest(messages=msgs, temperature=body.get("temperature") or 0.0, max_tokens=max_tokens)


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def complete(backend: ChatBackend, call: ChatCall, default_max_tokens: int = 1024) -> dict[str, Any]:
    """The model's answer as an OpenAI ``chat.completion`` object (step 2, without the engine lock): an upstream
    endpoint's as it is, the embedded model's built here (``usage`` as the model counted).

    Raises:
        UpstreamError: the upstream endpoint answered an error status. LLMError: the model failed.
    """
    if isinstance(backend, OpenAIBackend):
        return backend.forward({**call.body, "messages": call.messages})
    req = _embedded_request(call, default_max_tokens)
    resp = backend.chat(req)
    cut = resp.completion_tokens is not None and resp.completion_tokens >= req.max_tokens
    finish = "length" if cut else "stop"
    return {"id": f"chatcmpl-{secrets.token_hex(12)}", "object": "chat.completion", "created": int(time.time()),
            "model": model_name(backend),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": resp.text}, "logprobs": None,
                         "finish_reason": finish}],
            "usage": _usage(resp.prompt_tokens or 0, resp.completion_tokens or 0)}


def reply_of(response: dict[str, Any]) -> tuple[str, bool]:
    """The first choice's text of a ``chat.completion`` and whether it calls tools (or a function)."""
    msg = ((response.get("choices") or [{}])[0] or {}).get("message") or {}
    return text_of(msg.get("content")), bool(msg.get("tool_calls") or msg.get("function_call"))


class ReplyStream:
    """The model's answer as OpenAI ``chat.completion.chunk`` objects (step 2 with ``stream: true``); iterate it
    (without the engine lock) and :meth:`close` it when done. :meth:`content` gives a chunk's text of the first
    choice; :attr:`calls_tools` says whether some chunk called tools."""

    def __init__(self, chunks: Iterator[dict[str, Any]]) -> None:
        self._chunks = chunks
        self.calls_tools = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        chunk = next(self._chunks)
        delta = self._delta(chunk)
        if delta.get("tool_calls") or delta.get("function_call"):
            self.calls_tools = True
        return chunk

    @staticmethod
    def _delta(chunk: dict[str, Any]) -> dict[str, Any]:
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                return choice.get("delta") or {}
        return {}

    def content(self, chunk: dict[str, Any]) -> str:
        return text_of(self._delta(chunk).get("content"))

    def close(self) -> None:
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()


def stream(backend: ChatBackend, call: ChatCall, default_max_tokens: int = 1024) -> ReplyStream:
    """The model's answer as chunks (step 2, without the engine lock). An upstream endpoint's chunks go as they
    are (its request is sent before this returns, so that an error status is raised here); the embedded model
    streams token by token where it can (:meth:`~timem.llm.local.LocalLlamaBackend.stream`), else its whole
    answer in one chunk. With ``stream_options.include_usage`` the embedded model's last chunk carries ``usage``:
    the pieces streamed, and the prompt's cl100k tokens (estimates).

    Raises:
        UpstreamError, LLMError: as :func:`complete` (also while iterating).
    """
    if isinstance(backend, OpenAIBackend):
        return ReplyStream(backend.forward_stream({**call.body, "messages": call.messages}))
    return ReplyStream(_embedded_chunks(backend, call, _embedded_request(call, default_max_tokens)))


def _embedded_chunks(backend: ChatBackend, call: ChatCall, req: ChatRequest) -> Iterator[dict[str, Any]]:
    from timem.recall.context import count_context_tokens

    head = {"id": f"chatcmpl-{secrets.token_hex(12)}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model_name(backend)}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    pieces = getattr(backend, "stream", None)
    texts: Iterator[str] = pieces(req) if pieces is not None else iter([backend.chat(req).text])
    n = 0
    try:
        yield chunk({"role": "assistant", "content": ""})
        for text in texts:
            n += 1
            yield chunk({"content": text})
    finally:
        close = getattr(texts, "close", None)
        if close is not None:
            close()
    yield chunk({}, "length" if pieces is not None and n >= req.max_tokens else "stop")
    if (call.body.get("stream_options") or {}).get("include_usage"):
        prompt = sum(count_context_tokens(m.content) for m in req.messages)
        yield {**head, "choices": [], "usage": _usage(prompt, n)}


# ------------------------------------------------------------------ step 3: remember
def finish(eng: MemoryEngine, call: ChatCall, reply: str, *, calls_tools: bool = False) -> tuple[
        list[MemoryNode] | None, str | None]:
    """After the answer (step 3; hold the engine lock): store the recall trace with ``reply`` as its answer (modes
    ``recall`` and ``remember``; until now it was not stored, so that a failed call leaves nothing behind), and
    with ``remember`` write the user message and ``reply`` as one exchange.

    Returns:
        ``(memories written, warning)``: ``(None, None)`` when no exchange is to be written (mode other than
        ``remember``, or a reply that calls tools: the final reply of the tool round is written); ``(None, why)``
        for an empty reply; a warning also when the exchange is stored but some closed window could not be
        consolidated (it stays due).

    Raises:
        InputError: the write was refused (e.g. the session was ended meanwhile); no turn is written.
        TimemError: the exchange is stored, but writing its memories failed.
    """
    if call.trace is not None:
        call.trace.answer = reply
        persist(eng.store, call.trace, eng.config)  # with the items' decay bookkeeping, in one commit
    if call.mode != "remember" or call.user_id is None or call.session_id is None or calls_tools:
        return None, None
    if is_blank(reply):
        return None, "the reply is empty, so the exchange was not remembered"
    try:
        return eng.add_exchange(call.user_id, call.session_id, call.question, reply, call.at,
                                user_name=call.user_name), None
    except ConsolidationIncomplete as exc:
        return list(exc.written), str(exc)
