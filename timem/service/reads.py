"""More routes of the memory service, added for clients that show a tenant's memory (``timem studio --service``):
what the service is (``/v1/about``), a user's sessions, turns and stored recall traces, a chat turn answered by the
service, and pinning a memory item. Same rules as :mod:`timem.service.app`: a key per tenant, another tenant's user
answers 404 like an absent one, ids without the tenant prefix, errors ``{"error": "<one line>"}``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI, Query
from fastapi import Path as PathParam

from timem.errors import NotFoundError
from timem.ids import ID_PATTERN
from timem.memory.forget import forget_request
from timem.service.context import S, T, Tenant, UserPath, as_tenant_sees
from timem.service.models import (
    ITEM_ID_PATTERN,
    AboutOut,
    ChatIn,
    ChatOut,
    ForgetOut,
    ItemOut,
    MemoryOut,
    PinIn,
    QueueJobOut,
    QueueOut,
    SessionsOut,
    TracesOut,
    TurnOut,
    TurnsOut,
)


def _queue_out(status: dict[str, Any], t: Tenant) -> QueueOut:
    jobs = [QueueJobOut(id=j["id"], user=j["user_id"][len(t.prefix):], attempts=j["attempts"],
                        error=(j["error"] or "").replace(t.prefix, "") or None, enqueued_at=j["enqueued_at"])
            for j in status["failed_jobs"]]
    return QueueOut(**{k: status[k] for k in ("pending", "running", "done", "failed", "worker")}, failed_jobs=jobs)


ItemPath = Annotated[str, PathParam(pattern=ITEM_ID_PATTERN, description="a memory item id")]


def add_studio_routes(app: FastAPI) -> None:
    """Register the routes of this module on ``app`` (built by :func:`timem.service.create_app`)."""

    @app.get("/v1/about")
    def about(s: S, t: T) -> AboutOut:
        """The calling tenant, whether the service has an LLM (and which), its consolidation mode and time zone, the
        DuckDB memory limit in effect."""
        with s.use() as eng:
            cfg = eng.config
            return AboutOut(tenant=t.name, has_llm=eng.has_llm, llm=eng.llm.model_id if eng.llm is not None else None,
                            consolidation_mode=cfg.consolidation.consolidation_mode,
                            level_modes=dict(cfg.consolidation.level_modes), timezone=cfg.time.timezone,
                            session_idle_timeout_minutes=cfg.time.session_idle_timeout_minutes,
                            max_text_chars=s.max_text, queue=eng.store.queue_counts(t.prefix),
                            online_queue=eng.queues_writes, duckdb_memory_limit=eng.reads.duckdb_memory_limit())

    @app.get("/v1/queue")
    def queue(s: S, t: T) -> QueueOut:
        """The consolidation queue of your users: jobs per state, the newest failed ones with their errors."""
        with s.use() as eng:
            return _queue_out(eng.queue_status(t.prefix), t)

    @app.post("/v1/queue/retry")
    def retry_queue(s: S, t: T) -> QueueOut:
        """Put your users' failed consolidation jobs back to pending (the worker runs them again)."""
        with s.use() as eng:
            n = eng.retry_failed_jobs(t.prefix)
            return _queue_out(eng.queue_status(t.prefix), t).model_copy(update={"retried": n})

    @app.get("/v1/users/{user}/sessions")
    def list_sessions(user: UserPath, s: S, t: T) -> SessionsOut:
        """The user's sessions by start: id, first and last event (UTC), whether it was ended."""
        with s.use() as eng:
            internal = s.require_user(eng, t, user)
            return SessionsOut(user=user, sessions=eng.sessions(internal))

    @app.get("/v1/users/{user}/turns")
    def list_turns(user: UserPath, s: S, t: T,
                   session_id: Annotated[str | None, Query(pattern=ID_PATTERN)] = None,
                   ids: Annotated[list[str] | None, Query()] = None) -> TurnsOut:
        """The user's turns in conversation order (one session's with ``session_id``; only ``ids``, repeated
        ``?ids=mia:s1:0&ids=…``, if given); an unknown ``session_id`` is 404. A turn the person asked to forget is
        marked ``forgotten`` (its text is kept until a restore or an erase)."""
        with s.use() as eng:
            internal = s.require_user(eng, t, user)
            if session_id is not None and session_id not in {x.session_id for x in eng.sessions(internal)}:
                raise NotFoundError(f"user {user!r} has no session {session_id!r}; list them with "
                                    f"GET /v1/users/{user}/sessions")
            wanted = [internal + i[len(user):] if i.startswith(user + ":") else i for i in ids] if ids else None
            turns = eng.turns(internal, session_id, wanted)
            forgotten = eng.forgotten_turn_ids(internal, session_id) if turns else set()
        return TurnsOut(user=user, turns=[TurnOut.of(x, internal, user, x.id in forgotten) for x in turns])

    @app.get("/v1/users/{user}/traces")
    def list_traces(user: UserPath, s: S, t: T, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> TracesOut:
        """The user's stored recall traces, newest first (at most ``limit``)."""
        with s.use() as eng:
            internal = s.require_user(eng, t, user)
            traces = [x.model_dump(mode="json") for x in eng.traces(internal, limit=limit)]
        return TracesOut(user=user, traces=as_tenant_sees(traces, internal, user))

    @app.post("/v1/users/{user}/chat")
    def chat(user: UserPath, body: ChatIn, s: S, t: T) -> ChatOut:
        """One chat turn (:meth:`timem.engine.MemoryEngine.chat_turn`): store the message, recall, answer (without
        an LLM: a short note; the trace shows what was recalled), store the reply, consolidate what closed. The
        first message creates the user. A "forget that ..." message previews what it names instead, and forgets it
        with ``"confirm_forget": true`` (nothing stored either way).
        If answering fails the message stays stored: 502 with ``"stage": "answer"``."""
        s.check_text("message", body.message)
        internal = t.internal(user)
        if forget_request(body.message) is not None:  # it must see the writes just acknowledged, as POST …/forget
            s.engine.settle(internal)  # the worker's jobs of this user (bounded wait, outside the lock); the rest:
            # MemoryEngine.chat_turn runs the user's still pending jobs itself before it previews
        with s.use() as eng:
            turn = eng.chat_turn(internal, body.session_id, body.message, body.event_time,
                                 user_name=body.user_name or user, assistant_name=body.assistant_name,
                                 consolidate=body.consolidate, confirm_forget=body.confirm_forget)
        forgotten = None
        if turn.forgotten is not None:
            plan = turn.forgotten
            forgotten = ForgetOut.of(plan, user, plan.text, forgotten=body.confirm_forget)
        return ChatOut(user=user, session_id=body.session_id, reply=turn.reply,
                       trace=as_tenant_sees(turn.trace.model_dump(mode="json"), internal, user),
                       written=[MemoryOut.of(n, internal, user) for n in turn.written], warning=turn.warning,
                       forgotten=forgotten)

    @app.post("/v1/users/{user}/items/{item_id}/pin")
    def pin_item(user: UserPath, item_id: ItemPath, s: S, t: T, body: PinIn | None = None) -> ItemOut:
        """Pin (``{"pinned": true}``, the default) or unpin a memory item: pinned items go into every answer's
        system message."""
        pinned = body.pinned if body is not None else True
        with s.use() as eng:
            internal = s.require_user(eng, t, user)
            if item_id not in {i.id for i in eng.memory_items(internal, status=None)}:
                raise NotFoundError(f"no memory item {item_id!r} for user {user!r}; "
                                    f"list them with GET /v1/users/{user}/items")
            return ItemOut.of(eng.pin_item(item_id, pinned, actor=f"api:{t.name}"))
