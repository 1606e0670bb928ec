"""What the store's function modules need of an open :class:`~timem.store.duckdb_store.Store`.

The segment-tree tables (:mod:`timem.store.segtree_tables`, :mod:`timem.store.segtree_view`) and the file merge
(:mod:`timem.store.merge`) are functions over an open store. They take it as a :class:`StoreHandle`, so that
:mod:`timem.store.duckdb_store`, which offers them as ``Store.segment_tree`` and ``Store.merge_file``, imports them
and they do not import it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol

import duckdb
import numpy as np

from timem.store.memory_index import MemoryIndex
from timem.store.working_set import WorkingSet


class StoreHandle(Protocol):
    """An open TiMem DuckDB file: its connection, identity and the few writes the function modules call."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The open DuckDB connection."""
        ...

    @property
    def path(self) -> str:
        """The database file (or ``":memory:"``)."""
        ...

    @property
    def dim(self) -> int:
        """The embedding dimension of the stored vectors."""
        ...

    @property
    def embed_model_id(self) -> str:
        """The id of the embedder whose vectors the file holds."""
        ...

    @property
    def schema_version(self) -> int:
        """The schema version the file was migrated to (:func:`timem.store.migrations.migrate`)."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """One DuckDB transaction (nested calls join the outer one)."""
        ...

    def embeddings(self, node_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``node_ids``, by id."""
        ...

    @property
    def memory_index(self) -> MemoryIndex:
        """The store's in-memory copies and their budget (:mod:`timem.store.memory_index`)."""
        ...

    def working_set(self, user_id: str) -> WorkingSet | None:
        """The user's node rows in memory at the current nodes version, or ``None`` (:mod:`timem.store.working_set`)."""
        ...

    def mark_nodes_written(self) -> str:
        """Note that nodes were written (a fresh data version token, returned)."""
        ...
