"""The DuckDB memory limit in effect (setting ``duckdb_memory_mb``, else DuckDB's default) is shown by ``timem stats``
and the service's ``GET /v1/about``: a new-user trial found no view that showed it."""

from __future__ import annotations

import json

import pytest
from service_support import client, running
from test_cli import cli_env, run  # noqa: F401  (fixture)

from timem.config import load_config
from timem.engine import MemoryEngine
from timem.service import KeyFile
from timem.store import Store


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    return fake_embedder


def test_timem_stats_shows_the_duckdb_memory_limit(cli_env, monkeypatch):  # noqa: F811
    db = str(cli_env / "t.duckdb")
    path = cli_env / "zoe.jsonl"
    path.write_text(json.dumps({"user_id": "zoe", "session_id": "s1", "role": "user", "text": "I live in Porto.",
                                "timestamp": "2024-05-01T10:00:00"}) + "\n")
    assert run("ingest", str(path), "--format", "jsonl", "--llm", "none", "--l1-only", "--db", db)[0] == 0
    code, out = run("stats", "--db", db)
    assert code == 0 and "duckdb_memory_limit: " in out and "(DuckDB's default: 80 % of the RAM; duckdb_memory_mb " \
        "sets it)" in out, out
    monkeypatch.setenv("TIMEM_DUCKDB_MEMORY_MB", "128")
    code, out = run("stats", "--db", db, "--json")
    assert code == 0 and json.loads(out)["duckdb_memory_limit"] == "128.0 MiB (duckdb_memory_mb)", out


@pytest.mark.parametrize(("mb", "shown"), [(96, "96.0 MiB (duckdb_memory_mb)"), (None, "(DuckDB's default")])
def test_the_service_about_shows_the_duckdb_memory_limit(tmp_path, embedder, mb, shown):
    db = tmp_path / "timem.duckdb"

    def make() -> MemoryEngine:
        cfg = load_config(env={}, db_path=db, llm_backend="none", cache_dir=tmp_path / "cache", online_queue=False,
                          duckdb_memory_mb=mb)
        return MemoryEngine(cfg, Store(db, embedder.model_id, embedder.dim, duckdb_memory_mb=mb), embedder, None)

    kf = KeyFile(tmp_path / "keys.json")
    key = kf.add("acme")
    with running(make, kf) as base, client(base, key) as http:
        about = http.get("/v1/about").json()
    assert shown in about["duckdb_memory_limit"], about
