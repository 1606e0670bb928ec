"""The memory service's write routes (:func:`timem.service.app.create_app` includes :data:`router`): liveness, the
tenant's users, chat turns (with idempotency keys), ending a session and consolidating.

Every route runs its engine calls under the service's lock (:meth:`timem.service.context.Service.use`); user ids
in and out are the tenant's own (``bob``), stored as ``<tenant>/bob``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter
from fastapi import Path as PathParam

from timem.errors import ConsolidationIncomplete, InputError, NotFoundError
from timem.ids import ID_PATTERN
from timem.models import MemoryNode
from timem.service.context import IdemHeader, S, T, UserPath, write_request
from timem.service.models import ConsolidateIn, MemoryOut, TurnsIn, UsersOut, WrittenOut

router = APIRouter()


@router.get("/v1/health")
def health() -> dict[str, str]:
    """Liveness: ``{"status": "ok"}`` (no key needed, no data)."""
    return {"status": "ok"}


@router.get("/v1/users")
def list_users(s: S, t: T) -> UsersOut:
    """Your users (ids without the tenant prefix), sorted."""
    with s.read() as eng:
        return UsersOut(users=t.users(eng))


@router.post("/v1/users/{user}/turns")
def add_turns(user: UserPath, body: TurnsIn, s: S, t: T, idempotency_key: IdemHeader = None) -> WrittenOut:
    """Store a user message, an assistant reply, or an exchange (both) at ``event_time``; a new user id
    is created by its first turn. Writes the L1 segment and consolidates closed windows (unless
    ``consolidate`` is false); with ``online_queue`` (the default) that is queued and done by the service's
    worker: the answer comes once the turns are stored (``queued``, ``written`` empty), a recall sees them.
    With an idempotency key (``Idempotency-Key`` header or ``idempotency_key`` field), a retry of a stored
    write is answered with its turn ids (``replayed``) and stores nothing more: with the queue, the first attempt's
    job was stored with its turns (``queued``, no ``written`` memories); without, it consolidates what is due, in
    case the first attempt was cut short after its turns were stored, and reports that; the same key with another
    body is 422."""
    if body.message is None and body.reply is None:
        raise InputError("send a message, a reply, or both", field="message")
    s.check_text("message", body.message)
    s.check_text("reply", body.reply)
    request = write_request(user, body, idempotency_key)
    internal, warning = t.internal(user), None
    # this user's lock alone when the write only stores (the worker consolidates, maybe another user meanwhile);
    # every user's when it consolidates in the request (no queue worker), as every other consolidation does
    alone = s.engine.queues_writes or not body.consolidate
    with s.use(internal if alone else None) as eng:
        done = eng.write_request(internal, request.key) if request else None
        if done is not None and request is not None:
            if done[0] != request.fingerprint:
                raise InputError(f"idempotency key {request.key!r} was used for another write of user {user!r}; "
                                 "send a new key for a new write", field="idempotency_key")
            # the first attempt's turns are stored. With the queue, its consolidation job was stored with them and
            # the worker does it (a trial's retry ran it in the request and listed the first write's memories as
            # its own); without, finish it here in case a crash cut it short, and report what that writes
            queued = body.consolidate and eng.queues_writes
            finish = body.consolidate and not queued
            out = written_out(user, internal, lambda: eng.consolidate(internal) if finish else [])
            return out.model_copy(update={"turn_ids": [x.replace(internal, user) for x in done[1]],
                                          "replayed": True, "queued": queued})
        before = {x.id for x in eng.turns(internal, body.session_id)}
        written: list[MemoryNode]
        try:
            if body.message is not None and body.reply is not None:
                written = eng.add_exchange(internal, body.session_id, body.message, body.reply, body.event_time,
                                           user_name=body.user_name or user, assistant_name=body.assistant_name,
                                           consolidate=body.consolidate, request=request)
            elif body.message is not None:  # its L1 segment at once (l1_unit "turn"; "exchange" waits for a reply)
                written = eng.remember(internal, body.session_id, body.message, body.event_time,
                                       user_name=body.user_name or user, consolidate=body.consolidate, request=request)
            else:
                assert body.reply is not None  # a message, a reply or both: checked above
                written = eng.add_reply(internal, body.session_id, body.reply, body.event_time,
                                        assistant_name=body.assistant_name, consolidate=body.consolidate,
                                        request=request)
        except ConsolidationIncomplete as exc:  # the turns are stored (acknowledged); a window stays due
            written, warning = list(exc.written), str(exc)
        turns = sorted((x for x in eng.turns(internal, body.session_id) if x.id not in before), key=lambda x: x.seq)
        queued = body.consolidate and eng.queues_writes
    return WrittenOut(user=user, turn_ids=[x.id.replace(internal, user) for x in turns],
                      written=[MemoryOut.of(n, internal, user) for n in written], warning=warning, queued=queued)


def written_out(user: str, internal: str, run: Callable[[], list[MemoryNode]]) -> WrittenOut:
    """What ``run`` (a consolidation) wrote, as the tenant sees it; a :class:`ConsolidationIncomplete` gives the
    nodes written so far and its message as the ``warning``."""
    try:
        nodes, warning = run(), None
    except ConsolidationIncomplete as exc:
        nodes, warning = list(exc.written), str(exc)
    return WrittenOut(user=user, written=[MemoryOut.of(n, internal, user) for n in nodes], warning=warning)


@router.post("/v1/users/{user}/sessions/{session_id}/end")
def end_session(user: UserPath, session_id: Annotated[str, PathParam(pattern=ID_PATTERN)], s: S,
                t: T) -> WrittenOut:
    """Mark a session ended and consolidate what that closes (its L2 session memory at least)."""
    with s.use() as eng:
        internal = s.require_user(eng, t, user)
        if session_id not in {x.session_id for x in eng.sessions(internal)}:
            raise NotFoundError(f"user {user!r} has no session {session_id!r}; list them with "
                                f"GET /v1/users/{user}/sessions")
        return written_out(user, internal, lambda: eng.end_session(internal, session_id))


@router.post("/v1/users/{user}/consolidate")
def consolidate(user: UserPath, s: S, t: T, body: ConsolidateIn | None = None) -> WrittenOut:
    """Consolidate the user's due windows (every open one with ``flush``); no body means ``flush: false``."""
    flush = body.flush if body is not None else False
    with s.use() as eng:
        internal = s.require_user(eng, t, user)
        return written_out(user, internal, lambda: eng.consolidate(internal, flush=flush))
