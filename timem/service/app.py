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
the exception's class hierarchy); request validation errors give 422 (malformed JSON 400); every error
body is ``{"error": "<one line>"}``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Literal

import anyio.to_thread
from fastapi import FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from timem.config import Config
from timem.engine import MemoryEngine
from timem.errors import (
    AuthError,
    ChatTurnError,
    ConfigError,
    ConsolidationIncomplete,
    InputError,
    NotFoundError,
    TimemError,
)
from timem.memory.forget import forget_request
from timem.models import NodeStatus
from timem.service.context import (
    STATUS,
    IdemHeader,
    NodePath,
    S,
    Service,
    T,
    Tenant,
    UserPath,
    _error,
    as_tenant_sees,
    status_of,
    write_request,
)
from timem.service.keys import KeyFile
from timem.service.models import (
    ID_PATTERN,
    AnswerOut,
    ConsolidateIn,
    EditIn,
    ErasedOut,
    ErrorOut,
    ForgetIn,
    ForgetOut,
    ItemOut,
    ItemsOut,
    MemoriesOut,
    MemoryOut,
    RecallIn,
    RecallOut,
    TurnsIn,
    UsersOut,
    WrittenOut,
)
from timem.service.openai_proxy import router as openai_router
from timem.service.reads import add_studio_routes


def create_app(engine_factory: Callable[[], MemoryEngine] | Config, keys: KeyFile | str | Path) -> FastAPI:
    """The service app. ``engine_factory`` builds the engine at startup (it owns the DuckDB file until
    shutdown); a :class:`Config` instead opens ``config.store.db_path`` with :meth:`MemoryEngine.open` (with the
    configured LLM unless ``llm_backend="none"``). ``keys`` is the keys file (path or :class:`KeyFile`)."""
    keyfile = keys if isinstance(keys, KeyFile) else KeyFile(keys)
    if isinstance(engine_factory, Config):
        cfg = engine_factory

        def engine_factory() -> MemoryEngine:
            return MemoryEngine.open(cfg, with_llm=cfg.llm.llm_backend != "none")

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.service = Service(engine_factory())
        try:
            yield
        finally:
            app.state.service.close()

    app = FastAPI(title="TiMem memory service", version="1", lifespan=lifespan,
                  responses={k: {"model": ErrorOut} for k in (400, 401, 404, 409, 413, 422)})
    app.state.keys = keyfile

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
            return _error(400, f"the body is not valid JSON ({first.get('msg')}); send a JSON object")
        more = f" (and {len(errs) - 1} more problem(s))" if len(errs) > 1 else ""
        return _error(422, f"{where or 'request'}: {first.get('msg')}{more}")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))

    @app.middleware("http")
    async def _auth(request: Request, call_next):
        path = request.url.path
        if path.startswith("/v1/") and path != "/v1/health":
            header = request.headers.get("authorization", "")
            key = header[7:].strip() if header.lower().startswith("bearer ") else request.headers.get("x-api-key")
            tenant = await anyio.to_thread.run_sync(keyfile.tenant_of, key)  # scrypt: off the event loop
            if tenant is None:
                return _error(STATUS[AuthError], str(AuthError(
                    "missing or invalid API key; send 'Authorization: Bearer <key>' "
                    "with a key from `timem keys add TENANT`")))
            request.state.tenant = Tenant(tenant)
            limit = 4 * request.app.state.service.max_text + 64 * 1024
            if int(request.headers.get("content-length") or 0) > limit:
                return _error(413, f"the request body is larger than {limit} bytes; send shorter texts")
        return await call_next(request)

    @app.get("/v1/health")
    def health() -> dict[str, str]:
        """Liveness: ``{"status": "ok"}`` (no key needed, no data)."""
        return {"status": "ok"}

    @app.get("/v1/users")
    def list_users(s: S, t: T) -> UsersOut:
        """Your users (ids without the tenant prefix), sorted."""
        with s.read() as eng:
            return UsersOut(users=t.users(eng))

    @app.post("/v1/users/{user}/turns")
    def add_turns(user: UserPath, body: TurnsIn, s: S, t: T, idempotency_key: IdemHeader = None) -> WrittenOut:
        """Store a user message, an assistant reply, or an exchange (both) at ``event_time``; a new user id
        is created by its first turn. Writes the L1 segment and consolidates closed windows (unless
        ``consolidate`` is false); with ``online_queue`` (the default) that is queued and done by the service's
        worker: the answer comes once the turns are stored (``queued``, ``written`` empty), a recall sees them.
        With an idempotency key (``Idempotency-Key`` header or ``idempotency_key`` field), a retry of a stored
        write is answered with its turn ids (``replayed``) and stores nothing more (it consolidates what is due,
        in case the first attempt was cut short after its turns were stored); the same key with another body is
        422."""
        if body.message is None and body.reply is None:
            raise InputError("send a message, a reply, or both", field="message")
        s.check_text("message", body.message)
        s.check_text("reply", body.reply)
        request = write_request(user, body, idempotency_key)
        internal, warning = t.internal(user), None
        with s.use() as eng:
            done = eng.write_request(internal, request.key) if request else None
            if done is not None:
                if done[0] != request.fingerprint:
                    raise InputError(f"idempotency key {request.key!r} was used for another write of user {user!r}; "
                                     "send a new key for a new write", field="idempotency_key")
                # the first attempt's turns are stored; finish its consolidation if a crash cut it short
                finish = body.consolidate
                out = _written(user, internal, lambda: eng.consolidate(internal) if finish else [])
                return out.model_copy(update={"turn_ids": [x.replace(internal, user) for x in done[1]],
                                              "replayed": True})
            before = {x.id for x in eng.turns(internal, body.session_id)}
            try:
                if body.message is not None and body.reply is not None:
                    written = eng.add_exchange(internal, body.session_id, body.message, body.reply, body.event_time,
                                               user_name=body.user_name, assistant_name=body.assistant_name,
                                               consolidate=body.consolidate, request=request)
                elif body.message is not None:  # its L1 segment at once (l1_unit "turn"; "exchange" waits for a reply)
                    written = eng.remember(internal, body.session_id, body.message, body.event_time,
                                           user_name=body.user_name, consolidate=body.consolidate, request=request)
                else:
                    written = eng.add_reply(internal, body.session_id, body.reply, body.event_time,
                                            assistant_name=body.assistant_name, consolidate=body.consolidate,
                                            request=request)
            except ConsolidationIncomplete as exc:  # the turns are stored (acknowledged); a window stays due
                written, warning = list(exc.written), str(exc)
            turns = sorted((x for x in eng.turns(internal, body.session_id) if x.id not in before), key=lambda x: x.seq)
            queued = body.consolidate and eng.queues_writes
        return WrittenOut(user=user, turn_ids=[x.id.replace(internal, user) for x in turns],
                          written=[MemoryOut.of(n, internal, user) for n in written], warning=warning, queued=queued)

    def _written(user: str, internal: str, run: Callable[[], list]) -> WrittenOut:
        try:
            nodes, warning = run(), None
        except ConsolidationIncomplete as exc:
            nodes, warning = list(exc.written), str(exc)
        return WrittenOut(user=user, written=[MemoryOut.of(n, internal, user) for n in nodes], warning=warning)

    @app.post("/v1/users/{user}/sessions/{session_id}/end")
    def end_session(user: UserPath, session_id: Annotated[str, PathParam(pattern=ID_PATTERN)], s: S,
                    t: T) -> WrittenOut:
        """Mark a session ended and consolidate what that closes (its L2 session memory at least)."""
        with s.use() as eng:
            internal = s.require_user(eng, t, user)
            if session_id not in {x.session_id for x in eng.sessions(internal)}:
                raise NotFoundError(f"user {user!r} has no session {session_id!r}")
            return _written(user, internal, lambda: eng.end_session(internal, session_id))

    @app.post("/v1/users/{user}/consolidate")
    def consolidate(user: UserPath, s: S, t: T, body: ConsolidateIn | None = None) -> WrittenOut:
        """Consolidate the user's due windows (every open one with ``flush``); no body means ``flush: false``."""
        flush = body.flush if body is not None else False
        with s.use() as eng:
            internal = s.require_user(eng, t, user)
            return _written(user, internal, lambda: eng.consolidate(internal, flush=flush))

    def _recall_out(cls, user: str, internal: str, res, **extra):
        trace = as_tenant_sees(res.trace.model_dump(mode="json"), internal, user)
        return cls(user=user, context=res.context, node_ids=[n.id for n in res.nodes], mem_len=res.trace.context_tokens,
                   trace=trace, **extra)

    @app.post("/v1/users/{user}/recall")
    def recall(user: UserPath, body: RecallIn, s: S, t: T) -> RecallOut:
        """Recall the user's memories for ``query`` as of ``question_time``: the context and the recall trace."""
        s.check_text("query", body.query)
        with s.read() if not s.engine.has_llm else s.use() as eng:  # an LLM planner / gate writes its cache
            internal = s.require_user(eng, t, user)
            qt = body.question_time or eng.default_question_time(internal)
            cfg = eng.config.with_overrides(**body.overrides()) if body.overrides() else None
            res = eng.recall(internal, body.query, qt, complexity=body.complexity, gate=body.gate, planner=body.planner,
                             persist=body.persist, config=cfg)
        return _recall_out(RecallOut, user, internal, res)

    @app.post("/v1/users/{user}/answer")
    def answer(user: UserPath, body: RecallIn, s: S, t: T) -> AnswerOut:
        """Recall, then answer from the context with the service's LLM (409 if it has none)."""
        s.check_text("query", body.query)
        with s.use() as eng:
            internal = s.require_user(eng, t, user)
            if not eng.has_llm:
                raise ConfigError("this service has no LLM to answer with; start it with `timem serve --llm local` "
                                  "(or openai), or POST /v1/users/{user}/recall for the context alone")
            qt = body.question_time or eng.default_question_time(internal)
            cfg = eng.config.with_overrides(**body.overrides()) if body.overrides() else None
            out = eng.ask(internal, body.query, qt, complexity=body.complexity, gate=body.gate, planner=body.planner,
                          persist=body.persist, config=cfg)
        return _recall_out(AnswerOut, user, internal, out.recall, answer=out.answer)

    @app.get("/v1/users/{user}/memories")
    def list_memories(user: UserPath, s: S, t: T, level: Annotated[int | None, Query(ge=1, le=5)] = None,
                      status: Literal["active", "deleted", "superseded", "all"] = "active",
                      ids: Annotated[list[str] | None, Query()] = None) -> MemoriesOut:
        """The user's memories in conversation order (active ones unless ``status`` says otherwise; only the
        ``ids`` given, repeated ``?ids=L1-…&ids=L2-…``, if any)."""
        s.engine.settle(t.internal(user))  # its queued writes' memories (bounded wait, outside the lock)
        with s.read() as eng:
            internal = s.require_user(eng, t, user)
            nodes = eng.nodes(internal, level, status=None if status == "all" else NodeStatus(status), ids=ids)
        return MemoriesOut(user=user, memories=[MemoryOut.of(n, internal, user) for n in nodes])

    @app.patch("/v1/users/{user}/memories/{node_id}")
    def edit_memory(user: UserPath, node_id: NodePath, body: EditIn, s: S, t: T) -> MemoryOut:
        """New content for a memory; its ancestors are re-consolidated."""
        s.check_text("content", body.content)
        with s.use() as eng:
            internal = s.require_user(eng, t, user)
            node = s.require_node(eng, internal, user, node_id)
            if node.status != NodeStatus.ACTIVE:
                raise InputError(f"memory {node_id} is {node.status.value}; only active memories can be edited",
                                 field="status")
            return MemoryOut.of(eng.edit_memory(node_id, body.content, actor=f"api:{t.name}"), internal, user)

    @app.delete("/v1/users/{user}/memories/{node_id}")
    def delete_memory(user: UserPath, node_id: NodePath, s: S, t: T, hard: bool = False) -> dict:
        """Soft-delete a memory (undo with ``POST .../restore``), or with ``hard=true`` erase it for good
        (its source turns too; the file is rewritten)."""
        with s.use() as eng:
            internal = s.require_user(eng, t, user)
            node = s.require_node(eng, internal, user, node_id)
            if not hard and node.status != NodeStatus.ACTIVE:
                raise InputError(f"memory {node_id} is {node.status.value}, not active; nothing to delete",
                                 field="status")
            eng.delete_memories([node_id], hard=hard, actor=f"api:{t.name}")
            if hard:
                return {"erased": node_id}
            return MemoryOut.of(eng.node(node_id), internal, user).model_dump(mode="json")

    @app.post("/v1/users/{user}/memories/{node_id}/restore")
    def restore_memory(user: UserPath, node_id: NodePath, s: S, t: T) -> MemoryOut:
        """Undo a soft delete."""
        with s.use() as eng:
            internal = s.require_user(eng, t, user)
            s.require_node(eng, internal, user, node_id)
            eng.restore_memory(node_id, actor=f"api:{t.name}")
            return MemoryOut.of(eng.node(node_id), internal, user)

    @app.get("/v1/users/{user}/items")
    def list_items(user: UserPath, s: S, t: T,
                   status: Literal["active", "deleted", "all"] = "active") -> ItemsOut:
        """The user's memory items (facts, preferences, events, plans), oldest first; superseded items are
        active with ``valid_to`` set (history), forgotten ones ``deleted``."""
        s.engine.settle(t.internal(user))  # its queued writes' memories (bounded wait, outside the lock)
        with s.read() as eng:
            internal = s.require_user(eng, t, user)
            items = eng.memory_items(internal, status=None if status == "all" else status)
        return ItemsOut(user=user, items=[ItemOut.of(i) for i in items])

    @app.delete("/v1/users/{user}/items/{item_id}")
    def delete_item(user: UserPath, item_id: Annotated[str, PathParam(pattern=r"^item-[0-9a-f]{16}$")], s: S,
                    t: T) -> ItemOut:
        """Forget one memory item alone (soft delete; its source segments stay)."""
        with s.use() as eng:
            internal = s.require_user(eng, t, user)
            if item_id not in {i.id for i in eng.memory_items(internal, status=None)}:
                raise NotFoundError(f"no memory item {item_id!r} for user {user!r}; "
                                    f"list them with GET /v1/users/{user}/items")
            eng.forget_items([item_id], actor=f"api:{t.name}")
            return ItemOut.of(eng.memory_item(item_id))

    @app.post("/v1/users/{user}/forget")
    def forget(user: UserPath, body: ForgetIn, s: S, t: T) -> ForgetOut:
        """Explicit forgetting: the items and L1 segments that match ``text``; with ``confirm`` they are
        soft-deleted (segments undoable with ``POST .../memories/{id}/restore``), else only listed."""
        s.check_text("text", body.text)
        if bool(body.text.strip()) == bool(body.item_ids):
            raise InputError("give either text (what to forget) or item_ids, not both", field="text")
        what = forget_request(body.text) or body.text
        with s.use() as eng:
            internal = s.require_user(eng, t, user)
            plan = eng.forget(internal, what, item_ids=body.item_ids, confirm=body.confirm, actor=f"api:{t.name}")
            what = what or plan.text
        return ForgetOut(user=user, text=what, forgotten=body.confirm and not plan.empty,
                         items=[ItemOut.of(i) for i in plan.items], segments=[n.id for n in plan.segments])

    @app.get("/v1/users/{user}/export")
    def export_user(user: UserPath, s: S, t: T) -> dict:
        """Everything stored of the user as JSON: sessions, turns, memories and memory items (every status),
        recall traces."""
        s.engine.settle(t.internal(user))  # its queued writes' memories (bounded wait, outside the lock)
        with s.read() as eng:
            internal = s.require_user(eng, t, user)
            data = eng.export_user(internal)

        return as_tenant_sees(data, internal, user)

    @app.delete("/v1/users/{user}")
    def erase_user(user: UserPath, s: S, t: T) -> ErasedOut:
        """Erase everything of the user (turns, memories, traces, caches); the file is rewritten."""
        with s.use() as eng:
            internal = s.require_user(eng, t, user)
            out = eng.erase_user(internal, actor=f"api:{t.name}")
            return ErasedOut(user=user, counts={k: int(v) for k, v in out.items() if not k.startswith("file_")},
                             file={k[5:]: v for k, v in out.items() if k.startswith("file_")})

    add_studio_routes(app)
    app.include_router(openai_router)
    return app
