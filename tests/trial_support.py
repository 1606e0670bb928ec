"""The setup of the new-user trial tests (tests/test_forget_*_trial.py, the memory-item trials): an engine with no
LLM on the ``store`` fixture's real DuckDB file, and a user's lines said one a day, each with the assistant's
reply (:func:`fixtures`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

T0 = datetime(2024, 5, 1, 9, tzinfo=UTC)


def engine(tmp_path: Path, store: Any, embedder: Any) -> Any:
    """A :class:`~timem.engine.MemoryEngine` without an LLM (extractive consolidation, rules for the items)."""
    from timem.config import load_config
    from timem.engine import MemoryEngine

    cfg = load_config(env={}, db_path=store.path, llm_backend="none", cache_dir=tmp_path / "cache",
                      consolidation_mode="extractive", memory_extractor="rules")
    return MemoryEngine(cfg, store, embedder, None)


def case_engine(folder: Path, embedder: Any, case: Path, user: str, **settings: Any) -> Any:
    """A :class:`~timem.engine.MemoryEngine` (no LLM, extractive, no memory items, ``settings`` over the defaults) on
    ``folder/t.duckdb``, with the hand-built JSONL ``case`` ingested unless ``user`` is stored already: a module's
    fixture builds the file once, each test opens it with the settings it compares."""
    from timem.config import load_config
    from timem.datasets import load_dataset
    from timem.engine import MemoryEngine
    from timem.store import Store

    cfg = load_config(env={}, db_path=folder / "t.duckdb", llm_backend="none", consolidation_mode="extractive",
                      cache_dir=folder / "cache", memory_extractor="rules", memory_items=False, **settings)
    eng = MemoryEngine(cfg, Store(cfg.store.db_path, embedder.model_id, embedder.dim), embedder, None)
    if not eng.nodes(user_id=user):
        eng.ingest(load_dataset(case, "jsonl", tz=cfg.time.tz, user_tz=cfg.time.user_tz))
    return eng


def say(eng: Any, exchanges: Sequence[tuple[str, str]]) -> None:
    """Each ``(line, reply)`` said by Mia (user ``mia``) on its own day, in its own session."""
    for k, (line, reply) in enumerate(exchanges):
        eng.remember("mia", f"s{k}", line, T0 + timedelta(days=k), reply=reply, user_name="Mia")
    eng.extract_items(["mia"])


def say_lines(eng: Any, lines: Sequence[str]) -> list[datetime]:
    """``lines`` said by Mia as :func:`say` says them, each answered "Noted."; returns their times (UTC, one a day
    from :data:`T0`)."""
    say(eng, [(line, "Noted.") for line in lines])
    return [T0 + timedelta(days=k) for k in range(len(lines))]


def going(plan: Any) -> str:
    """The segments a forget preview takes, as one string."""
    return " | ".join(" ".join(n.content.split()) for n in plan.segments)


def fixtures(exchanges: Sequence[tuple[str, str]] = ()) -> tuple[Any, Any]:
    """``(embedder, eng)`` fixtures for a test module (``embedder, eng = fixtures(EXCHANGES)``): the hashing
    embedder, and an :func:`engine` per test in which Mia has said ``exchanges`` (:func:`say`), if any."""

    @pytest.fixture(scope="session")
    def embedder(fake_embedder: Any) -> Any:
        return fake_embedder

    @pytest.fixture()
    def eng(tmp_path: Path, store: Any, embedder: Any) -> Any:
        e = engine(tmp_path, store, embedder)
        if exchanges:
            say(e, exchanges)
        return e

    return embedder, eng


def held_back() -> Any:
    """A ``busy`` fixture for a test module (``busy = held_back()``): an engine on the ``store`` fixture's file with the
    queue on (``online_queue``) and a worker that does not get to the user's jobs during the test (not woken by
    writes, polling every 60 s), so a write stays queued whatever the machine's speed; Mia already said "I live in
    Dublin" (consolidated before the worker started)."""

    @pytest.fixture()
    def busy(tmp_path: Path, store: Any, embedder: Any, monkeypatch: Any) -> Any:
        from timem.config import load_config
        from timem.engine import MemoryEngine
        from timem.engine_queue import QueueWorker

        cfg = load_config(env={}, db_path=store.path, llm_backend="none", cache_dir=tmp_path / "cache",
                          consolidation_mode="extractive", memory_extractor="rules", online_queue=True)
        eng = MemoryEngine(cfg, store, embedder, None)
        eng.add_exchange("mia", "s0", "I live in Dublin.", "Noted.", T0, user_name="Mia")
        monkeypatch.setattr(QueueWorker, "wake", lambda self: None)
        worker = eng.start_queue_worker(poll_seconds=60.0)
        try:
            yield eng
        finally:
            worker.stop()

    return busy

