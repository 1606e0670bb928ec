"""A new-user trial of the command line (docs/cli.md: a command-line mistake exits 2, naming the flag and what to
give): `timem ingest FILE --limit 0` / `--limit -3`, `--sample nosuchconv` and `--set quotas=...` mistakes exited 1
as TiMem errors (or ran: `timem bench --max-questions 0` / `--window -5`); declining `timem forget`'s prompt exited
0; help was drawn 80 columns wide in a 120-column terminal whose TERM is dumb, and cut words at 80 columns."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import typer
import typer.main
from conftest import LOCOMO_DEV
from test_cli import chat_file, cli_env, run  # noqa: F401  (fixtures)
from typer.testing import CliRunner

from timem.bench.cli import bench_app
from timem.cli import app
from timem.config import Config

FIXTURES = Path(__file__).parent / "fixtures"
LME = str(FIXTURES / "longmemeval_tiny.json")  # instances tiny0001, tiny0002_abs, tiny0003
LOCOMO = str(FIXTURES / "locomo_tiny.json")  # conversations conv-a, conv-b


def _usage_error(of: typer.Typer, *args: str) -> str:
    """The one message of a usage error (exit code 2) that typer's runner draws in a box, as one line."""
    res = CliRunner().invoke(of, list(args), terminal_width=400)
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit), (args, res.exit_code, res.output)
    return " ".join(re.sub(r"[│╭╰─╮╯]", " ", res.output).split())


@pytest.mark.parametrize(("args", "said"), [
    (("ingest", "{jsonl}", "--format", "jsonl", "--limit", "0"),
     "--limit 0 is below 1; give a whole number of 1 or more, or omit it for every instance"),
    (("ingest", LME, "--format", "longmemeval", "--limit", "-3"), "--limit -3 is below 1"),
    (("ingest", LOCOMO, "--format", "locomo", "--sample", "nosuchconv"),
     f"--sample 'nosuchconv' names nosuchconv, which {LOCOMO} does not hold; use ids it holds (conv-a, conv-b), or "
     "omit --sample for all"),
    (("ingest", LME, "--format", "longmemeval", "--sample", "tiny0003,nope"),
     "--sample 'tiny0003,nope' names nope, which"),
    (("ingest", LME, "--format", "longmemeval", "--limit", "1", "--sample", "tiny0003"),
     "names tiny0003, which"),  # not among the first instance
    (("ingest", "{jsonl}", "--format", "jsonl", "--limit", "3"),
     "--limit takes the first N LongMemEval instances and does not apply to jsonl; leave it out"),
    (("ingest", LOCOMO, "--format", "locomo", "--limit", "1"), "pick conversations with --sample ID,ID"),
    (("ingest", "{jsonl}", "--format", "jsonl", "--sample", "zoe"),
     "--sample picks LoCoMo conversations or LongMemEval instances and does not apply to jsonl"),
    (("ingest", "{jsonl}", "--format", "jsonl", "--set", 'quotas={"simple": {"1": 0}}'),
     "--set KEY=VALUE got 'quotas={\"simple\": {\"1\": 0}}': quotas takes a JSON object (e.g. {\"simple\": {\"1\": 60, "
     "\"2\": 4}}; a table in the TOML file is easier): quotas['simple'] is {1: 0}; give levels 1-5"),
    (("ingest", "{jsonl}", "--format", "jsonl", "--set", 'quotas={"easy": {"1": 5}}'),
     "quotas names 'easy'; use simple, hybrid or complex"),
    (("ingest", "{jsonl}", "--format", "jsonl", "--set", 'quotas={"simple": {"1": 5, "9": 1}}'),
     "quotas['simple'] is {1: 5, 9: 1}"),
    (("ingest", "{jsonl}", "--format", "jsonl", "--set", 'quotas={"simple": {"1": 5, "2": -1}}'),
     "quotas['simple'] is {1: 5, 2: -1}"),
    (("ask", "q", "--user", "zoe", "--set", 'quotas={"hybrid": {"2": 4}}'), "quotas['hybrid'] is {2: 4}"),
    (("eval-recall", str(LOCOMO_DEV), "--sample", "conv-99"),
     f"--sample 'conv-99' names conv-99, which {LOCOMO_DEV} does not hold; use ids it holds (conv-26, conv-30)"),
    (("bench", "locomo", str(LOCOMO_DEV), "--sample", "conv-99"), "--sample 'conv-99' names conv-99, which"),
    (("bench", "locomo", str(LOCOMO_DEV), "--sample", " , "), "--sample ' , ' names no conversation"),
    (("bench", "locomo", str(LOCOMO_DEV), "--max-questions", "0"), "--max-questions 0 is below 1"),
    (("bench", "locomo", str(LOCOMO_DEV), "--window", "-5"), "--window -5 is below 1"),
    (("bench", "longmemeval", LME, "--limit", "0"), "--limit 0 is below 1"),
    (("bench", "suite", "locomo", str(LOCOMO_DEV), "--limit", "2"),
     "--limit takes the first N LongMemEval instances and does not apply to locomo"),
    (("bench", "suite", "longmemeval", LME, "--sample", "nope"), "--sample 'nope' names nope, which"),
])
def test_a_bad_value_of_ingest_and_bench_options_is_a_usage_error(cli_env, chat_file, args, said):  # noqa: F811
    """Each exited 1 (a TiMem error) or ran; each is now a usage error (exit code 2) naming the flag and what to give,
    and nothing is written: no database, no run folder."""
    args = tuple(str(chat_file) if a == "{jsonl}" else a for a in args)
    of, args = (bench_app, args[1:]) if args[0] == "bench" else (app, args)
    tail = ("--out-root", str(cli_env / "runs")) if args[0] == "suite" else \
        ("--out", str(cli_env / "runs")) if of is bench_app else ()
    out = _usage_error(of, *args, "--db", str(cli_env / "t.duckdb"), *tail)
    assert said in out and "Invalid value" not in out, out
    assert not (cli_env / "t.duckdb").exists() and not (cli_env / "runs").exists()


def test_a_quota_table_that_leaves_out_a_complexity_keeps_its_default():
    """`--set quotas={"simple": {"1": 5}}` (or a TOML file with only [recall.quotas.simple]) replaced the whole
    table: every hybrid or complex question then failed, "quotas['hybrid'] must give L1 a positive quota"."""
    from timem.recall.planner import make_plan
    from timem.settings import DEFAULT_QUOTAS

    cfg = Config(quotas={"simple": {1: 5, 2: 1}})
    assert cfg.recall.quotas == {"simple": {1: 5, 2: 1}, "hybrid": DEFAULT_QUOTAS["hybrid"],
                                 "complex": DEFAULT_QUOTAS["complex"]}
    plan = make_plan("hybrid", "When did I move?", datetime(2024, 5, 1, tzinfo=UTC), cfg, "override")
    assert plan.levels == DEFAULT_QUOTAS["hybrid"]


def test_a_good_limit_and_sample_still_ingest(cli_env):  # noqa: F811
    db = str(cli_env / "t.duckdb")
    code, out = run("ingest", LME, "--format", "longmemeval", "--limit", "2", "--sample", "tiny0001", "--llm", "none",
                    "--mode", "extractive", "--db", db)
    assert code == 0 and "ingested 1 user(s)" in out, out


def test_declining_forget_forgets_nothing_and_exits_1(cli_env, chat_file, monkeypatch):  # noqa: F811
    """Answering "n" to `timem forget`'s question exited 0 ("nothing forgotten"), as if it had been done: a script
    could not tell. A declined destructive command is "aborted", exit code 1 (click's confirm(abort=True) does the
    same); "y" forgets, exit code 0."""
    from timem import cli_common

    monkeypatch.setattr(cli_common, "_stdin_is_terminal", lambda: True)  # it asks at a terminal only
    db = str(cli_env / "t.duckdb")
    code, out = run("ingest", str(chat_file), "--format", "jsonl", "--llm", "none", "--mode", "extractive", "--db", db)
    assert code == 0, out
    args = ["forget", "Rex", "--user", "zoe", "--db", db]
    res = CliRunner().invoke(app, args, input="n\n")
    assert res.exit_code == 1, res.output
    assert "aborted: nothing forgotten" in res.output and "forgot " not in res.output, res.output
    res = CliRunner().invoke(app, [*args, "--yes"])  # still there: the preview finds it again
    assert res.exit_code == 0 and "forgot " in res.output, res.output


def _help_commands() -> list[tuple[tuple[str, ...], object]]:
    """Every command of ``timem`` (``timem bench`` mounted, as the entry point does), groups included, with its path."""
    from timem.cli import _mount_bench

    _mount_bench()

    def walk(command: object, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
        subs = getattr(command, "commands", None) or {}
        return [(path, command), *(p for name, sub in sorted(subs.items()) for p in walk(sub, (*path, name)))]

    return walk(typer.main.get_command(app))


@pytest.mark.parametrize("columns", [80, 120])
def test_no_help_cuts_a_word_at_80_or_120_columns(columns):
    """At 80 columns `timem ingest --help` cut "(docs/input-format…" and "(docs/configuratio…", and split the
    --format column "<locomo|longmemeva" / "l|jsonl>"; `timem bench locomo --help` cut its --out default. Every
    word of every help text and type column is now whole."""
    import click

    commands = _help_commands()
    assert len(commands) > 30 and any(path[:1] == ("bench",) for path, _ in commands)
    for path, command in commands:
        res = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(columns)})
        assert res.exit_code == 0, (path, res.output)
        assert "…" not in res.output, (path, res.output)
        ctx = click.Context(command)  # type: ignore[arg-type]
        words = set(re.sub(r"[│╭╰─╮╯]", " ", res.output).split())
        params = getattr(command, "params", [])
        texts = [getattr(p, "help", None) or "" for p in params]
        texts += [p.display_type_rich(ctx) or "" for p in params if hasattr(p, "display_type_rich")]
        cut = sorted({w for t in texts for w in t.split() if w not in words})
        assert not cut, (path, cut, res.output)


def test_help_is_as_wide_as_a_dumb_terminal():
    """`COLUMNS=120 timem forget --help` on a terminal whose TERM is dumb (an editor's or IDE's terminal) was drawn
    80 columns wide: rich takes such a terminal for 80 x 25 whatever COLUMNS says. FORCE_COLOR makes the piped
    output a terminal to rich, as a real one is."""
    env = {**os.environ, "TERM": "dumb", "COLUMNS": "120", "FORCE_COLOR": "1"}
    env.pop("LINES", None)
    env.pop("TERMINAL_WIDTH", None)
    res = subprocess.run([sys.executable, "-m", "timem.cli", "forget", "--help"], capture_output=True, text=True,
                         env=env, timeout=120)
    lines = re.sub(r"\x1b\[[0-9;]*m", "", res.stdout).splitlines()
    assert res.returncode == 0 and max(len(line) for line in lines) == 120, "\n".join(lines)
    assert any(line.rstrip().endswith("it asks only at a terminal:") for line in lines), "\n".join(lines)


def test_the_docs_name_the_new_usage_errors():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    flat = " ".join(doc.split())
    for said in ("`--limit`", "`--max-questions`", "`--window`", "an id the file does not hold",
                 "declined at the prompt"):
        assert said in flat, said
