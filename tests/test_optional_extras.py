"""Install extras: with the core install only (simulated by :mod:`core_only` in a subprocess), ``import timem``
works and each optional feature says which ``pip install 'timem[extra]'`` adds it; the public API's names."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import timem
from timem.errors import ConfigError, MissingExtraError, TimemError

REPO = Path(__file__).resolve().parents[1]


def run_core_only(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter with the extras' packages unimportable; this checkout's timem first."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    return subprocess.run([sys.executable, "-c", "import core_only\n" + textwrap.dedent(code)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_each_optional_feature_names_its_extra_without_it(tmp_path):
    """Before: ``timem serve`` died on ``ModuleNotFoundError: fastapi``, ``timem.open`` with the default local
    backend on ``llama_cpp`` only at the first answer, and ``import timem.service`` needed FastAPI."""
    out = run_core_only("""
        import sys
        import timem
        from timem.cli import app
        from timem.errors import MissingExtraError
        import timem.service  # its keys; create_app (FastAPI) only on first use
        import typer.testing

        for argv in (["serve", "--db", "m.duckdb"], ["mcp", "--user", "mia", "--db", "m.duckdb"],
                     ["studio", "--db", "m.duckdb"]):
            res = typer.testing.CliRunner().invoke(app, argv)
            assert isinstance(res.exception, MissingExtraError), (argv, res.exception)
            print(argv[0], "->", res.exception)
        try:
            timem.open("m.duckdb")  # llm_backend "local" is the default
        except MissingExtraError as exc:
            print("open ->", exc)
        """, tmp_path)
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(" -> ", 1) for line in out.stdout.splitlines())
    for command, extra in (("serve", "service"), ("mcp", "service"), ("studio", "studio"), ("open", "local")):
        assert f"pip install 'timem[{extra}]'" in lines[command], (command, lines[command])


def test_import_timem_is_cheap_and_gives_the_public_names(tmp_path):
    out = run_core_only("""
        import sys
        import timem, timem.models
        print("heavy:", sorted(m for m in ("duckdb", "torch", "timem.engine", "openai") if m in sys.modules))
        print("names:", timem.MemoryEngine.__name__, timem.RecallResult.__name__, timem.Config.__name__)
        """, tmp_path)
    assert out.returncode == 0, out.stderr
    assert "heavy: []" in out.stdout and "names: MemoryEngine RecallResult Config" in out.stdout
    assert {"open", "MemoryEngine", "TimemError", "__version__"} <= set(timem.__all__) <= set(dir(timem))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        timem.nope  # noqa: B018


def test_open_is_a_context_manager_with_the_library_names(tmp_path):
    """``timem.open`` takes settings by plain name and closes the file after ``with``; remember / recall /
    forget / export are the facade's methods under the library's names (no LLM here: recall only)."""
    from datetime import UTC, datetime

    at = datetime(2024, 5, 2, 9, 0, tzinfo=UTC)
    with timem.open(tmp_path / "m.duckdb", llm_backend="none", token_budget=300, cache_dir=tmp_path / "c") as mem:
        assert mem.config.recall.token_budget == 300 and not mem.has_llm
        written = mem.remember("mia", "chat-1", "I adopted a grey cat called Pixel.", at, reply="Lovely!")
        assert [n.level for n in written] == [1, 1]
        assert mem.remember("mia", "chat-1", "She is two.", at.replace(minute=2)) != []  # a message alone
        assert "Pixel" in mem.recall("mia", "What is my cat called?").context
        assert [t["text"] for t in mem.export("mia")["turns"]][-1] == "She is two."
        assert mem.forget("mia", "grey cat Pixel").segments  # a preview: nothing forgotten yet
        with pytest.raises(ConfigError, match="answering needs an LLM"):
            mem.ask("mia", "What is my cat called?")
    with pytest.raises(ConfigError, match="unknown"):
        timem.open(tmp_path / "m.duckdb", no_such_setting=1)


def test_the_missing_extra_error_is_a_timem_error_that_survives_pickling():
    """Ray hands a task's error back pickled; a custom ``__init__`` without ``__reduce__`` breaks that."""
    err = MissingExtraError("timem serve", "service", "fastapi")
    again = pickle.loads(pickle.dumps(err))
    assert isinstance(again, ConfigError) and isinstance(again, TimemError)
    assert str(again) == str(err) and again.extra == "service" and "pip install 'timem[service]'" in str(err)
