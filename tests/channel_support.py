"""The hand-built cases of recall's retrieval channels (``tests/data/cases/channels/*.jsonl``), each ingested once
into its own DuckDB file of a test folder (extractive, no LLM, no memory items)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import DATA

from timem.config import load_config
from timem.datasets import load_dataset
from timem.engine import MemoryEngine
from timem.store import Store

CASES = DATA / "cases" / "channels"


def case_engine(folder: Path, embedder: Any, case: str, **settings: Any) -> MemoryEngine:
    """An engine on ``folder/<case>.duckdb`` with ``settings``, the case ingested if the file has no L1 yet."""
    cfg = load_config(env={}, db_path=folder / f"{case}.duckdb", llm_backend="none",
                      consolidation_mode="extractive", cache_dir=folder / "cache", memory_extractor="rules",
                      memory_items=False, **settings)
    eng = MemoryEngine(cfg, Store(cfg.store.db_path, embedder.model_id, embedder.dim), embedder, None)
    if not eng.store.nodes(level=1):
        eng.ingest(load_dataset(CASES / f"{case}.jsonl", "jsonl", tz=cfg.time.tz, user_tz=cfg.time.user_tz))
    return eng
