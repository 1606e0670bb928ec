"""The HTTP side of :class:`timem.service.client.ServiceClient`: one tenant's connection to a running memory service
(:class:`ServiceHttp`) and the service's error answers as :mod:`timem.errors` exceptions (:func:`error_for`).

A service error ``{"error": "..."}`` becomes the matching exception with the service's one-line message; a
connection failure or a timeout is :class:`~timem.errors.ServiceUnreachableError`.
"""

from __future__ import annotations

from typing import Any

import httpx

from timem.errors import (
    AuthError,
    ChatTurnError,
    ConfigError,
    ConsolidationIncomplete,
    EmbeddingError,
    InputError,
    LLMError,
    NotFoundError,
    ServiceUnreachableError,
    TextTooLongError,
    TimemError,
)
from timem.models import MemoryNode

#: how the studio starts the service this client talks to (said when it cannot be reached)
START_HINT = "start it with `timem serve --db FILE --port PORT` (keys: `timem keys add TENANT --db FILE`)"


class RemoteConsolidationIncomplete(ConsolidationIncomplete):
    """The service stored a write but could not consolidate some window (its answer's ``warning``): the window
    stays due on the service. ``written`` holds the memories that were written; ``failures`` is empty (the service
    names the windows in the message)."""

    def __init__(self, message: str, written: list[MemoryNode]) -> None:
        LLMError.__init__(self, message)
        self.failures, self.written, self.report = [], list(written), None


def error_for(status: int, body: Any, url: str) -> TimemError:
    """The :mod:`timem.errors` exception for a service error answer (``status`` >= 400, JSON ``body``).

    401 -> :class:`AuthError` (check the key), 404 -> :class:`NotFoundError`, 413 -> :class:`TextTooLongError`,
    400 / 422 -> :class:`InputError`, 409 -> :class:`ConfigError`, 502 -> :class:`ChatTurnError` (a chat turn,
    with its ``stage``) or :class:`LLMError`, 503 -> :class:`EmbeddingError`, else :class:`TimemError`.
    """
    msg = body.get("error") if isinstance(body, dict) else None
    msg = " ".join(str(msg or body or f"HTTP {status}").split())
    if status == 401:
        return AuthError(f"the service at {url} refused the API key ({msg}); check the key given with --key or "
                         "TIMEM_SERVICE_KEY (`timem keys list --db FILE` on the service's machine)")
    if status == 404:
        return NotFoundError(msg)
    if status == 413:
        return TextTooLongError(msg)
    if status in (400, 422):
        return InputError(msg)
    if status == 409:
        return ConfigError(msg)
    if status == 502:
        stage = body.get("stage") if isinstance(body, dict) else None
        return ChatTurnError(stage, msg) if stage else LLMError(msg)
    if status == 503:
        return EmbeddingError(msg)
    return TimemError(f"the service at {url} failed (HTTP {status}): {msg}")


class ServiceHttp:
    """One tenant's HTTP connection to the service at ``url`` (its API ``key`` sent as ``Authorization: Bearer``,
    never shown); ``timeout`` seconds per request."""

    def __init__(self, url: str, key: str, *, timeout: float, transport: httpx.BaseTransport | None = None) -> None:
        self.url = url
        self._http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=timeout,
                                  transport=transport)

    def close(self) -> None:
        """Close the HTTP connections."""
        self._http.close()

    def call(self, method: str, path: str, **kw: Any) -> Any:
        """The JSON body (or text) of ``method path``.

        Raises:
            ServiceUnreachableError: no answer (a timeout: a write may or may not be stored). The exception of
                :func:`error_for`: an error answer.
        """
        try:
            r = self._http.request(method, path, **kw)
        except httpx.TimeoutException as exc:
            raise ServiceUnreachableError(
                f"the memory service at {self.url} did not answer in time ({type(exc).__name__}); a write may or may "
                "not have been stored: look before sending it again, or check that the service is running") from exc
        except httpx.TransportError as exc:
            raise ServiceUnreachableError(f"the memory service is not reachable at {self.url} ({exc}); {START_HINT}, "
                                          "or fix --service / TIMEM_SERVICE_URL") from exc
        try:
            body = r.json()
        except ValueError:
            body = r.text
        if r.status_code >= 400:
            raise error_for(r.status_code, body, self.url)
        return body

    def rows(self, path: str, field: str, **params: Any) -> list[Any]:
        """``GET path`` -> ``body[field]``; ``[]`` when the user is unknown (404), as the engine's reads."""
        try:
            return list(self.call("GET", path, params={k: v for k, v in params.items() if v is not None})[field])
        except NotFoundError:
            return []
