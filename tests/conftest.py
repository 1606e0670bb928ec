"""Shared fixtures: the real MiniLM embedder (loaded once), a real DuckDB file per test, isolated HOME."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"  #: the tests' real inputs, with their source and license (tests/data/README.md)
LOCOMO_DEV = DATA / "locomo-dev.json"  #: two LoCoMo conversations (conv-26, conv-30)
CASES = DATA / "cases" / "found-by-trying"  #: inputs that reproduce faults found by trying the product


@pytest.fixture(scope="session")
def embedder():
    from timem.embed.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


@pytest.fixture(scope="session")
def fake_embedder():
    """The deterministic hashing embedder (:mod:`timem.embed.fake`) for logic tests. A module that does not
    depend on meaning overrides ``embedder`` with it (``embedder = fake_embedder_fixture``), and its
    ``store`` then holds the fake's vectors."""
    from timem.embed.fake import HashingEmbedder

    return HashingEmbedder()


@pytest.fixture(scope="module")
def ray_cluster():
    """A local 2-CPU Ray cluster for the tests of one module (``--ray local`` then joins it); stopped after the
    module, because its idle workers cost the rest of the suite about 8 % of the CPU."""
    ray = pytest.importorskip("ray")
    from timem.cluster import connect

    started = connect("local")
    yield
    if started:
        ray.shutdown()


@pytest.fixture()
def store(tmp_path, embedder):
    from timem.store import Store

    s = Store(tmp_path / "timem.duckdb", embedder.model_id, embedder.dim)
    yield s
    s.close()


@pytest.fixture(scope="session")
def locomo_dev() -> Path:
    """The LoCoMo dev file in the repository (:data:`LOCOMO_DEV`)."""
    return LOCOMO_DEV
