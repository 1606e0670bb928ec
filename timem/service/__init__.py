"""The memory service: HTTP API (:func:`create_app`, FastAPI) and MCP server (:mod:`timem.service.mcp_server`)
over one :class:`~timem.engine.MemoryEngine`; API keys in :mod:`timem.service.keys`."""

from timem.service.app import create_app
from timem.service.keys import KeyFile, default_keys_path

__all__ = ["KeyFile", "create_app", "default_keys_path"]
