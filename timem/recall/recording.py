"""RecordingLLM: an :class:`~timem.llm.protocol.LLMClient` wrapper that records every call for the recall trace."""

from __future__ import annotations

import time
from typing import TypeVar

from pydantic import BaseModel

from timem.errors import LLMError
from timem.llm.protocol import LLMClient, Message
from timem.recall.trace import LLMCall
from timem.tokens import count_tokens

T = TypeVar("T", bound=BaseModel)


class RecordingLLM:
    """Wraps an :class:`LLMClient` and records each call as an :class:`LLMCall` in :attr:`calls`.

    Token counts: if the wrapped client has ``last_usage`` = ``(prompt_tokens, completion_tokens)``
    after a call, those are used; otherwise cl100k counts of the messages and the reply.
    """

    def __init__(self, inner: LLMClient) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.calls: list[LLMCall] = []

    def _record(self, purpose: str, messages: list[Message], t0: float, reply: str | None, error: str | None) -> None:
        usage = getattr(self.inner, "last_usage", None)
        if isinstance(usage, tuple) and len(usage) == 2 and reply is not None:
            pt, ct, src = usage[0], usage[1], "backend"
        else:
            pt = sum(count_tokens(m.content) for m in messages)
            ct, src = (count_tokens(reply) if reply is not None else None), "cl100k estimate"
        self.calls.append(LLMCall(purpose=purpose, latency_ms=round((time.perf_counter() - t0) * 1000, 2),
                                  prompt_tokens=pt, completion_tokens=ct, tokens_source=src, error=error))

    def complete(self, messages: list[Message], *, purpose: str, user_id: str | None = None,
                 max_tokens: int | None = None) -> str:
        t0 = time.perf_counter()
        try:
            text = self.inner.complete(messages, purpose=purpose, user_id=user_id, max_tokens=max_tokens)
        except LLMError as exc:
            self._record(purpose, messages, t0, None, str(exc))
            raise
        self._record(purpose, messages, t0, text, None)
        return text

    def complete_json(self, messages: list[Message], schema: type[T], *, purpose: str,
                      user_id: str | None = None, max_tokens: int | None = None) -> T:
        t0 = time.perf_counter()
        try:
            value = self.inner.complete_json(messages, schema, purpose=purpose, user_id=user_id, max_tokens=max_tokens)
        except LLMError as exc:
            self._record(purpose, messages, t0, None, str(exc))
            raise
        self._record(purpose, messages, t0, value.model_dump_json(), None)
        return value
