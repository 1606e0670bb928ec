"""TiMem: long-term memory for chat agents, as a Temporal Memory Tree in one DuckDB file.

The library in five names (each a method of :class:`timem.engine.MemoryEngine`, the one facade)::

    import timem

    with timem.open("memories.duckdb", llm_backend="openai") as mem:  # closes the file when the block ends
        mem.remember("mia", "chat-1", "I adopted a grey cat called Pixel.", at, reply="Lovely!")
        mem.recall("mia", "What is my cat called?").context   # the recalled memories, dated, within a budget
        mem.ask("mia", "What is my cat called?").answer       # recall, then one LLM call
        mem.forget("mia", "my cat Pixel", confirm=True)       # soft-delete what matches (audited)
        mem.export("mia")                                     # everything stored of the user, JSON-ready

Times are timezone-aware :class:`datetime.datetime` values, stored in UTC: an event time (``remember``) must carry
its zone (a naive one is refused: the day a memory falls on depends on it); a naive question time (``recall``,
``ask``) is read in the ``timezone`` setting. Every error derives from :class:`TimemError` and says what to do.
Settings: ``docs/configuration.md``.

Nothing heavy is imported here: the engine (DuckDB, the embedder) loads on first use of :func:`open` or of a name
below, so ``import timem.models`` stays cheap.
"""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from timem.errors import TimemError

if TYPE_CHECKING:
    from timem.config import Config, load_config
    from timem.engine import MemoryEngine
    from timem.models import MemoryItem, MemoryNode, Turn
    from timem.recall.answering import AnswerResult
    from timem.recall.options import RecallOptions
    from timem.recall.pipeline import RecallResult

try:
    __version__ = version("timem")
except PackageNotFoundError:  # a checkout on sys.path, not installed
    __version__ = "0.0.0+checkout"

__all__ = ["AnswerResult", "Config", "MemoryEngine", "MemoryItem", "MemoryNode", "RecallOptions", "RecallResult",
           "TimemError", "Turn", "__version__", "load_config", "open"]

#: public name -> the module that defines it (imported on first access, PEP 562)
_LAZY: dict[str, str] = {
    "Config": "timem.config", "load_config": "timem.config", "MemoryEngine": "timem.engine",
    "MemoryItem": "timem.models", "MemoryNode": "timem.models", "Turn": "timem.models",
    "AnswerResult": "timem.recall.answering", "RecallResult": "timem.recall.pipeline",
    "RecallOptions": "timem.recall.options",
}


def open(path: str | os.PathLike[str], *, config_file: str | os.PathLike[str] | None = None,
         with_llm: bool = True, **settings: Any) -> MemoryEngine:
    """Open (or create) the memory file at ``path``: a :class:`~timem.engine.MemoryEngine`, to use as a context
    manager (``with timem.open(...) as mem:``) or closed with ``mem.close()``.

    Args:
        path: the DuckDB file (``":memory:"`` for one in memory); it is created with its folder's permission.
        config_file: a TOML settings file; ``None`` reads ``$TIMEM_CONFIG`` or ``./timem.toml`` if present.
        with_llm: ``False`` opens no LLM whatever ``llm_backend`` says (recall only; :meth:`ask` then raises).
        settings: settings by plain name (``llm_backend="openai"``, ``openai_model="gpt-4o-mini"``,
            ``token_budget=500``, ``timezone="Europe/Berlin"``; every one in ``docs/configuration.md``). They win
            over ``TIMEM_*`` environment variables, which win over the file (:func:`timem.config.load_config`);
            ``llm_backend="openai"`` reads ``TIMEM_OPENAI_BASE_URL`` / ``TIMEM_OPENAI_API_KEY`` (or ``OPENAI_*``).

    Raises:
        ConfigError: an unknown setting or an invalid value; ``llm_backend="openai"`` with neither base URL nor key.
        ModelFileError, MissingExtraError: ``llm_backend="local"`` (the default) without the ``[local]`` install
            extra (the message says ``pip install 'timem[local]'``); pass ``llm_backend="openai"`` or ``"none"``.
        StoreError: the file cannot be opened (another process holds it) or was built with another embedder.
    """
    from timem.config import load_config
    from timem.engine import MemoryEngine

    config = load_config(None if config_file is None else os.fspath(config_file), db_path=os.fspath(path), **settings)
    return MemoryEngine.open(config, with_llm=with_llm)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'timem' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(module), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
