"""What the first recall of a process loads, loaded before it (MemoryEngine.warm_recall): the embedder's model, the
centroid planner's class centroids and the tokenizer. Found in the studio: its first chat recall without an LLM took
5.6-9.4 s (plan stage), the next ones 0.1-0.5 s; the studio now warms in a background thread as it opens the store,
and the memory service (which loaded only the model) and the MCP server warm all of it at start. The centroids are
computed once when the warm-up and a first recall ask for them at the same time."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from service_support import engine_factory

from timem.config import load_config
from timem.engine import MemoryEngine
from timem.recall import planner
from timem.recall.planner import CentroidPlanner


@pytest.fixture()
def no_centroids(monkeypatch):
    monkeypatch.setattr(planner, "_CENTROIDS", {})
    return planner


def _key(embedder) -> tuple[str, str]:
    return embedder.model_id, planner._PACKAGED


def test_warm_recall_computes_the_planner_centroids(tmp_path, fake_embedder, no_centroids):
    eng = engine_factory(tmp_path / "w.duckdb", fake_embedder)()
    try:
        eng.warm_recall()
        assert _key(fake_embedder) in no_centroids._CENTROIDS
        assert eng.users() == []  # nothing read into or written to the store
    finally:
        eng.close()


def test_the_service_warms_recall_at_start(tmp_path, fake_embedder, no_centroids):
    from timem.service.context import Service

    service = Service(engine_factory(tmp_path / "s.duckdb", fake_embedder)())
    try:
        assert _key(fake_embedder) in no_centroids._CENTROIDS  # before the first request
    finally:
        service.close()


def test_the_studio_warms_recall_in_the_background_as_it_opens_a_store(tmp_path, monkeypatch):
    from timem.ui import state

    warmed: list[tuple[MemoryEngine, str]] = []
    monkeypatch.setattr(MemoryEngine, "warm_recall",
                        lambda self: warmed.append((self, threading.current_thread().name)))
    config = load_config(env={}, db_path=tmp_path / "studio.duckdb", llm_backend="none", cache_dir=tmp_path / "cache")
    opened = state._open_engine(str(tmp_path / "studio.duckdb"), config)
    try:
        assert opened.warming is not None
        opened.warming.join(30)
        assert warmed == [(opened.engine, "timem-recall-warm")]
    finally:
        state._open_engine.clear()
        opened.engine.close()


class _SlowEmbedder:
    """The fake embedder, each call taking a moment and counted: two threads that both compute see each other."""

    def __init__(self, inner) -> None:
        self.inner, self.model_id, self.dim, self.calls = inner, "slow-fake", inner.dim, 0

    def embed(self, texts) -> np.ndarray:
        self.calls += 1
        time.sleep(0.05)
        return self.inner.embed(texts)


def _at_once(target, n: int = 2) -> None:
    start = threading.Barrier(n)
    threads = [threading.Thread(target=lambda: (start.wait(), target())) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)


def test_centroids_asked_for_by_two_threads_at_once_are_computed_once(fake_embedder, no_centroids):
    slow = _SlowEmbedder(fake_embedder)
    _at_once(lambda: CentroidPlanner(slow))
    assert slow.calls == 3  # one batch per class, once
