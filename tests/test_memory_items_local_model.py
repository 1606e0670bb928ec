"""The LLM memory-item extractor with the real embedded model on a short slice of the scenario conversation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from memory_scenario import EN, write

from timem.config import load_config
from timem.datasets import load_dataset
from timem.engine import MemoryEngine

pytestmark = pytest.mark.slow


def test_local_model_extracts_items_or_says_why(tmp_path):
    cache = Path(os.environ.get("TIMEM_CACHE_DIR", Path.home() / ".cache" / "timem"))
    cfg = load_config(env={}, db_path=str(tmp_path / "items.duckdb"), llm_backend="local", cache_dir=str(cache),
                      consolidation_mode="extractive", memory_extractor="llm")
    path = write(tmp_path / "mia.jsonl", "mia", EN[:3])  # two sessions: home city, employer / job, morning drink
    engine = MemoryEngine.open(cfg)
    try:
        engine.ingest(load_dataset(path, "jsonl", tz=cfg.time.tz))
        items = engine.memory_items("mia")
        failed = engine.items.extraction_failures.get("mia", [])
        done = engine.store.extracted_units("mia", "llm")
        assert len(done) + len(failed) == 2  # every closed session was read or its failure recorded
        audited = engine.store.con.execute("SELECT count(*) FROM audit WHERE action = 'memory-extraction-failed'"
                                           ).fetchone()[0]
        assert audited == len(failed)
        assert all(i.subject == "Mia" for i in items)  # the validator refuses any other subject
        values = " ".join(i.value for i in items).lower()
        assert done and any(v in values for v in ("lisbon", "acme", "designer", "coffee")), (items, failed)
    finally:
        engine.close()
