"""``timem ingest --ray``: one Ray task per conversation, each into its own DuckDB file, merged into the
target database; the memories equal those of a local ingest (real Ray, MiniLM, DuckDB; extractive L2-L5)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from test_cli import cli_env, run  # noqa: F401  (fixture)

ray = pytest.importorskip("ray")
DATA = Path(__file__).parent / "fixtures" / "locomo_tiny.json"
TABLES = {
    "nodes": "SELECT id, user_id, level, content, mode, span_start, span_end, status FROM nodes ORDER BY id",
    "turns": "SELECT id, text, event_time FROM turns ORDER BY id",
    "items": "SELECT id, subject, attribute, value, valid_from, valid_to FROM memory_items ORDER BY id",
    "segtree": "SELECT id, user_id, parent_id, first_seq, last_seq FROM segtree_nodes ORDER BY user_id, id",
    "sessions": "SELECT user_id, session_id, ended FROM sessions ORDER BY ALL",
}


def _rows(db: Path) -> dict[str, list]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {k: con.execute(q).fetchall() for k, q in TABLES.items()}
    finally:
        con.close()


@pytest.mark.slow
def test_ingest_on_ray_writes_what_a_local_ingest_writes(cli_env, ray_cluster):  # noqa: F811
    base = ["ingest", str(DATA), "--format", "locomo", "--llm", "none", "--mode", "extractive"]
    code, out = run(*base, "--db", str(cli_env / "local.duckdb"))
    assert code == 0, out
    code, out = run(*base, "--db", str(cli_env / "ray.duckdb"), "--ray", "local")
    assert code == 0, out
    assert "ingested 2 user(s)" in out
    local, dist = _rows(cli_env / "local.duckdb"), _rows(cli_env / "ray.duckdb")
    assert local["nodes"] and {r[2] for r in local["nodes"]} >= {1, 2}
    assert dist == local
    code, out = run("check", "--db", str(cli_env / "ray.duckdb"))
    assert code == 0, out
    code, out = run("ask", "What did they talk about?", "--user", "conv-a", "--recall-only",
                    "--db", str(cli_env / "ray.duckdb"))
    assert code == 0 and out.strip(), out
    # existing users are refused before anything runs: the file is unchanged
    code, out = run(*base, "--db", str(cli_env / "ray.duckdb"), "--ray", "local")
    assert code == 1 and "already holds user(s)" in out
    assert _rows(cli_env / "ray.duckdb") == local


def test_merge_refuses_a_shared_user_or_another_embedder_and_copies_nothing(tmp_path, embedder):
    from timem.config import load_config
    from timem.datasets import load_dataset
    from timem.engine import MemoryEngine
    from timem.errors import StoreError
    from timem.store import Store
    from timem.store.merge import merge_file

    def build(name: str, sample: str) -> MemoryEngine:
        cfg = load_config(env={}, db_path=tmp_path / name, llm_backend="none", consolidation_mode="extractive",
                          cache_dir=tmp_path / "cache")
        eng = MemoryEngine(cfg, Store(cfg.store.db_path, embedder.model_id, embedder.dim), embedder, None)
        eng.ingest(load_dataset(DATA, "locomo", sample_ids=[sample], tz=cfg.time.tz))
        return eng

    a, b = build("a.duckdb", "conv-a"), build("b.duckdb", "conv-a")
    b.close()
    before = a.store.stats()
    with pytest.raises(StoreError, match="both hold user"):
        merge_file(a.store, tmp_path / "b.duckdb")
    assert a.store.stats() == before
    other = Store(tmp_path / "c.duckdb", "another-embedder", embedder.dim)
    other.close()
    with pytest.raises(StoreError, match="another-embedder"):
        merge_file(a.store, tmp_path / "c.duckdb")
    c = build("d.duckdb", "conv-b")
    c.close()
    counts = merge_file(a.store, tmp_path / "d.duckdb")
    assert counts["turns"] > 0 and counts["nodes"] > 0 and set(a.store.users()) == {"conv-a", "conv-b"}
    a.close()
