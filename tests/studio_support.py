"""Support for the studio tests: a scripted studio LLM and a demo store prepared once per session.

Not a test module (no ``test_`` prefix): imported by ``tests/test_app_*.py`` and
``tests/test_browser_screenshots.py``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers import consolidation_answer

from timem.llm.client import LLM
from timem.llm.fake import ScriptedBackend
from timem.llm.protocol import ChatRequest

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "data" / "demo_conversation.jsonl"
DEMO_USER = "demo-mia"
SCRIPTED_MODEL = "scripted-studio"


def studio_answer(request: ChatRequest) -> str:
    """A valid answer for every prompt the studio triggers: planner, gate, answer and consolidation."""
    props = (request.json_schema or {}).get("properties", {})
    if "keep" in props:
        return json.dumps({"keep": [1, 2, 3]})
    if "complexity" in props:
        return json.dumps({"complexity": "simple", "keywords": ["tea"], "time_expression": None})
    if request.json_schema is None:
        question = request.messages[-1].content.rsplit("Question:", 1)[-1].split("\n")[0].strip()
        return f"Scripted answer to: {question}"
    return consolidation_answer(request)


def studio_llm(store=None) -> tuple[LLM, ScriptedBackend]:
    """An :class:`LLM` over a :class:`ScriptedBackend` answering with :func:`studio_answer`."""
    backend = ScriptedBackend(studio_answer, model_id=SCRIPTED_MODEL)
    return LLM(backend, store), backend


def build_demo_db(path: Path, embedder, **config_overrides) -> Path:
    """Ingest the bundled demo into a new DuckDB file at ``path`` with the scripted LLM; returns ``path``."""
    from timem.config import load_config
    from timem.datasets import load_dataset
    from timem.engine import MemoryEngine
    from timem.store import Store

    cfg = load_config(env={}, db_path=path, llm_backend="none", **config_overrides)
    store = Store(path, embedder.model_id, embedder.dim)
    try:
        llm, _ = studio_llm(store)
        MemoryEngine(cfg, store, embedder, llm).ingest(load_dataset(DEMO, "jsonl", tz=cfg.tz))
    finally:
        store.close()
    return path


def open_engine(template: Path, workdir: Path, embedder, *, with_llm: bool = True, **config_overrides):
    """A :class:`MemoryEngine` over a fresh copy of ``template`` (scripted LLM unless ``with_llm`` is false)."""
    from timem.config import load_config
    from timem.engine import MemoryEngine
    from timem.store import Store

    db = workdir / "studio.duckdb"
    shutil.copy(template, db)
    cfg = load_config(env={}, db_path=db, llm_backend="none", cache_dir=workdir / "cache", **config_overrides)
    store = Store(db, embedder.model_id, embedder.dim)
    llm = studio_llm(store)[0] if with_llm else None
    return MemoryEngine(cfg, store, embedder, llm)
