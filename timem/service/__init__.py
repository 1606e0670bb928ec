"""The memory service: HTTP API (:func:`create_app`, FastAPI) and MCP server (:mod:`timem.service.mcp_server`)
over one :class:`~timem.engine.MemoryEngine`; API keys in :mod:`timem.service.keys`; the studio's client of a
running service in :mod:`timem.service.client`; the same HTTP API on Ray Serve with users sharded over replicas in
:mod:`timem.service.ray_serve` (routing rules, pure, in :mod:`timem.service.shards`).

The HTTP API and the MCP server need the ``[service]`` install extra (FastAPI, uvicorn, MCP), the client httpx
(in ``[service]`` and ``[studio]``); ``create_app`` is imported on first use, so the key file works with the core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from timem.service.keys import KeyFile, default_keys_path

if TYPE_CHECKING:
    from timem.service.app import create_app

__all__ = ["KeyFile", "create_app", "default_keys_path"]


def __getattr__(name: str) -> Any:
    if name != "create_app":
        raise AttributeError(f"module 'timem.service' has no attribute {name!r}")
    from timem.service.app import create_app

    return create_app
