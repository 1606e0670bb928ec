"""What every route of the memory service shares: the error-to-status map, the one-line error body, the
calling tenant's view of user ids, the service (engine + lock), idempotent write requests, and the
FastAPI dependencies and path types. See :mod:`timem.service.app` for the rules they implement.
"""

from __future__ import annotations

import hashlib
import json
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import Depends, Header, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse

from timem.datasets.base import check_text
from timem.engine import MemoryEngine
from timem.errors import (
    AuthError,
    BadRequestError,
    ChatTurnError,
    ConfigError,
    EmbeddingError,
    InputError,
    InvariantError,
    LLMError,
    NotFoundError,
    StoreError,
    TextTooLongError,
    TimemError,
    UnknownUserError,
    UpstreamError,
)
from timem.ids import ID_PATTERN
from timem.models import MemoryNode, WriteRequest
from timem.service.models import IDEMPOTENCY_KEY_PATTERN, ErrorOut, TurnsIn

#: HTTP status per error class; the most specific class listed along the exception's MRO wins
STATUS: dict[type[TimemError], int] = {
    AuthError: 401,
    NotFoundError: 404,
    TextTooLongError: 413,
    BadRequestError: 400,
    InputError: 422,
    ConfigError: 409,
    InvariantError: 409,
    ChatTurnError: 502,
    LLMError: 502,
    EmbeddingError: 503,
    StoreError: 500,
    TimemError: 500,
}

UserPath = Annotated[str, PathParam(pattern=ID_PATTERN, description="your user id")]
IdemHeader = Annotated[str | None, Header(alias="Idempotency-Key", pattern=IDEMPOTENCY_KEY_PATTERN,
                                         description="retry-safe write: the same key is stored once")]
NodePath = Annotated[str, PathParam(max_length=64, description="a memory node id, e.g. L1-0123456789abcdef")]


def status_of(exc: TimemError) -> int:
    """The HTTP status of a TiMem error (:data:`STATUS`); an :class:`UpstreamError` answers with the upstream
    endpoint's own status."""
    if isinstance(exc, UpstreamError):
        return exc.http_status
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(ErrorOut(error=_one_line(message)).model_dump(), status_code=status)


class Tenant:
    """The calling tenant and its view of the store's user ids (``<tenant>/<user>``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.prefix = f"{name}/"

    def internal(self, user: str) -> str:
        return self.prefix + user

    def users(self, eng: MemoryEngine) -> list[str]:
        return [u[len(self.prefix):] for u in eng.users() if u.startswith(self.prefix)]


#: stripes of the service's per-user write locks (:class:`UserLocks`): users are hashed onto them
LOCK_STRIPES = 64


class UserLocks:
    """The service's write locks: one lock per stripe of users (stored ids hashed with CRC-32 onto
    :data:`LOCK_STRIPES` locks; two users of one stripe wait for each other), and :attr:`every`, all of them
    taken in stripe order (so two callers of it never deadlock), for what is not about one user.

    A chat write and each step of the queue worker on a user's jobs hold that user's lock only: the worker's
    consolidation of one user (hundreds of milliseconds) no longer holds up every other user's writes, nor they
    it. Chat writes still go one at a time (:class:`Service`). Every other engine call of the service (edits,
    erases, tenant routes, an LLM's answer) holds :attr:`every`, as the service's one lock did. The store still
    runs one write transaction at a time (``Store.writer``)."""

    def __init__(self, stripes: int = LOCK_STRIPES) -> None:
        self._stripes = [threading.Lock() for _ in range(stripes)]
        self.every = _AllOf(self._stripes)

    def user(self, user_id: str) -> threading.Lock:
        """The lock of the stored user id ``user_id`` (``tenant/user``)."""
        return self._stripes[zlib.crc32(user_id.encode("utf-8")) % len(self._stripes)]


class _AllOf:
    """A reusable context manager holding every lock of a list, taken in list order and released in reverse."""

    def __init__(self, locks: list[threading.Lock]) -> None:
        self._locks = locks

    def __enter__(self) -> None:
        for lock in self._locks:
            lock.acquire()

    def __exit__(self, *exc: object) -> None:
        for lock in reversed(self._locks):
            lock.release()


class Service:
    """The engine, the write locks every engine write holds (reads go without them: :meth:`read`;
    :class:`UserLocks`), and the consolidation queue's worker (which holds its user's lock for each of its steps)
    when ``online_queue`` is on."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine
        engine.core.tenant_ids = True  # its users are stored as tenant/user (Tenant.internal)
        self.max_text = engine.config.service.service_max_text_chars
        self.locks = UserLocks()
        #: chat writes one at a time (admission): with every write running beside the worker and the recalls, they
        #: took the store's writer and the GIL from the recalls (recall p50 371 -> 1,517 ms under bench/service_load.py)
        self._one_write = threading.Lock()
        # the embedder loads on its first text (a CLI read needs none), the planner's centroids on the first
        # recall: load them now, not in the first request
        engine.warm_recall()
        if engine.config.consolidation.online_queue:  # writes answer before consolidation (timem.engine_queue)
            engine.start_queue_worker(self.locks.every, user_lock=self.locks.user)

    def close(self) -> None:
        """Stop the queue worker (after its current step), then close the engine."""
        self.engine.close()

    @contextmanager
    def use(self, user_id: str | None = None) -> Iterator[MemoryEngine]:
        """The engine under the write lock of the stored user id ``user_id`` (a chat write of that user only:
        nothing else of the engine is touched), else under every user's (every other write; :class:`UserLocks`)."""
        if user_id is None:
            with self.locks.every:
                yield self.engine
        else:
            with self._one_write, self.locks.user(user_id):
                yield self.engine

    @contextmanager
    def read(self) -> Iterator[MemoryEngine]:
        """The engine without the write lock, for reads (lists, gets, recall without an LLM): each request thread
        reads on its own DuckDB cursor (:mod:`timem.store.threads`); the few writes a recall makes (its trace, item
        touches, read-your-writes, a lazy segment-tree sync) are short store transactions under the store's
        writer lock. Never take :meth:`use` inside this block (a hard erase's compaction holds the write lock and
        waits for the readers)."""
        with self.engine.store.reading():
            yield self.engine

    def check_text(self, what: str, text: str | None) -> None:
        """422 for a request text longer than ``service_max_text_chars`` or holding a lone surrogate or a control
        character, naming the request's field ``what`` (not the stored turn's ``text``)."""
        if text is not None and len(text) > self.max_text:
            raise TextTooLongError(f"the {what} has {len(text)} characters, more than the limit of {self.max_text} "
                                   "(service_max_text_chars); split it or raise the limit", field=what)
        if text is not None:
            check_text(text, file=None, record=None, field=what)

    def require_user(self, eng: MemoryEngine, t: Tenant, user: str) -> str:
        """The stored id of the tenant's ``user``; 404 (:func:`no_user`) if the store has none of them (the engine's
        check: no listing of every user of the store)."""
        with tenant_user(t, user) as internal:
            eng.require_user(internal)
        return internal

    def require_node(self, eng: MemoryEngine, internal: str, user: str, node_id: str) -> MemoryNode:
        n = eng.node(node_id)
        if n is None or n.user_id != internal:
            raise NotFoundError(f"no memory {node_id!r} for user {user!r}; "
                                f"list them with GET /v1/users/{user}/memories")
        return n


def no_user(user: str) -> NotFoundError:
    """The 404 of a ``user`` the calling tenant has not stored yet (not the engine's message, which names the file
    and every user of the store)."""
    return NotFoundError(f"no user {user!r}; add turns first (POST /v1/users/{user}/turns)")


@contextmanager
def tenant_user(t: Tenant, user: str) -> Iterator[str]:
    """The stored id of the tenant's ``user`` for an engine call that checks the user itself (recall, ask): its
    :class:`UnknownUserError` for that user becomes :func:`no_user`; any other error passes unchanged."""
    internal = t.internal(user)
    try:
        yield internal
    except UnknownUserError as exc:
        if exc.user_id != internal:
            raise
        raise no_user(user) from exc


def write_request(user: str, body: TurnsIn, header: str | None) -> WriteRequest | None:
    """The idempotency key of a turns request (header or body field; 422 if both differ) with the SHA-256
    of its user and canonical body, or None without a key."""
    key = body.idempotency_key or header
    if body.idempotency_key and header and body.idempotency_key != header:
        raise InputError("the Idempotency-Key header and the idempotency_key field differ; send one of them",
                         field="idempotency_key")
    if key is None:
        return None
    canon = json.dumps({"user": user, **body.model_dump(mode="json", exclude={"idempotency_key"})}, sort_keys=True)
    return WriteRequest(key=key, fingerprint=hashlib.sha256(canon.encode()).hexdigest())


def _svc(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


def _tenant(request: Request) -> Tenant:
    tenant: Tenant = request.state.tenant
    return tenant


S = Annotated[Service, Depends(_svc)]
T = Annotated[Tenant, Depends(_tenant)]


def as_tenant_sees(v: Any, internal: str, user: str, key: str = "") -> Any:
    """``v`` (JSON data: an export, a recall trace) with every id, note and key written without the tenant
    prefix (``acme/mia`` -> ``mia``); what was said or written as memory (:data:`_SAID`) stays as it is."""
    if isinstance(v, str):
        return v if key in _SAID else v.replace(internal, user)
    if isinstance(v, list):
        return [as_tenant_sees(x, internal, user, key) for x in v]
    if isinstance(v, dict):
        return {as_tenant_sees(k, internal, user): as_tenant_sees(x, internal, user, k) for k, x in v.items()}
    return v


#: fields of an export that hold what was said or written as memory: never rewritten
_SAID = frozenset({"text", "content", "image_caption", "query", "question", "answer", "context", "message", "reply",
                   "value"})
