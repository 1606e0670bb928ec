"""The memory service: a FastAPI app over one :class:`~timem.engine.MemoryEngine` (HTTP API, ``/v1``).

One writer per DuckDB file: the app owns the engine (built by ``engine_factory`` at startup, closed at
shutdown) and runs every engine write under one lock (``Service.use``). Reads (user and memory lists, items,
export, a recall without an LLM) run without it, in parallel, each request thread on its own DuckDB cursor
(``Service.read``, :mod:`timem.store.threads`); a recall's own writes (its trace) are short transactions under
the store's writer lock.

Tenancy: every ``/v1`` route but ``/v1/health`` needs ``Authorization: Bearer <key>`` (or ``X-API-Key``)
with a key from the keys file (:mod:`timem.service.keys`); without a valid key the answer is 401 and the
engine is not touched. A tenant's user ``bob`` is stored as user id ``<tenant>/bob``; a tenant sees only
user ids with its own prefix, shown without it. Another tenant's user, or a memory node of another
tenant, answers 404 exactly like one that does not exist.

Errors: every :class:`~timem.errors.TimemError` maps to a status in :data:`STATUS` (the first match along
the exception's class hierarchy); request validation errors give 422 (malformed JSON, or a body that is not
UTF-8: 400; an id breaking its pattern is told what the id may hold, not the regex); every error body is
``{"error": "<one line>"}``.

The routes are FastAPI routers in modules of their own: :mod:`timem.service.routes_writes` (health, users, turns,
sessions, consolidation), :mod:`timem.service.routes_recall` (recall, answer), :mod:`timem.service.routes_memories`
(memories, items, forgetting, export, erasing), :mod:`timem.service.routes_tenant` (export and erase of every user
of the tenant), :mod:`timem.service.reads` (the studio's reads) and
:mod:`timem.service.openai_proxy` (``/v1/chat/completions``); this module builds the app around them.
"""

from __future__ import annotations

import difflib
import re
import typing
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio.to_thread
import duckdb
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from timem.config import Config
from timem.engine import MemoryEngine
from timem.errors import AuthError, ChatTurnError, NotFoundError, TimemError, first_bad_byte
from timem.service import routes_memories, routes_recall, routes_tenant, routes_writes
from timem.service.context import STATUS, Service, Tenant, _error, status_of
from timem.service.keys import NO_KEY, KeyFile, request_key
from timem.service.models import PATTERN_RULES, ErrorOut, id_error
from timem.service.openai_proxy import router as openai_router
from timem.service.reads import add_studio_routes
from timem.store import out_of_memory_error


def _unknown_field(request: Request, name: str) -> str:
    """The error for a body field ``name`` that the route's body model does not have: the closest field name, if
    one is close (``'mesage'`` -> ``message``), and the fields it takes."""
    body = getattr(request.scope.get("route"), "body_field", None)
    model = getattr(getattr(body, "field_info", None), "annotation", None)
    models = [model, *typing.get_args(model)]  # ``Model | None`` for an optional body
    fields = next((list(m.model_fields) for m in models if isinstance(m, type) and hasattr(m, "model_fields")), [])
    close = difflib.get_close_matches(name, fields, n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    takes = f" It takes: {', '.join(fields)}." if fields else ""
    return f"'{name}' is not a field of this request{hint}{takes} (docs/service.md, or /docs)"


def _open_engine(cfg: Config) -> Callable[[], MemoryEngine]:
    """A factory opening ``cfg.store.db_path`` with the configured LLM (none with ``llm_backend="none"``)."""
    def engine_factory() -> MemoryEngine:
        return MemoryEngine.open(cfg, with_llm=cfg.llm.llm_backend != "none")
    return engine_factory


def create_app(engine_factory: Callable[[], MemoryEngine] | Config, keys: KeyFile | str | Path) -> FastAPI:
    """The service app. ``engine_factory`` builds the engine at startup (it owns the DuckDB file until
    shutdown); a :class:`Config` instead opens ``config.store.db_path`` with :meth:`MemoryEngine.open` (with the
    configured LLM unless ``llm_backend="none"``). ``keys`` is the keys file (path or :class:`KeyFile`)."""
    keyfile = keys if isinstance(keys, KeyFile) else KeyFile(keys)
    factory = _open_engine(engine_factory) if isinstance(engine_factory, Config) else engine_factory

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.service = Service(factory())
        try:
            yield
        finally:
            app.state.service.close()

    app = FastAPI(title="TiMem memory service", version="1", lifespan=lifespan,
                  responses={k: {"model": ErrorOut} for k in (400, 401, 404, 409, 413, 422)})
    app.state.keys = keyfile
    _add_error_handlers(app)

    @app.middleware("http")
    async def _auth(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        path = request.url.path
        if path.startswith("/v1/") and path != "/v1/health":
            key = request_key(request.headers)
            tenant = await anyio.to_thread.run_sync(keyfile.tenant_of, key)  # scrypt: off the event loop
            if tenant is None:
                return _error(STATUS[AuthError], str(AuthError(NO_KEY)))
            request.state.tenant = Tenant(tenant)
            limit = 4 * request.app.state.service.max_text + 64 * 1024
            too_big = f"the request body is larger than {limit} bytes; send shorter texts"
            if int(request.headers.get("content-length") or 0) > limit:
                return _error(413, too_big)
            if "content-length" not in request.headers and request.method in ("POST", "PUT", "PATCH"):
                body = bytearray()  # chunked: read up to the limit, never the whole of an endless body
                async for chunk in request.stream():
                    body += chunk
                    if len(body) > limit:
                        return _error(413, too_big)
                request._body = bytes(body)  # Starlette's cached body: the route reads it again from here
        return await call_next(request)

    app.include_router(routes_writes.router)
    app.include_router(routes_recall.router)
    app.include_router(routes_memories.router)
    app.include_router(routes_tenant.router)
    add_studio_routes(app)
    app.include_router(openai_router)
    return app


def _header_text(value: str) -> str:
    """A header value as it was sent: HTTP reads header bytes as Latin-1, so UTF-8 text ("ключ") arrives garbled."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


def _add_error_handlers(app: FastAPI) -> None:
    """Every error body is ``{"error": "<one line>"}``: a :class:`TimemError` with its status (:data:`STATUS`; a
    chat turn's also names its ``stage``), request validation 422 (malformed JSON 400, an id's rule in words:
:func:`timem.service.models.id_error`), a body that is not UTF-8 400, DuckDB out of memory 503 (naming
    ``duckdb_memory_mb``), other HTTP errors as raised."""

    @app.exception_handler(TimemError)
    async def _timem_error(request: Request, exc: TimemError) -> JSONResponse:
        msg = str(exc)
        if isinstance(exc, NotFoundError):  # engine messages list every user of the store: not for tenants
            msg = re.sub(r";\s*(known )?users:.*$", "", msg)
        tenant = getattr(request.state, "tenant", None)
        if tenant is not None:  # ids inside the message (e.g. "record turn acme/mia:chat-2:0"): as the tenant sees them
            msg = msg.replace(tenant.prefix, "")
        if isinstance(exc, ChatTurnError):  # which part of a chat turn failed ("answer", "reply", "memories")
            return JSONResponse({"error": " ".join(msg.split()), "stage": exc.stage}, status_code=status_of(exc))
        return _error(status_of(exc), msg)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errs = exc.errors()
        first = errs[0] if errs else {"loc": (), "msg": "invalid request", "type": ""}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        if first.get("type") == "json_invalid":
            return _error(400, f"the body is not valid JSON ({first.get('msg')}); send a JSON object encoded as UTF-8")
        more = f" (and {len(errs) - 1} more problem(s))" if len(errs) > 1 else ""
        if tuple(first.get("loc", ())) == ("body",) and first.get("type") == "missing":  # "request: Field required"
            return _error(422, "the request has no body: send a JSON object with this endpoint's fields "
                               "(docs/service.md, or /docs)")
        if tuple(first.get("loc", ())) == ("body",) and "json" not in request.headers.get("content-type", ""):
            # curl -d '{...}' sends form-encoded: the body was never read as JSON
            return _error(422, "the body must be a JSON object sent with the header Content-Type: application/json "
                               f"(this request's is {request.headers.get('content-type') or 'missing'})")
        if first.get("type") == "string_pattern_mismatch" and isinstance(sent := first.get("input"), str):
            first = {**first, "input": _header_text(sent)}  # a header value, read by HTTP as Latin-1
        ctx = first.get("ctx")
        pattern = ctx.get("pattern") if isinstance(ctx, dict) else None
        if first.get("type") == "string_pattern_mismatch" and pattern in PATTERN_RULES:  # the rule, not the regex
            name = str(first.get("loc", ("",))[-1])
            what = "user id" if name == "user" else name
            return _error(422, f"{id_error(what, first.get('input', ''), pattern)}{more}")
        loc = tuple(first.get("loc", ()))
        if first.get("type") == "extra_forbidden" and len(loc) == 2 and loc[0] == "body":  # a typo: "mesage"
            return _error(422, f"{_unknown_field(request, str(loc[1]))}{more}")
        said = str(first.get("msg")).removeprefix("Value error, ")  # pydantic's prefix on a validator's message
        return _error(422, f"{where or 'request'}: {said}{more}")

    @app.exception_handler(duckdb.OutOfMemoryException)
    async def _out_of_memory(request: Request, exc: duckdb.OutOfMemoryException) -> JSONResponse:
        return _error(503, str(out_of_memory_error(exc)))  # a trial got a plain-text 500 with a tiny limit

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        cause = exc.__cause__
        if isinstance(cause, UnicodeDecodeError):  # FastAPI's own text: "There was an error parsing the body"
            return _error(400, f"the body is not UTF-8 ({first_bad_byte(cause)}); send the JSON body encoded as UTF-8")
        if exc.status_code == 404 and str(exc.detail) == "Not Found":  # no route: say why, not a bare "Not Found"
            path = request.url.path
            hint = (" A user or session id cannot hold '/' (an encoded %2F too): ids are letters, digits, '.', '_' "
                    "and '-'." if path.startswith("/v1/users/") else " The routes are listed at /docs.")
            return _error(404, f"no endpoint {request.method} {path}.{hint}")
        return _error(exc.status_code, str(exc.detail))
