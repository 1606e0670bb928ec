"""Store ports: small typed protocols, one per concern, that the DuckDB :class:`~timem.store.Store` satisfies.

A module that needs one concern depends on its port, not on the DuckDB class, so that a second backend
(or a test double) can plug in there. mypy checks that :class:`~timem.store.Store` satisfies each port
(``_CHECKS`` at the bottom). Times are UTC-aware; vectors are unit-length float32 ``(dim,)`` arrays.

* :class:`LLMCache` — the LLM response cache and call log (the whole of what :mod:`timem.llm` needs).
* :class:`TraceSink` and :class:`AuditSink` — recall traces and the audit log.
* :class:`TurnLog` — turns and sessions as said.
* :class:`NodeRepository` — the Temporal Memory Tree's nodes and their vectors.
* :class:`Search` — BM25 and vector search over nodes, and the time-window and neighbour queries.
* :class:`IndexHealth` — what ``timem check`` reads about the indexes.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from timem.models import Level, MemoryNode, NodeStatus, Turn

if TYPE_CHECKING:
    from timem.store.duckdb_store import Store


class LLMCache(Protocol):
    """Responses by cache key, and one log row per LLM call (hit or miss)."""

    def cache_get(self, key: str) -> tuple[str, int | None, int | None] | None:
        """``(response, prompt tokens, completion tokens)`` stored under ``key``, or ``None``."""
        ...

    def cache_put(self, key: str, model_id: str, request: str, response: str,
                  prompt_tokens: int | None, completion_tokens: int | None) -> None: ...

    def log_llm_call(self, model_id: str, purpose: str, user_id: str | None, cached: bool,
                     prompt_tokens: int | None, completion_tokens: int | None, latency_ms: float,
                     cache_key: str | None) -> None: ...


class TraceSink(Protocol):
    """Persisted recall traces (JSON documents by trace id)."""

    def save_trace(self, trace_id: str, user_id: str, query: str, trace: dict[str, Any]) -> None: ...

    def traces(self, user_id: str | None = None, limit: int = 100) -> list[dict[str, Any]]: ...


class AuditSink(Protocol):
    """The append-only audit log (ids, counts and actions; never erased text)."""

    def audit(self, action: str, user_id: str | None, node_id: str | None, detail: dict[str, Any]) -> None: ...


class TurnLog(Protocol):
    """Turns (what was said, in order) and their sessions."""

    def add_turns(self, turns: Sequence[Turn]) -> int: ...

    def turns(self, user_id: str, session_id: str | None = None, ids: Sequence[str] | None = None) -> list[Turn]: ...

    def sessions(self, user_id: str) -> list[dict[str, Any]]: ...

    def end_session(self, user_id: str, session_id: str) -> None: ...

    def users(self) -> list[str]: ...


class NodeRepository(Protocol):
    """Memory nodes (L1 segment .. L5 profile) with their vectors; every write inside :meth:`transaction`."""

    def transaction(self) -> AbstractContextManager[None]: ...

    def add_node(self, node: MemoryNode, embedding: np.ndarray) -> None: ...

    def update_node(self, node_id: str, *, content: str | None = None, embedding: np.ndarray | None = None,
                    status: NodeStatus | None = None, stale: bool | None = None) -> None: ...

    def node(self, node_id: str) -> MemoryNode: ...

    def nodes(self, user_id: str | None = None, level: int | None = None, *,
              status: NodeStatus | None = NodeStatus.ACTIVE, ids: Sequence[str] | None = None,
              session_id: str | None = None) -> list[MemoryNode]: ...

    def node_for_window(self, user_id: str, level: Level, window_key: str) -> MemoryNode | None: ...

    def parent_ids(self, node_ids: Sequence[str]) -> dict[str, str | None]: ...

    def embeddings(self, node_ids: Sequence[str]) -> dict[str, np.ndarray]: ...


class Search(Protocol):
    """Per-user search over nodes of one level; results ``(node id, score)``, best first."""

    def refresh_fts(self, force: bool = False) -> bool: ...

    def search_bm25(self, user_id: str, query: str, level: int, limit: int) -> list[tuple[str, float]]: ...

    def search_vector(self, user_id: str, query_vec: np.ndarray, level: int, limit: int) -> list[tuple[str, float]]: ...

    def segments_in_windows(self, user_id: str, windows: Sequence[tuple[datetime, datetime]], limit: int,
                            until: datetime | None = None) -> list[tuple[str, datetime, datetime]]: ...

    def adjacent_segments(self, user_id: str, node_ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]: ...


class IndexHealth(Protocol):
    """What ``timem check`` reads about the BM25 and vector indexes."""

    def get_meta(self, key: str) -> str | None: ...

    def index_health(self) -> dict[str, Any]:
        """``{"nodes": n, "fts_documents": n or None, "non_unit_vectors": [node id, ...]}``."""
        ...


if TYPE_CHECKING:  # mypy: the DuckDB store satisfies every port
    def _checks(s: Store) -> tuple[LLMCache, TraceSink, AuditSink, TurnLog, NodeRepository, Search, IndexHealth]:
        return s, s, s, s, s, s, s
