"""The memory service's routes over stored memories (:func:`timem.service.app.create_app` includes :data:`router`):
list, edit, delete and restore memory nodes; list and forget memory items; explicit forgetting; export and erase
a user. Reads of a user with queued writes first wait (bounded) for their consolidation, outside the lock."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi import Path as PathParam

from timem.errors import InputError, NotFoundError
from timem.memory.forget import forget_request
from timem.models import MemoryNode, NodeStatus
from timem.service.context import NodePath, S, T, UserPath, as_tenant_sees
from timem.service.models import (
    ITEM_ID_PATTERN,
    EditIn,
    ErasedOut,
    ForgetIn,
    ForgetOut,
    ItemOut,
    ItemsOut,
    MemoriesOut,
    MemoryOut,
    RestoredMemoryOut,
    RestoredOut,
    RestoreIn,
)

router = APIRouter()


def _stored(node: MemoryNode | None) -> MemoryNode:
    """A node the route has just checked (it exists, any status)."""
    assert node is not None, "the node was checked by require_node"
    return node


@router.get("/v1/users/{user}/memories")
def list_memories(user: UserPath, s: S, t: T, level: Annotated[int | None, Query(ge=1, le=5)] = None,
                  status: Literal["active", "deleted", "superseded", "all"] = "active",
                  ids: Annotated[list[str] | None, Query()] = None) -> MemoriesOut:
    """The user's memories in conversation order (active ones unless ``status`` says otherwise; only the
    ``ids`` given, repeated ``?ids=L1-…&ids=L2-…``, if any). With ``level=1`` the queued writes' L1 segments are
    written first, as a recall writes them (read-your-writes, no wait for the worker: under
    bench/service_load.py the worker ran ~4 jobs/s behind ~8 writes/s, and every list waited its whole
    ``queue_read_wait_seconds``); any other list waits (bounded) for the jobs queued before it."""
    if level != 1:
        s.engine.settle(t.internal(user))  # its queued writes' L2-L5 (bounded wait, outside the lock)
    with s.read() as eng:
        internal = s.require_user(eng, t, user)
        if level == 1:
            eng.read_your_writes(internal)
        nodes = eng.nodes(internal, level, status=None if status == "all" else NodeStatus(status), ids=ids)
    return MemoriesOut(user=user, memories=[MemoryOut.of(n, internal, user) for n in nodes])


@router.patch("/v1/users/{user}/memories/{node_id}")
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


@router.delete("/v1/users/{user}/memories/{node_id}")
def delete_memory(user: UserPath, node_id: NodePath, s: S, t: T, hard: bool = False) -> dict[str, Any]:
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
        return MemoryOut.of(_stored(eng.node(node_id)), internal, user).model_dump(mode="json")


@router.post("/v1/users/{user}/memories/{node_id}/restore")
def restore_memory(user: UserPath, node_id: NodePath, s: S, t: T) -> MemoryOut:
    """Undo a soft delete (one memory; several at once: ``POST .../memories/restore``)."""
    with s.use() as eng:
        internal = s.require_user(eng, t, user)
        s.require_node(eng, internal, user, node_id)
        eng.restore_memory(node_id, actor=f"api:{t.name}")
        return MemoryOut.of(_stored(eng.node(node_id)), internal, user)


@router.post("/v1/users/{user}/memories/restore")
def restore_memories(user: UserPath, body: RestoreIn, s: S, t: T) -> RestoredOut:
    """Undo the soft delete of every memory of ``ids`` (``timem restore ID… --user U``): all or nothing, as
    :meth:`timem.engine.MemoryEngine.restore_memories` (every id is checked first: one that is no memory of the
    user is a 404, one that is not forgotten a 422, and nothing is restored). Each comes back with the memory items
    read from it, except those forgotten by name (``still_forgotten``)."""
    with s.use() as eng:
        internal = s.require_user(eng, t, user)
        ids = list(dict.fromkeys(body.ids))
        for nid in ids:  # the service's words first (the engine's name the CLI), then the engine's same check
            if s.require_node(eng, internal, user, nid).status != NodeStatus.DELETED:
                raise InputError(f"memory {nid} is {_stored(eng.node(nid)).status.value}, not forgotten; nothing to "
                                 "restore, and nothing was restored (forgotten ones: GET "
                                 f"/v1/users/{user}/memories?status=deleted)", field="ids")
        restored = eng.restore_memories(internal, ids, actor=f"api:{t.name}")
        return RestoredOut(user=user, restored=[
            RestoredMemoryOut(memory=MemoryOut.of(r.segment, internal, user), items=[ItemOut.of(i) for i in r.items],
                              still_forgotten=[ItemOut.of(i) for i in r.still_forgotten]) for r in restored])


@router.get("/v1/users/{user}/items")
def list_items(user: UserPath, s: S, t: T,
               status: Literal["active", "deleted", "all"] = "active", reopen: bool = True) -> ItemsOut:
    """The user's memory items (facts, preferences, events, plans), oldest first; superseded items are
    active with ``valid_to`` set (history), forgotten ones ``deleted``. An item whose successor was forgotten holds
    again until the value after it, if any (``valid_to`` and ``superseded_by`` null when none), as recall reads it
    (``reopen=false``: as stored). Rule-based items of the user's queued writes are read first, as a recall reads
    them (read-your-writes); an LLM reader's come with the worker, which the list waits for (bounded)."""
    s.engine.settle(t.internal(user))  # its queued writes' memories (bounded wait, outside the lock)
    with s.read() as eng:
        internal = s.require_user(eng, t, user)
        eng.read_your_writes(internal)
        items = eng.memory_items(internal, status=None if status == "all" else status, reopen=reopen)
    return ItemsOut(user=user, items=[ItemOut.of(i) for i in items])


@router.delete("/v1/users/{user}/items/{item_id}")
def delete_item(user: UserPath, item_id: Annotated[str, PathParam(pattern=ITEM_ID_PATTERN)], s: S,
                t: T) -> ItemOut:
    """Forget one memory item alone (soft delete; its source segments stay)."""
    with s.use() as eng:
        internal = s.require_user(eng, t, user)
        if item_id not in {i.id for i in eng.memory_items(internal, status=None)}:
            raise NotFoundError(f"no memory item {item_id!r} for user {user!r}; "
                                f"list them with GET /v1/users/{user}/items")
        eng.forget_items([item_id], actor=f"api:{t.name}")
        return ItemOut.of(eng.memory_item(item_id))


@router.post("/v1/users/{user}/forget")
def forget(user: UserPath, body: ForgetIn, s: S, t: T) -> ForgetOut:
    """Explicit forgetting: the items and L1 segments that match ``text``; with ``confirm`` they are
    soft-deleted (segments undoable with ``POST .../memories/{id}/restore``), else only listed."""
    s.check_text("text", body.text)
    if body.text.strip() and body.item_ids:
        raise InputError("give either text (what to forget) or item_ids, not both", field="text")
    if not body.text.strip() and not body.item_ids:
        raise InputError("give text (what to forget, e.g. \"my cat\") or item_ids (from GET "
                         f"/v1/users/{user}/items)", field="text")
    what = forget_request(body.text) or body.text
    s.engine.settle(t.internal(user))  # its queued writes' memories and items (bounded wait, outside the lock)
    with s.use() as eng:
        internal = s.require_user(eng, t, user)
        plan = eng.forget(internal, what, item_ids=body.item_ids, confirm=body.confirm, actor=f"api:{t.name}")
        what = what or plan.text
    return ForgetOut.of(plan, user, what, forgotten=body.confirm)


@router.get("/v1/users/{user}/export")
def export_user(user: UserPath, s: S, t: T) -> dict[str, Any]:
    """Everything stored of the user as JSON: sessions, turns, memories and memory items (every status),
    recall traces."""
    s.engine.settle(t.internal(user))  # its queued writes' memories (bounded wait, outside the lock)
    with s.read() as eng:
        internal = s.require_user(eng, t, user)
        data = eng.export_user(internal)
    exported: dict[str, Any] = as_tenant_sees(data, internal, user)
    return exported


@router.delete("/v1/users/{user}")
def erase_user(user: UserPath, s: S, t: T) -> ErasedOut:
    """Erase everything of the user (turns, memories, traces, caches); the file is rewritten."""
    with s.use() as eng:
        internal = s.require_user(eng, t, user)
        out = eng.erase_user(internal, actor=f"api:{t.name}")
        return ErasedOut(user=user, counts={k: int(v) for k, v in out.items() if not k.startswith("file_")},
                         file={k[5:]: v for k, v in out.items() if k.startswith("file_")})
