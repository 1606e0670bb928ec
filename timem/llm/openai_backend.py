"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, llama.cpp server, Ollama, LM Studio ...)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal
from urllib.parse import urlparse

import openai

from timem.errors import LLMError, UpstreamError
from timem.llm.protocol import ChatRequest, ChatResponse

DEFAULT_BASE_URL = "https://api.openai.com/v1"

JSON_INSTRUCTION = ("Reply with a single JSON object, and nothing else, that conforms to this JSON schema:\n"
                    "{schema}")


def endpoint_label(model: str, base_url: str | None) -> str:
    """Readable model id: ``"<model> @ <host[:port]>"``, e.g. ``"gpt-4o-mini @ api.openai.com"``."""
    url = base_url or DEFAULT_BASE_URL
    host = urlparse(url).netloc or url
    return f"{model} @ {host}"


class OpenAIBackend:
    """A :class:`~timem.llm.protocol.ChatBackend` for an OpenAI-compatible ``/chat/completions``.

    Args:
        base_url: e.g. ``http://localhost:8000/v1``; ``None`` means OpenAI itself.
        api_key: the bearer key; local servers usually need none (``"not-needed"`` is sent).
        model: the model name the server knows.
        timeout_s: per-request timeout in seconds (the openai client retries once on transient errors).
        json_mode: ``"json_schema"`` sends ``response_format`` type ``json_schema`` (non-strict);
            ``"json_object"`` sends type ``json_object`` and puts the schema in the system message
            (for servers without structured outputs).

    ``model_id`` is :func:`endpoint_label` of model and base URL. ``max_tokens`` (not
    ``max_completion_tokens``) is sent because local servers understand it.
    """

    def __init__(self, base_url: str | None, api_key: str | None, model: str, timeout_s: float = 120.0,
                 json_mode: Literal["json_schema", "json_object"] = "json_schema") -> None:
        if json_mode not in ("json_schema", "json_object"):
            raise LLMError(f"unknown json_mode {json_mode!r}; use 'json_schema' or 'json_object'")
        self.base_url = base_url or DEFAULT_BASE_URL
        self.model = model
        self.json_mode = json_mode
        self.model_id = endpoint_label(model, base_url)
        self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key or "not-needed",
                                     timeout=timeout_s, max_retries=1)
        self._timeout_s = timeout_s

    def _payload(self, request: ChatRequest) -> dict[str, Any]:
        messages = [m.model_dump() for m in request.messages]
        kwargs: dict[str, Any] = {"model": self.model, "temperature": request.temperature,
                                  "max_tokens": request.max_tokens}
        if request.json_schema is not None:
            if self.json_mode == "json_schema":
                kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": "response", "schema": request.json_schema, "strict": False}}
            else:
                kwargs["response_format"] = {"type": "json_object"}
                note = JSON_INSTRUCTION.format(schema=json.dumps(request.json_schema, ensure_ascii=False))
                if messages and messages[0]["role"] == "system":
                    messages[0] = {"role": "system", "content": messages[0]["content"] + "\n\n" + note}
                else:
                    messages.insert(0, {"role": "system", "content": note})
        kwargs["messages"] = messages
        return kwargs

    def chat(self, request: ChatRequest) -> ChatResponse:
        """One ``POST /chat/completions``.

        Raises:
            LLMError: unreachable endpoint, timeout, HTTP error status (401/403/404/429/400/5xx
                each with a hint what to check), or an answer without message content.
        """
        try:
            resp = self._client.chat.completions.create(**self._payload(request))
        except openai.OpenAIError as exc:
            raise self._map_error(exc) from exc
        try:
            choice = resp.choices[0]
        except (IndexError, TypeError, AttributeError) as exc:
            raise LLMError(f"{self.model_id} returned no choices; is {self.base_url} an OpenAI-compatible "
                           "chat completions endpoint?") from exc
        text = getattr(choice.message, "content", None)
        if text is None:
            refusal = getattr(choice.message, "refusal", None)
            raise LLMError(f"{self.model_id} returned no text (finish_reason={choice.finish_reason!r}"
                           f"{', refusal: ' + refusal if refusal else ''}).")
        usage = resp.usage
        return ChatResponse(text=text, prompt_tokens=getattr(usage, "prompt_tokens", None),
                            completion_tokens=getattr(usage, "completion_tokens", None))

    # ------------------------------------------------------------ OpenAI-shaped passthrough (POST /v1/chat/completions)
    def forward(self, body: dict[str, Any]) -> dict[str, Any]:
        """Send a chat completion request body as it is (model, tools, response_format, ... unchanged) and return
        the endpoint's JSON answer as it is.

        Raises:
            UpstreamError: the endpoint answered with an error status (``http_status`` is that status).
            LLMError: unreachable endpoint or timeout, or an answer that is not a JSON object.
        """
        try:
            out = self._client.post("/chat/completions", body=body, cast_to=object)
        except openai.OpenAIError as exc:
            raise self._upstream_error(exc) from exc
        if not isinstance(out, dict):
            raise LLMError(f"{self.model_id} answered {type(out).__name__}, not a JSON object; is {self.base_url} an "
                           "OpenAI-compatible chat completions endpoint?")
        return out

    def forward_stream(self, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Send a streaming chat completion request body as it is and return its chunks (JSON objects, as sent,
        up to ``[DONE]``). The request is made before this returns, so that an error status is raised here;
        closing the iterator closes the connection.

        Raises:
            UpstreamError, LLMError: as :meth:`forward` (also while iterating: a cut stream or an error event).
        """
        try:
            stream = self._client.post("/chat/completions", body=body, cast_to=object,
                                       stream=True, stream_cls=openai.Stream[object])
        except openai.OpenAIError as exc:
            raise self._upstream_error(exc) from exc
        return self._chunks(stream)

    def _chunks(self, stream: openai.Stream[object]) -> Iterator[dict[str, Any]]:
        try:
            for chunk in stream:
                if isinstance(chunk, dict):
                    yield chunk
        except openai.OpenAIError as exc:
            raise self._upstream_error(exc) from exc
        finally:
            stream.close()

    def models(self) -> dict[str, Any]:
        """The endpoint's ``GET /models`` answer as it is.

        Raises:
            UpstreamError, LLMError: as :meth:`forward`.
        """
        try:
            out = self._client.get("/models", cast_to=object)
        except openai.OpenAIError as exc:
            raise self._upstream_error(exc) from exc
        if not isinstance(out, dict):
            raise LLMError(f"{self.model_id} answered GET /models with {type(out).__name__}, not a JSON object")
        return out

    def _upstream_error(self, exc: openai.OpenAIError) -> LLMError:
        """An :class:`UpstreamError` with the endpoint's status when it answered one (its message, one line, and
        what to check), else :meth:`_map_error`."""
        status = getattr(exc, "status_code", None)
        if not (isinstance(exc, openai.APIStatusError) and isinstance(status, int) and 400 <= status <= 599):
            return self._map_error(exc)
        hint = _UPSTREAM_HINTS.get(status, "check the request, or the upstream server's logs")
        return UpstreamError(f"the upstream endpoint {self.base_url} answered HTTP {status}: {_detail(exc)}; {hint}",
                             status)

    def _map_error(self, exc: openai.OpenAIError) -> LLMError:
        where = f"{self.model_id} ({self.base_url})"
        if isinstance(exc, openai.APITimeoutError):
            return LLMError(f"{where} timed out after {self._timeout_s:g} s. Check the server is up and not "
                            "overloaded, or raise TIMEM_OPENAI_TIMEOUT_S.")
        if isinstance(exc, openai.APIConnectionError):
            return LLMError(f"cannot reach {self.base_url} ({exc}). Check TIMEM_OPENAI_BASE_URL (it usually "
                            "ends with /v1) and that the server is running.")
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            return LLMError(f"{where} rejected the API key (HTTP {exc.status_code}). Check TIMEM_OPENAI_API_KEY "
                            "(or OPENAI_API_KEY).")
        if isinstance(exc, openai.NotFoundError):
            return LLMError(f"{where} answered 404: {_detail(exc)}. Check TIMEM_OPENAI_MODEL "
                            f"({self.model!r}) and that TIMEM_OPENAI_BASE_URL ends with /v1.")
        if isinstance(exc, openai.RateLimitError):
            return LLMError(f"{where} is rate limiting or out of quota (HTTP 429): {_detail(exc)}. "
                            "Wait and retry, or check your plan.")
        if isinstance(exc, openai.BadRequestError | openai.UnprocessableEntityError):
            hint = (" If the server does not support structured outputs, set TIMEM_OPENAI_JSON_MODE=json_object."
                    if self.json_mode == "json_schema" else "")
            return LLMError(f"{where} rejected the request (HTTP {exc.status_code}): {_detail(exc)}.{hint}")
        if isinstance(exc, openai.APIStatusError):
            return LLMError(f"{where} failed with HTTP {exc.status_code}: {_detail(exc)}. "
                            "Check the server logs and retry.")
        return LLMError(f"{where} call failed: {type(exc).__name__}: {exc}")


_UPSTREAM_HINTS = {
    401: "the service's upstream key (TIMEM_OPENAI_API_KEY) was refused: the operator must fix it",
    403: "the service's upstream key (TIMEM_OPENAI_API_KEY) was refused: the operator must fix it",
    404: "check the model name and that TIMEM_OPENAI_BASE_URL ends with /v1",
    429: "the upstream endpoint is rate limiting or out of quota: wait and retry",
}


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
    return str(exc)[:300]
