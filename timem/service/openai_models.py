"""Request and response bodies of the OpenAI-compatible routes (``POST /v1/chat/completions``, ``GET /v1/models``).

The request keeps every field the client sends (``extra="allow"``): an upstream endpoint gets them unchanged
(:mod:`timem.openai_chat`). Only what the service itself reads is typed and checked here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ChatMessageIn(BaseModel):
    """One message of the conversation, as in OpenAI's chat API (``tool_calls``, ``tool_call_id`` ... kept)."""

    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None


class ChatCompletionIn(BaseModel):
    """An OpenAI chat completion request. ``user`` (or the ``X-Timem-User`` header) names whose memory it is;
    the last message must be the user's (or, with an upstream endpoint, a tool result of the user's turn)."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1, max_length=256)
    messages: list[ChatMessageIn]
    stream: bool | None = None
    user: str | None = Field(default=None, max_length=256)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    n: int | None = Field(default=None, ge=1)
    stream_options: dict[str, Any] | None = None

    def as_sent(self) -> dict[str, Any]:
        """The request as the client sent it: its fields (extra ones too), without defaults it did not send."""
        return self.model_dump(mode="json", exclude_unset=True)


class ModelOut(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = "timem"


class ModelsOut(BaseModel):
    """``GET /v1/models`` with the embedded model (an upstream endpoint's list is returned as it is)."""

    object: Literal["list"] = "list"
    data: list[ModelOut]
