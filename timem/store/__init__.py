"""DuckDB persistence: one file holds turns, the tree, vectors, FTS, the LLM cache and recall traces."""

from timem.store.duckdb_store import Store

__all__ = ["Store"]
