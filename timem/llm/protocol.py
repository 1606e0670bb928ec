"""The LLM boundary.

A *backend* turns one :class:`ChatRequest` into one :class:`ChatResponse` (a single HTTP or
in-process call, no retries, no cache). :class:`timem.llm.client.LLM` wraps any backend with the
DuckDB response cache, the call log, JSON validation against a pydantic schema and bounded
retries; the rest of TiMem only talks to :class:`LLMClient`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict

T = TypeVar("T", bound=BaseModel)


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)
    role: Literal["system", "user", "assistant"]
    content: str


class ChatRequest(BaseModel):
    """One chat completion request. ``json_schema`` asks for schema-constrained JSON output."""

    model_config = ConfigDict(frozen=True)
    messages: list[Message]
    json_schema: dict[str, Any] | None = None
    temperature: float = 0.0
    max_tokens: int = 1024


class ChatResponse(BaseModel):
    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@runtime_checkable
class ChatBackend(Protocol):
    """One call to a model. Raises :class:`timem.errors.LLMError` on any failure."""

    model_id: str

    def chat(self, request: ChatRequest) -> ChatResponse: ...


@runtime_checkable
class LocalModel(Protocol):
    """A capability of a :class:`ChatBackend`: the model runs in this process (the embedded llama.cpp model,
    :class:`timem.llm.local.LocalLlamaBackend`) from a file, and keeps one prompt in a cache that can be warmed.

    The facade checks it with ``isinstance(backend, LocalModel)`` (the short chat context budget, the studio's
    prompt warming and its model lock); an OpenAI-compatible endpoint has neither member.
    """

    model_path: str  #: the GGUF file the model is loaded from

    def warm(self, messages: Sequence[Message]) -> int:
        """Evaluate ``messages`` into the prompt cache; returns their prompt tokens. Raises :class:`LLMError`."""
        ...


@runtime_checkable
class LLMClient(Protocol):
    """What TiMem's consolidation, planner, gate and answerer use."""

    model_id: str

    def complete(self, messages: list[Message], *, purpose: str, user_id: str | None = None,
                 max_tokens: int | None = None) -> str:
        """Free text at temperature 0."""
        ...

    def complete_json(self, messages: list[Message], schema: type[T], *, purpose: str,
                      user_id: str | None = None, max_tokens: int | None = None) -> T:
        """A validated instance of ``schema`` (schema-constrained decoding where the backend has it)."""
        ...
