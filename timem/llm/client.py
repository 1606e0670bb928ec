"""The one LLM client TiMem uses: any backend + DuckDB response cache + call log + JSON validation."""

from __future__ import annotations

import hashlib
import json
import re
import time
from typing import NamedTuple, TypeVar

import json_repair
from pydantic import BaseModel, ValidationError

from timem.errors import LLMError, UnusableAnswerError
from timem.llm.protocol import ChatBackend, ChatRequest, ChatResponse, LLMClient, LocalModel, Message
from timem.store.ports import LLMCache

T = TypeVar("T", bound=BaseModel)

CORRECTION = ("Your previous answer was not valid: {error}. Reply again with only one JSON object that "
              "matches the JSON schema, with no prose and no code fence.")


def cache_key(model_id: str, request: ChatRequest) -> str:
    """SHA-256 (hex) of the canonical JSON of model id, messages, schema, temperature and max_tokens."""
    payload = {"model_id": model_id, **request.model_dump(mode="json")}
    canon = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def extract_json_object(text: str) -> str:
    """The first top-level ``{...}`` object in ``text`` (inside a ```json fence if there is one).

    Braces inside JSON strings are respected. Raises :class:`ValueError` if there is none.
    """
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1), text] if fenced else [text]
    for src in candidates:
        start = src.find("{")
        while start != -1:
            end = _matching_brace(src, start)
            if end is None:
                break
            chunk = src[start:end + 1]
            try:
                json.loads(chunk)
                return chunk
            except ValueError:
                start = src.find("{", start + 1)
    raise ValueError("no JSON object found in the answer")


def _matching_brace(s: str, start: int) -> int | None:
    depth, in_str, esc = 0, False, False
    for i in range(start, len(s)):
        c = s[i]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


def parse_json_answer(text: str, schema: type[T]) -> T:
    """Validate the JSON object found in ``text`` against ``schema``.

    An answer cut off by the token limit (``{"summary": "Ann went ... and``) is closed by the
    ``json-repair`` library and then validated like any other; callers that keep text clean the cut
    sentence away (:func:`timem.prompts.common.clean_summary`).

    Raises:
        ValueError: no JSON object in the text, or a :class:`pydantic.ValidationError` (a
            ``ValueError`` subclass) when it does not match, repaired or not.
    """
    try:
        return schema.model_validate_json(extract_json_object(text))
    except ValueError:
        start = text.find("{")
        if start < 0:
            raise
        repaired = json_repair.loads(text[start:])
        if not isinstance(repaired, dict) or not repaired:
            raise
        return schema.model_validate(repaired)


class _Answer(NamedTuple):
    text: str
    key: str
    cached: bool
    prompt_tokens: int | None
    completion_tokens: int | None


def _short(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors()[:5])
    return str(exc)


class LLM:
    """:class:`~timem.llm.protocol.LLMClient` over any :class:`ChatBackend`.

    Args:
        backend: performs single calls; must raise :class:`LLMError` (anything else is wrapped).
        store: DuckDB store for the response cache and the call log; ``None`` disables both.
        max_retries: extra attempts after an answer that is not valid JSON for the schema.
        max_tokens: default completion limit per call.

    Temperature is always 0. The cache key is :func:`cache_key`; a hit returns the stored text
    without calling the backend. Every attempt (hit or miss) is logged with ``store.log_llm_call``.
    """

    def __init__(self, backend: ChatBackend, store: LLMCache | None, max_retries: int = 2,
                 max_tokens: int = 1024) -> None:
        if max_retries < 0:
            raise LLMError(f"max_retries must be >= 0, got {max_retries}")
        self.backend = backend
        self.store = store
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.model_id: str = backend.model_id

    # ---------------------------------------------------------------- one attempt
    def _call(self, request: ChatRequest, purpose: str, user_id: str | None, *,
              use_cache: bool = True, cache_response: bool = True) -> _Answer:
        """One request through cache (unless ``use_cache`` is false) and backend; logged."""
        key = cache_key(self.model_id, request)
        t0 = time.perf_counter()
        if self.store is not None and use_cache:
            hit = self.store.cache_get(key)
            if hit is not None:
                text, pt, ct = hit
                self._log(purpose, user_id, True, pt, ct, t0, key)
                return _Answer(text, key, True, pt, ct)
        try:
            resp = self.backend.chat(request)
        except LLMError:
            raise
        except Exception as exc:
            raise LLMError(f"LLM backend {self.model_id} failed during {purpose!r}: "
                           f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(resp, ChatResponse):
            raise LLMError(f"LLM backend {self.model_id} returned {type(resp).__name__}, not a ChatResponse")
        self._log(purpose, user_id, False, resp.prompt_tokens, resp.completion_tokens, t0, key)
        answer = _Answer(resp.text, key, False, resp.prompt_tokens, resp.completion_tokens)
        if cache_response:
            self._put(request, answer)
        return answer

    def _put(self, request: ChatRequest, answer: _Answer) -> None:
        if self.store is not None:
            self.store.cache_put(answer.key, self.model_id, request.model_dump_json(), answer.text,
                                 answer.prompt_tokens, answer.completion_tokens)

    def _log(self, purpose: str, user_id: str | None, cached: bool, pt: int | None, ct: int | None,
             t0: float, key: str) -> None:
        if self.store is not None:
            self.store.log_llm_call(self.model_id, purpose, user_id, cached, pt, ct,
                                    (time.perf_counter() - t0) * 1000.0, key)

    # ---------------------------------------------------------------- public API
    def complete(self, messages: list[Message], *, purpose: str, user_id: str | None = None,
                 max_tokens: int | None = None) -> str:
        """Free-text answer at temperature 0 (cached).

        Raises:
            LLMError: the backend failed (unreachable, timeout, model error).
        """
        req = ChatRequest(messages=list(messages), temperature=0.0, max_tokens=max_tokens or self.max_tokens)
        return self._call(req, purpose, user_id).text

    def complete_json(self, messages: list[Message], schema: type[T], *, purpose: str,
                      user_id: str | None = None, max_tokens: int | None = None) -> T:
        """A validated ``schema`` instance; retries up to ``max_retries`` times on invalid answers.

        The JSON schema of ``schema`` is sent with the request (constrained decoding where the
        backend supports it). The answer may carry a ```json fence or surrounding prose. A retry
        appends the bad answer and a correction message, so it is a new request with its own
        cache key. Only answers that validate are cached; an invalid cached answer is ignored
        and the backend is asked again.

        Raises:
            LLMError: the backend failed, or no valid answer after ``1 + max_retries`` attempts
                (the message names purpose, model and the last validation error).
        """
        json_schema = schema.model_json_schema()
        convo = list(messages)
        tokens = max_tokens or self.max_tokens
        last_error = ""
        for _attempt in range(self.max_retries + 1):
            req = ChatRequest(messages=convo, json_schema=json_schema, temperature=0.0, max_tokens=tokens)
            answer = self._call(req, purpose, user_id, cache_response=False)
            if answer.cached:
                try:
                    return parse_json_answer(answer.text, schema)
                except ValueError:
                    # an invalid cache entry is never returned: ask the backend afresh
                    answer = self._call(req, purpose, user_id, use_cache=False, cache_response=False)
            try:
                value = parse_json_answer(answer.text, schema)
            except ValueError as exc:
                last_error = _short(exc)
                convo = [*convo, Message(role="assistant", content=answer.text),
                         Message(role="user", content=CORRECTION.format(error=last_error))]
                continue
            self._put(req, answer)  # only validated answers are cached (overwrites a bad entry)
            return value
        raise UnusableAnswerError(
            f"{purpose}: model {self.model_id} gave no valid {schema.__name__} JSON after "
            f"{self.max_retries + 1} attempts (last error: {last_error}). Use a larger model "
            "(TIMEM_LOCAL_MODEL=qwen2.5-coder-1.5b) or an OpenAI-compatible endpoint "
            "(TIMEM_LLM_BACKEND=openai), or raise TIMEM_LLM_MAX_RETRIES / TIMEM_LLM_MAX_TOKENS.")


def local_model(llm: object) -> LocalModel | None:
    """The in-process model behind ``llm``: its backend when ``llm`` is an :class:`LLM` over a
    :class:`~timem.llm.protocol.LocalModel` (the embedded llama.cpp model), else ``None`` (no LLM, an
    OpenAI-compatible endpoint, a scripted backend)."""
    backend = llm.backend if isinstance(llm, LLM) else None
    return backend if isinstance(backend, LocalModel) else None


def own_cache(llm: LLMClient, instance: str) -> LLMClient:
    """``llm``'s model on its own KV cache when its backend has instances (the embedded model:
    :meth:`timem.llm.local.LocalLlamaBackend.with_own_cache`), with the same response cache and call log; else
    ``llm`` itself (an HTTP backend keeps no prompt state between calls)."""
    split = getattr(llm.backend, "with_own_cache", None) if isinstance(llm, LLM) else None
    if split is None or not isinstance(llm, LLM):
        return llm
    return LLM(split(instance), llm.store, max_retries=llm.max_retries, max_tokens=llm.max_tokens)
