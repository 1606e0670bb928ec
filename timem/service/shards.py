"""Users over shards, for the memory service on Ray Serve (:mod:`timem.service.ray_serve`, ``timem serve --ray``).

Pure functions, no Ray: which shard owns a user (:func:`shard_of`), where the shard files are
(:func:`shard_paths`), which shard(s) a request goes to (:func:`route`), and how the answers of every shard to a
tenant-wide request are merged into one (:func:`merge`).

- A user is owned by one shard, chosen by a stable hash of its stored id ``<tenant>/<user>`` (SHA-256, never
  Python's salted ``hash()``), so the same user lands on the same shard in every process, on every machine, after
  every restart.
- The shard files sit beside ``--db``: ``memory.duckdb`` -> ``memory.shard0.duckdb``, ``memory.shard1.duckdb``, ...
  Each is an ordinary TiMem file (``timem serve --db memory.shard1.duckdb --keys memory.duckdb.keys.json`` serves it
  alone). A layout file ``memory.shards.json`` records the shard count: a restart with another count would put
  users on shards that do not hold them, and is refused (:func:`check_layout`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from timem.errors import ConfigError

#: the hash in words, stored in the layout file: another rule there means another assignment of users
HASH_RULE = "sha256(tenant/user), first 8 bytes big-endian, modulo shards"


class ShardLayoutError(ConfigError):
    """The shard files beside ``--db`` were written with another shard count (or layout file is unreadable)."""


def shard_of(tenant: str, user: str, shards: int) -> int:
    """The shard (``0 .. shards-1``) that owns ``user`` of ``tenant``: the first 8 bytes of the SHA-256 of the stored
    user id ``<tenant>/<user>`` (UTF-8), read big-endian, modulo ``shards``. Stable across processes and machines."""
    if shards < 1:
        raise ConfigError(f"the shard count must be at least 1, not {shards}; pass --replicas 1 or more")
    digest = hashlib.sha256(f"{tenant}/{user}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % shards


def shard_paths(db: str | Path, shards: int) -> list[Path]:
    """The shard files of ``db``, beside it: ``<stem>.shard<i><suffix>`` (``memory.duckdb`` ->
    ``memory.shard0.duckdb``, ...)."""
    p = Path(db)
    return [p.with_name(f"{p.stem}.shard{i}{p.suffix or '.duckdb'}") for i in range(shards)]


def layout_path(db: str | Path) -> Path:
    """The layout file of the shards of ``db``: ``<stem>.shards.json`` beside it."""
    p = Path(db)
    return p.with_name(f"{p.stem}.shards.json")


def check_layout(db: str | Path, shards: int) -> Path:
    """Record the shard count of ``db``'s shards on first use; afterwards refuse another count. Returns the layout
    file's path.

    Raises:
        ShardLayoutError: the layout file names another count or hash rule, or cannot be read.
    """
    path = layout_path(db)
    if not path.exists():
        path.write_text(json.dumps({"version": 1, "shards": shards, "hash": HASH_RULE}, indent=2) + "\n",
                        encoding="utf-8")
        return path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        have, rule = int(data["shards"]), str(data["hash"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ShardLayoutError(f"cannot read the shard layout {path}: {exc}; restore it (it says how many shards "
                               "the files beside it were written with)") from exc
    if have != shards or rule != HASH_RULE:
        raise ShardLayoutError(f"{path} says the users of {db} are spread over {have} shard(s) ({rule}); start with "
                               f"--replicas {have}: with {shards} users would be looked for on shards that do not "
                               "hold them (re-sharding is not supported)")
    return path


@dataclass(frozen=True)
class Route:
    """Where a request goes: the shard of ``user`` (a user's route), every shard then :func:`merge` by ``fanout``
    (a tenant-wide route), or any one shard (neither: a route without user data, or one that does not exist)."""

    user: str | None = None
    fanout: str | None = None


#: tenant-wide routes, answered by every shard and merged: (method, path) -> merge kind
FANOUT: dict[tuple[str, str], str] = {
    ("GET", "/v1/health"): "health",
    ("GET", "/v1/users"): "users",
    ("DELETE", "/v1/users"): "erase_tenant",
    ("GET", "/v1/export"): "export",
    ("GET", "/v1/about"): "about",
    ("GET", "/v1/queue"): "queue",
    ("POST", "/v1/queue/retry"): "queue",
}


def route(method: str, path: str, headers: dict[str, str], body: bytes) -> Route:
    """The :class:`Route` of a request: ``/v1/users/{user}/...`` goes to that user's shard; an OpenAI chat
    completion to the shard of its ``user`` field or ``X-Timem-User`` header (any shard without one, e.g.
    ``X-Timem-Memory: off``); the routes of :data:`FANOUT` to every shard. ``headers`` have lower-case names."""
    fan = FANOUT.get((method.upper(), path.rstrip("/") or "/"))
    if fan is not None:
        return Route(fanout=fan)
    parts = path.split("/")
    if len(parts) >= 4 and parts[1] == "v1" and parts[2] == "users" and parts[3]:
        return Route(user=unquote(parts[3]))
    if path == "/v1/chat/completions":
        user = headers.get("x-timem-user")
        if not user:
            try:
                data = json.loads(body) if body else {}
            except ValueError:  # not JSON: the shard answers 400 as the one-process service does
                data = {}
            user = data.get("user") if isinstance(data, dict) and isinstance(data.get("user"), str) else None
        return Route(user=user or None)
    return Route()


def merge(kind: str, answers: list[tuple[int, Any]]) -> tuple[int, Any]:
    """One answer ``(status, JSON body)`` from every shard's answer to a tenant-wide route (:data:`FANOUT`), in
    shard order. The first error (status >= 400) is the answer if any shard failed; else, by ``kind``: ``users``
    the sorted union, ``export`` the union of the users' exports, ``erase_tenant`` the erased users and the summed
    row counts, ``queue`` the summed job counts with every shard's failed jobs (newest first), ``about`` the first
    shard's with the queue counts summed, ``health`` ok."""
    for status, body in answers:
        if status >= 400:
            return status, body
    bodies = [b for _, b in answers]
    if kind == "users":
        return 200, {"users": sorted({u for b in bodies for u in b["users"]})}
    if kind == "export":
        return 200, {**bodies[0], "users": {u: x for b in bodies for u, x in b["users"].items()}}
    if kind == "erase_tenant":
        counts: dict[str, int] = {}
        for b in bodies:
            for k, v in b["counts"].items():
                counts[k] = counts.get(k, 0) + int(v)
        return 200, {**bodies[0], "erased": sorted(u for b in bodies for u in b["erased"]), "counts": counts}
    if kind == "queue":
        out = {**bodies[0], **{k: sum(int(b.get(k, 0)) for b in bodies) for k in
                               ("pending", "running", "done", "failed", "retried")}}
        out["worker"] = any(b.get("worker") for b in bodies)
        out["failed_jobs"] = sorted((j for b in bodies for j in b.get("failed_jobs", [])),
                                    key=lambda j: str(j.get("enqueued_at", "")), reverse=True)
        return 200, out
    if kind == "about":
        queue: dict[str, int] = {}
        for b in bodies:
            for k, v in b.get("queue", {}).items():
                queue[k] = queue.get(k, 0) + int(v)
        return 200, {**bodies[0], "queue": queue, "shards": len(bodies)}
    if kind == "health":
        return 200, {"status": "ok", "shards": len(bodies)}
    raise ConfigError(f"no merge for tenant-wide route kind {kind!r}; add it to timem.service.shards.merge")
