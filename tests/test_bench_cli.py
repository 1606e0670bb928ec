"""The ``bench`` typer app: listing recipes, a retrieval-only run, publishing, and flag errors."""

from __future__ import annotations

import json

from test_bench_runner import CONVERSATION
from typer.testing import CliRunner

from timem.bench.cli import bench_app


def test_recipes_lists_every_recipe_and_suite():
    res = CliRunner().invoke(bench_app, ["recipes"])
    assert res.exit_code == 0, res.output
    assert "l2l5-hier" in res.output and "full-context" in res.output and "suites: no-llm" in res.output


def test_retrieval_only_run_and_publish(tmp_path, embedder):
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([CONVERSATION]), encoding="utf-8")
    env = {"TIMEM_CACHE_DIR": str(tmp_path / "cache"), "TIMEM_LLM_BACKEND": "none"}
    runner = CliRunner()
    out = tmp_path / "run"
    res = runner.invoke(bench_app, ["locomo", str(data), "--recipe", "hybrid-turns", "--retrieval-only",
                                    "--out", str(out), "--set", "token_budget=300"], env=env)
    assert res.exit_code == 0, res.output
    assert "hybrid-turns: 4 questions, evidence_recall" in res.output
    man = json.loads((out / "manifest.json").read_text())
    assert man["config"]["recall"]["token_budget"] == 300 and man["config"]["llm"]["llm_backend"] == "none"
    res = runner.invoke(bench_app, ["publish", str(out), "--to", str(tmp_path / "results"), "--title", "T"])
    assert res.exit_code == 0, res.output
    assert "[hybrid-turns](run/summary.md)" in (tmp_path / "results" / "README.md").read_text()


def test_bad_flags_are_reported(tmp_path):
    runner = CliRunner()
    res = runner.invoke(bench_app, ["locomo", str(tmp_path / "x.json"), "--set", "nope=1"], terminal_width=400)
    assert res.exit_code == 2 and "--set KEY=VALUE got 'nope=1'" in res.output, res.output  # a usage error
    # the other flags' mistakes are usage errors too (exit code 2), as the command line is parsed (they exited 1)
    res = runner.invoke(bench_app, ["locomo", str(tmp_path / "x.json"), "--config", "nope"], terminal_width=400)
    assert res.exit_code == 2 and "unknown recipe 'nope'; known: timem" in res.output, res.output
    res = runner.invoke(bench_app, ["locomo", str(tmp_path / "x.json"), "--judge", "gpt"], terminal_width=400)
    assert res.exit_code == 2 and "unknown --judge 'gpt'; use one of same, local, openai, openai:MODEL" in res.output
    for args, said in ((["locomo", "x.json", "--llm", "foo"], "unknown --llm 'foo'; use one of local, openai, none"),
                       (["longmemeval", "x.json", "--recipe", "nope"], "unknown recipe 'nope'"),
                       (["suite", "locomo", "x.json", "--suite", "nope"], "unknown --suite 'nope'; use one of no-llm"),
                       (["suite", "locomo", "x.json", "--recipes", "timem,nope"], "unknown recipe 'nope'"),
                       (["suite", "lme", "x.json"], "DATASET must be locomo or longmemeval, got 'lme'"),
                       (["locomo", "x.json", "--judge-base-url", "http://x"], "--judge-base-url needs --judge openai")):
        res = runner.invoke(bench_app, args, terminal_width=400)
        assert res.exit_code == 2 and said in res.output, (args, res.exit_code, res.output)


def test_a_toml_file_given_as_recipe_points_to_settings():
    import pytest

    from timem.bench.recipes import get_recipe
    from timem.errors import ConfigError

    with pytest.raises(ConfigError, match="--settings"):
        get_recipe("my-settings.toml")
