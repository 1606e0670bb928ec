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
* :class:`ItemRepository` — the memory layer's items (facts, preferences, events, plans) and their vectors.
* :class:`SegmentTreePort` — the SegTreeMem segment tree's tables (``store.segment_tree``).
* :class:`Maintenance` — erase, compaction, write-request idempotency, usage and statistics.
* :class:`MemoryStore` — all of the above: what the engine facade, consolidation, editing and the
  bench hold. Code outside ``timem.store`` names these ports, never the DuckDB class (open a store with
  :func:`timem.store.open_store`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from timem.models import Level, MemoryItem, MemoryNode, NodeStatus, Role, SessionInfo, Turn
from timem.store.jobs import JOB_STATES, ConsolidationJob
from timem.store.segtree_tables import SyncReport
from timem.store.segtree_view import TreeView
from timem.tree.segtree import SegNode

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
    """Persisted recall traces (JSON documents by trace id), bounded by a retention rule
    (:mod:`timem.store.traces`)."""

    def save_trace(self, trace_id: str, user_id: str, query: str, trace: dict[str, Any], *,
                   keep_per_user: int | None = None, max_age_days: float | None = None,
                   now: datetime | None = None) -> int:
        """Insert or replace one document, then delete what the retention rule no longer keeps; returns how
        many were deleted."""
        ...

    def traces(self, user_id: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """The stored documents, newest first."""
        ...

    def trace_bytes(self, user_id: str | None = None) -> tuple[int, int]:
        """``(traces, stored bytes)`` of one user or of all."""
        ...


class AuditSink(Protocol):
    """The append-only audit log (ids, counts and actions; never erased text)."""

    def audit(self, action: str, user_id: str | None, node_id: str | None, detail: dict[str, Any]) -> None: ...


class TurnLog(Protocol):
    """Turns (what was said, in order) and their sessions."""

    def add_turns(self, turns: Sequence[Turn]) -> int: ...

    def turns(self, user_id: str, session_id: str | None = None, ids: Sequence[str] | None = None) -> list[Turn]: ...

    def speaker_roles(self, user_id: str) -> set[tuple[str, Role]]: ...

    def sessions(self, user_id: str) -> list[SessionInfo]: ...

    def sessions_among(self, user_id: str, session_ids: Sequence[str]
                       ) -> tuple[list[SessionInfo], datetime | None, datetime | None]: ...

    def end_session(self, user_id: str, session_id: str) -> None: ...

    def users(self) -> list[str]: ...

    def has_user(self, user_id: str) -> bool: ...

    def changed_turns(self, turns: Sequence[Turn]) -> list[tuple[Turn, Turn]]: ...

    def update_turn_text(self, turn: Turn) -> list[tuple[str, str | None]]: ...


class NodeRepository(Protocol):
    """Memory nodes (L1 segment .. L5 profile) with their vectors; every write inside :meth:`transaction`."""

    def transaction(self) -> AbstractContextManager[None]: ...

    def reading(self) -> AbstractContextManager[None]:
        """Reads of a thread that holds no write lock (each thread has its own cursor; a compaction waits)."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """Reads in one consistent view of the file (a recall's reads: one snapshot, one nodes-version read)."""
        ...

    def calendar_zone(self, zone: str | None = None) -> str | None:
        """The IANA zone this file's L3 day / L4 week / L5 month windows are cut in: ``zone`` is recorded if
        none is yet (the first consolidation of those levels); returns the recorded one (or ``None``)."""
        ...

    def add_node(self, node: MemoryNode, embedding: np.ndarray) -> None: ...

    def update_node(self, node_id: str, *, content: str | None = None, embedding: np.ndarray | None = None,
                    status: NodeStatus | None = None, stale: bool | None = None) -> None: ...

    def node(self, node_id: str) -> MemoryNode: ...

    def nodes(self, user_id: str | None = None, level: int | None = None, *,
              status: NodeStatus | None = NodeStatus.ACTIVE, ids: Sequence[str] | None = None,
              session_id: str | None = None) -> list[MemoryNode]: ...

    def parent_ids(self, node_ids: Sequence[str]) -> dict[str, str | None]: ...

    def nodes_listing(self, child_ids: Sequence[str]) -> list[MemoryNode]:
        """Nodes of any status whose ``child_ids`` include one of ``child_ids``."""
        ...

    def embeddings(self, node_ids: Sequence[str], user_id: str | None = None) -> dict[str, np.ndarray]:
        """The stored vectors of ``node_ids``; with ``user_id``, of that user's only, from its in-memory vector
        copies where they hold them (recall's reads)."""
        ...

    def add_nodes(self, nodes: Sequence[MemoryNode], embeddings: np.ndarray) -> None: ...

    def lineage(self, user_id: str, node_ids: Sequence[str], top_level: int
                ) -> tuple[dict[str, MemoryNode], dict[str, str | None]]:
        """``node_ids`` and their ancestors up to ``top_level`` (nodes by id, and each one's parent id)."""
        ...

    def history(self, user_id: str, level: Level, before: datetime, k: int) -> list[MemoryNode]: ...

    def window_keys(self, user_id: str, level: Level, session_id: str | None = None, *,
                    include_deleted: bool = False) -> set[str]: ...

    def node_spans(self, user_id: str, level: int) -> list[tuple[str, str | None, datetime]]:
        """``(id, session id, span start)`` of the user's active nodes at ``level``, in conversation order."""
        ...

    def relink(self, child_id: str, parent_id: str) -> None: ...

    def delete_nodes(self, node_ids: Sequence[str]) -> None: ...


class Search(Protocol):
    """Per-user search over nodes of one level; results ``(node id, score)``, best first."""

    def refresh_fts(self, force: bool = False) -> bool: ...

    def search_bm25(self, user_id: str, query: str, level: int, limit: int) -> list[tuple[str, float]]: ...

    def search_vector(self, user_id: str, query_vec: np.ndarray, level: int, limit: int) -> list[tuple[str, float]]: ...

    def segments_in_windows(self, user_id: str, windows: Sequence[tuple[datetime, datetime]], limit: int,
                            until: datetime | None = None) -> list[tuple[str, datetime, datetime]]: ...

    def segments_mentioning(self, user_id: str, days: Sequence[tuple[date, date, int]], until: datetime | None = None
                            ) -> list[tuple[str, str]]:
        """Active L1 nodes mentioning a period in one of ``days`` ``(first, last, max_days)``, as ``(id, content)``
        (:func:`timem.store.mentions.segments_mentioning`)."""
        ...

    def adjacent_segments(self, user_id: str, node_ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]: ...


class IndexHealth(Protocol):
    """What ``timem check`` reads about the BM25 and vector indexes."""

    def get_meta(self, key: str) -> str | None: ...

    def calendar_zone(self, zone: str | None = None) -> str | None: ...

    def index_health(self) -> dict[str, Any]:
        """``{"nodes": n, "bm25_documents": n, "bm25_stale": [node id, ...], "bm25_tokenizer_current": bool,
        "non_unit_vectors": [node id, ...], "mentions_stale": [node id, ...]}``."""
        ...


class ItemRepository(Protocol):
    """Memory items (:mod:`timem.memory`) with their vectors; writes inside ``transaction``."""

    def add_item(self, item: MemoryItem, embedding: np.ndarray) -> None: ...

    def update_item(self, item_id: str, **fields: Any) -> None: ...

    def items(self, user_id: str | None = None, *, status: str | None = "active", ids: Sequence[str] | None = None,
              subject: str | None = None, attribute: str | None = None) -> list[MemoryItem]: ...

    def item_subjects(self, user_id: str) -> list[tuple[str, datetime, str]]: ...

    def item(self, item_id: str) -> MemoryItem: ...

    def item_embeddings(self, item_ids: Sequence[str]) -> dict[str, np.ndarray]: ...

    def touch_items(self, item_ids: Sequence[str], at: datetime) -> None: ...

    def items_from_sources(self, node_ids: Sequence[str]) -> list[MemoryItem]: ...

    def drop_item_sources(self, node_ids: Sequence[str], units: Sequence[str] = ()) -> dict[str, int]: ...

    def items_without_active_source(self, node_ids: Sequence[str]) -> list[MemoryItem]: ...

    def was_forgotten(self, item_id: str) -> bool: ...

    def extracted_units(self, user_id: str, mode: str) -> set[str]: ...

    def unread_segments(self, user_id: str, mode: str, limit: int | None = None) -> list[str]: ...

    def mark_extracted(self, user_id: str, unit_id: str, mode: str, n_items: int) -> None: ...


class SegmentTreePort(Protocol):
    """The segment tree of each user (SegTreeMem, arXiv 2606.04555), kept in step with the L1 memories;
    see :mod:`timem.store.segtree_tables` for what each method does."""

    def version(self, user_id: str, threshold: float, max_children: int) -> tuple[Any, ...] | None: ...

    def stored_version(self, user_id: str, threshold: float, max_children: int
                       ) -> tuple[tuple[Any, ...], int] | None: ...

    def is_current(self, user_id: str, threshold: float, max_children: int) -> bool: ...

    def sync(self, user_id: str, threshold: float, max_children: int, *, rebuild: bool = False) -> SyncReport: ...

    def sync_users(self, user_ids: Sequence[str], threshold: float, max_children: int, *,
                   rebuild: bool = False) -> dict[str, SyncReport]: ...

    def load(self, user_id: str) -> list[SegNode]: ...

    def summaries(self, user_id: str) -> dict[str, str]: ...

    def save_summary(self, user_id: str, node: SegNode, summary: str, model_id: str, prompt_version: str) -> None: ...

    def view(self, user_id: str, version: Any, leaf_ids: Sequence[str], query_vec: np.ndarray, per_height: int,
             until: datetime | None, max_height: int) -> TreeView: ...

    def leaves_under(self, user_id: str, parent_ids: Sequence[str]) -> list[tuple[str, str, int, datetime]]: ...


class Maintenance(Protocol):
    """Erase and compaction, idempotent write requests, LLM usage and counts."""

    @property
    def path(self) -> str:
        """The database file (or ``":memory:"``)."""
        ...

    @property
    def dim(self) -> int:
        """The embedding dimension of the vectors the store holds."""
        ...

    @property
    def vector_index(self) -> str:
        """``"exact"`` or ``"hnsw"``."""
        ...

    def close(self) -> None: ...

    def compact(self) -> dict[str, float]: ...

    def checkpoint(self) -> None: ...

    def erase_user(self, user_id: str) -> dict[str, int]: ...

    def user_texts(self, user_id: str) -> list[str]: ...

    def forget_text(self, node_ids: Sequence[str], texts: Sequence[str], user_id: str | None = None, *,
                    within: Collection[str] | None = None) -> dict[str, int]: ...

    def purge_cache_mentioning(self, texts: Sequence[str]) -> int: ...

    def pseudonymise_audit(self, user_id: str, pseudonym: str) -> int: ...

    def write_request(self, user_id: str, key: str) -> tuple[str, list[str]] | None: ...

    def record_write_request(self, user_id: str, key: str, fingerprint: str, turn_ids: Sequence[str]) -> None: ...

    def llm_usage(self, since: datetime) -> dict[str, dict[str, float]]: ...

    def stats(self) -> dict[str, Any]: ...

    def merge_file(self, other: str | Path) -> dict[str, int]:
        """Copy every row of another TiMem file's users into this store (``timem ingest --ray``)."""
        ...


class JobQueue(Protocol):
    """The durable consolidation queue (:mod:`timem.store.jobs`)."""

    def enqueue_job(self, user_id: str, session_ids: Sequence[str], turn_ids: Sequence[str]) -> int: ...

    def claim_jobs(self, user_id: str | None = None, *, prefer: Sequence[str] = ()) -> list[ConsolidationJob]: ...

    def unwritten_l1_jobs(self, user_id: str) -> list[ConsolidationJob]: ...

    def mark_jobs_l1(self, job_ids: Sequence[int]) -> None: ...

    def finish_jobs(self, job_ids: Sequence[int]) -> None: ...

    def resolve_failed_jobs(self, user_id: str) -> int: ...

    def fail_jobs(self, job_ids: Sequence[int], error: str) -> None: ...

    def retry_jobs(self, user_prefix: str = "") -> int: ...

    def release_stale_jobs(self) -> int: ...

    def open_jobs(self, user_id: str, up_to: int | None = None) -> int: ...

    def last_open_job(self, user_id: str) -> int | None: ...

    def queue_counts(self, user_prefix: str = "") -> dict[str, int]: ...

    def jobs(self, user_prefix: str = "", states: Sequence[str] = JOB_STATES, limit: int = 100
             ) -> list[ConsolidationJob]: ...


class MemoryStore(LLMCache, TraceSink, AuditSink, TurnLog, NodeRepository, Search, IndexHealth, ItemRepository,
                  Maintenance, JobQueue, Protocol):
    """Everything TiMem persists (the DuckDB :class:`~timem.store.Store` is the one implementation)."""

    @property
    def segment_tree(self) -> SegmentTreePort:
        """The users' segment trees in this store."""
        ...


if TYPE_CHECKING:  # mypy: the DuckDB store satisfies every port
    def _checks(s: Store) -> tuple[LLMCache, TraceSink, AuditSink, TurnLog, NodeRepository, Search, IndexHealth,
                                   ItemRepository, SegmentTreePort, Maintenance, JobQueue, MemoryStore]:
        return s, s, s, s, s, s, s, s, s.segment_tree, s, s, s
