"""The LLM boundary.

A *backend* turns one :class:`ChatRequest` into one :class:`ChatResponse` (a single HTTP or
in-process call, no retries, no cache). :class:`timem.llm.client.LLM` wraps any backend with the
DuckDB response cache, the call log, JSON validation against a pydantic schema and bounded
retries; the rest of TiMem only talks to :class:`LLMClient`.
"""

from __future__ import annotations

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
