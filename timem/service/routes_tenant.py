"""The memory service's tenant-wide routes (:func:`timem.service.app.create_app` includes :data:`router`): export
every user of the calling tenant, and erase them all. Over Ray Serve (:mod:`timem.service.ray_serve`) every shard
answers these for its own users and the answers are merged (:func:`timem.service.shards.merge`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from timem.errors import InputError
from timem.service.context import S, T, as_tenant_sees
from timem.service.models import TenantErasedOut

router = APIRouter()


@router.get("/v1/export")
def export_tenant(s: S, t: T) -> dict[str, Any]:
    """Everything stored of every user of the tenant: ``{"tenant": ..., "users": {user: <its export>}}``, each
    export as ``GET /v1/users/{user}/export`` gives it."""
    with s.read() as eng:
        users = t.users(eng)
    for user in users:  # their queued writes' memories (bounded wait, outside the lock)
        s.engine.settle(t.internal(user))
    out: dict[str, Any] = {}
    with s.read() as eng:
        for user in users:
            internal = t.internal(user)
            out[user] = as_tenant_sees(eng.export_user(internal), internal, user)
    return {"tenant": t.name, "users": out}


@router.delete("/v1/users")
def erase_tenant(s: S, t: T, confirm: bool = False) -> TenantErasedOut:
    """Erase every user of the tenant (turns, memories, traces, caches), as ``DELETE /v1/users/{user}`` does for
    each; needs ``?confirm=true``. The tenant's keys stay (revoke them with ``timem keys revoke TENANT``)."""
    if not confirm:
        raise InputError(f"this erases every user of tenant {t.name!r} for good; send DELETE /v1/users?confirm=true "
                         "to do it, or DELETE /v1/users/{user} for one user", field="confirm")
    counts: dict[str, int] = {}
    erased: list[str] = []
    with s.use() as eng:
        for user in t.users(eng):
            out = eng.erase_user(t.internal(user), actor=f"api:{t.name}")
            erased.append(user)
            for k, v in out.items():
                if not k.startswith("file_"):
                    counts[k] = counts.get(k, 0) + int(v)
    return TenantErasedOut(tenant=t.name, erased=erased, counts=counts)
