"""A scripted :class:`~timem.llm.protocol.ChatBackend` for logic tests (no model, no network)."""

from __future__ import annotations

from collections.abc import Callable

from timem.errors import LLMError
from timem.llm.protocol import ChatRequest, ChatResponse


class ScriptedBackend:
    """Answers from a script and records every request in :attr:`calls`.

    Args:
        responses: either a list of answer texts, consumed in order, or a function from the
            :class:`ChatRequest` to the answer text.
        model_id: the id reported to the client (part of the cache key).

    Raises (from :meth:`chat`):
        LLMError: the list is exhausted (the test asked for more calls than it scripted).
    """

    def __init__(self, responses: list[str] | Callable[[ChatRequest], str], model_id: str = "scripted") -> None:
        self.model_id = model_id
        self._responses = responses if callable(responses) else list(responses)
        self._next = 0
        self.calls: list[ChatRequest] = []

    def chat(self, request: ChatRequest) -> ChatResponse:
        """Record ``request`` and return the next scripted answer (token counts: word counts)."""
        self.calls.append(request)
        if callable(self._responses):
            text = self._responses(request)
        else:
            if self._next >= len(self._responses):
                raise LLMError(f"ScriptedBackend ran out of responses after {len(self._responses)} call(s); "
                               "script more answers for this test.")
            text = self._responses[self._next]
            self._next += 1
        prompt_tokens = sum(len(m.content.split()) for m in request.messages)
        return ChatResponse(text=text, prompt_tokens=prompt_tokens, completion_tokens=len(text.split()))
