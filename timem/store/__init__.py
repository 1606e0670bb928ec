"""DuckDB persistence: one file holds turns, the tree, vectors, FTS, the LLM cache and recall traces.

Code outside this package holds a store through the ports of :mod:`timem.store.ports` (usually
:class:`~timem.store.ports.MemoryStore`) and opens one with :func:`open_store`.
"""

from __future__ import annotations

from pathlib import Path

from timem.store.duckdb_store import OUT_OF_MEMORY_ADVICE, Store, out_of_memory_error
from timem.store.ports import MemoryStore


def open_store(path: str | Path, embed_model_id: str, dim: int, vector_index: str = "exact",
               working_set_mb: float | None = None, duckdb_memory_mb: float | None = None) -> MemoryStore:
    """Open (or create) the DuckDB memory store at ``path`` (``":memory:"`` for a throwaway one).

    Args:
        embed_model_id: id of the embedder whose vectors the file holds (refused if it holds another's).
        dim: the embedding dimension.
        vector_index: ``"exact"`` or ``"hnsw"`` (see :class:`~timem.store.duckdb_store.Store`).
        working_set_mb: the in-memory copies' budget (``StoreSettings.working_set_mb``; ``None``: its default).
        duckdb_memory_mb: DuckDB's buffer pool limit (``StoreSettings.duckdb_memory_mb``; ``None``: DuckDB's default).

    Raises:
        StoreError: the file cannot be opened (e.g. locked by another process) or holds another embedder's vectors.
    """
    if working_set_mb is None:
        return Store(path, embed_model_id, dim, vector_index, duckdb_memory_mb=duckdb_memory_mb)
    return Store(path, embed_model_id, dim, vector_index, working_set_mb, duckdb_memory_mb)


__all__ = ["OUT_OF_MEMORY_ADVICE", "MemoryStore", "Store", "open_store", "out_of_memory_error"]
