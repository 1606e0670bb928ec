"""``timem bench locomo --ray``: one Ray task per conversation (each its own DuckDB file and cache), merged
into the run folder as a local run writes it: the same ``questions.jsonl`` bytes as a local run over one
database holding every conversation (BM25 statistics are per user, :mod:`timem.store.search`).
A local 2-CPU cluster is started once for the module (real Ray, real MiniLM on the workers, real DuckDB files).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from timem.bench import manifest as manifest_mod
from timem.bench.distributed import run_on_ray
from timem.bench.recipes import get_recipe
from timem.bench.runner import BenchError, RunSpec, run_benchmark
from timem.config import load_config

ray = pytest.importorskip("ray")
DATA = Path(__file__).parent / "fixtures" / "locomo_tiny.json"
LME = Path(__file__).parent / "fixtures" / "longmemeval_tiny.json"


@pytest.fixture()
def cluster(ray_cluster):
    return ray_cluster


@pytest.fixture(autouse=True)
def fixed_git(monkeypatch):
    monkeypatch.setattr(manifest_mod, "git_info", lambda: {"commit": "0" * 40, "dirty": False})


def _cfg(cache: Path):
    return load_config(None, env={}, cache_dir=cache, llm_backend="none", consolidation_mode="extractive")


def _spec(out: Path, **kw) -> RunSpec:
    return RunSpec(dataset="locomo", data_file=DATA, recipe=get_recipe("timem"), out_dir=out, retrieval_only=True, **kw)


def _local(tmp: Path, embedder, **kw) -> bytes:
    """questions.jsonl of a local run: every selected conversation in one fresh database."""
    res = run_benchmark(_spec(tmp / "local", **kw), _cfg(tmp / "cache-local"), embedder=embedder, progress=False)
    return (res.out_dir / "questions.jsonl").read_bytes()


@pytest.mark.slow
def test_ray_run_is_byte_identical_to_local_runs(tmp_path, embedder, cluster):
    res = run_on_ray(_spec(tmp_path / "ray", include_adversarial=True), _cfg(tmp_path / "cache"), "local",
                     progress=False)
    got = (res.out_dir / "questions.jsonl").read_bytes()
    assert got == _local(tmp_path, embedder, include_adversarial=True)
    rows = [json.loads(line) for line in got.splitlines()]
    assert [r["question_id"] for r in rows] == [f"conv-a:q{i}" for i in range(4)] + [f"conv-b:q{i}" for i in range(3)]
    man = json.loads((res.out_dir / "manifest.json").read_text())
    assert man["n_questions"] == 7 and "ran on Ray (local)" in man["notes"][-1]
    assert (res.out_dir / "summary.md").exists() and (res.out_dir / "timing.jsonl").read_text().count("\n") == 7

    # --max-questions cuts the global question order: all of conv-a (3 without the adversarial one), 1 of conv-b
    cut = run_on_ray(_spec(tmp_path / "ray-cut", max_questions=4), _cfg(tmp_path / "cache2"), "local", progress=False)
    cut_rows = (cut.out_dir / "questions.jsonl").read_bytes()
    assert cut_rows == _local(tmp_path / "cut", embedder, max_questions=4)
    assert [json.loads(x)["question_id"] for x in cut_rows.splitlines()] == ["conv-a:q0", "conv-a:q1", "conv-a:q2",
                                                                            "conv-b:q0"]


def test_ray_refuses_db_and_jsonl(tmp_path):
    with pytest.raises(BenchError, match="leave --db out"):
        run_on_ray(_spec(tmp_path / "o", db=tmp_path / "x.duckdb"), _cfg(tmp_path / "c"), "local")
    spec = RunSpec(dataset="jsonl", data_file=DATA, recipe=get_recipe("timem"), out_dir=tmp_path / "o")  # type: ignore[arg-type]
    with pytest.raises(BenchError, match="not jsonl"):
        run_on_ray(spec, _cfg(tmp_path / "c"), "local")


@pytest.mark.slow
def test_ray_longmemeval_one_task_per_instance_is_byte_identical_to_a_local_run(tmp_path, embedder, cluster):
    def spec(out, **kw):
        return RunSpec(dataset="longmemeval", data_file=LME, recipe=get_recipe("timem"), out_dir=out,
                       retrieval_only=True, **kw)

    res = run_on_ray(spec(tmp_path / "ray", limit=2), _cfg(tmp_path / "cache"), "local", progress=False)
    got = (res.out_dir / "questions.jsonl").read_bytes()
    local = run_benchmark(spec(tmp_path / "local", limit=2), _cfg(tmp_path / "cache-local"), embedder=embedder,
                          progress=False)
    assert got == (local.out_dir / "questions.jsonl").read_bytes()
    rows = [json.loads(line) for line in got.splitlines()]
    assert len(rows) == 2 and len({r["question_id"] for r in rows}) == 2
    man = json.loads((res.out_dir / "manifest.json").read_text())
    assert man["selection"]["limit"] == 2 and "2 tasks" in man["db"]


def test_cli_passes_ray_through(tmp_path, monkeypatch):
    from timem.bench import distributed
    from timem.bench.cli import bench_app

    seen = {}

    def fake(spec, base, address, **kw):
        seen.update(address=address, samples=spec.samples, retrieval_only=spec.retrieval_only)
        raise BenchError("stop here")

    monkeypatch.setattr(distributed, "run_on_ray", fake)
    r = CliRunner().invoke(bench_app, ["locomo", str(DATA), "--retrieval-only", "--llm", "none", "--sample", "conv-b",
                                 "--ray", "auto", "--out", str(tmp_path / "o")])
    assert seen == {"address": "auto", "samples": ["conv-b"], "retrieval_only": True}, r.output
