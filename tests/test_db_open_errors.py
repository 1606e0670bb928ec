"""An unopenable database path gives one line with the right advice (issue 27 #10: every failure advised closing
other TiMem processes). Real DuckDB files, a real second process holding the lock, the real CLI."""

from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager

import duckdb
import pytest
from service_support import free_port

from timem.errors import StoreError
from timem.store import Store
from timem.store.duckdb_store import open_error

LOCK_ADVICE = "Close other TiMem processes"


def _open(path) -> str:
    with pytest.raises(StoreError) as err:
        Store(path, "fake", 8)
    text = str(err.value)
    assert "\n" not in text and str(path) in text and "https://" not in text and "IO Error" not in text
    return text


def test_a_file_that_is_not_duckdb(tmp_path):
    bad = tmp_path / "notes.duckdb"
    bad.write_text("these are my notes, not a database")
    text = _open(bad)
    assert "is not a DuckDB file" in text and LOCK_ADVICE not in text and "close" not in text.lower()


def test_a_conversation_file_given_as_the_database_is_refused_and_left_as_it_was(tmp_path):
    """A new-user trial passed an import file as ``--db``: DuckDB 1.5 opened that JSONL file as an empty database
    (no error), so ``timem ask`` said "no user 'demo-mia' … users: none" and ``timem stats`` printed zeros."""
    jsonl = tmp_path / "good.jsonl"
    jsonl.write_text('{"user_id": "demo-mia", "session_id": "s1", "speaker": "Mia", "role": "user", '
                     '"text": "Hi! I just moved to Lisbon.", "timestamp": "2024-04-02T08:15:00"}\n')
    before = jsonl.read_bytes()
    text = _open(jsonl)
    assert "is not a DuckDB file" in text and jsonl.read_bytes() == before
    Store(tmp_path / "empty.duckdb", "fake", 8).close()  # a new file is still created


def test_a_folder(tmp_path):
    folder = tmp_path / "memories.duckdb"
    folder.mkdir()
    text = _open(folder)
    assert "is a folder" in text and str(folder / "timem.duckdb") in text and "close" not in text.lower()


@contextmanager
def held(db):
    """A second process holding ``db`` open (DuckDB's file lock) until the block ends; yields its PID."""
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1]); "
                               "print('ready', flush=True); sys.stdin.read()", str(db)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        yield holder.pid
    finally:
        holder.communicate("")


def test_a_file_another_process_holds(tmp_path):
    db = tmp_path / "held.duckdb"
    with held(db) as pid:
        text = _open(db)
        assert f"is open in another process (PID {pid})" in text and "close the timem command" in text


@pytest.mark.parametrize("duck, expected", [
    ('IO Error: Cannot open file "/x/t.duckdb": Permission denied', "permission denied; give a path in a folder"),
    ('IO Error: Cannot open file "/x/t.duckdb": Read-only file system', "permission denied"),
    ("Serialization Error: Failed to deserialize: this file was written by a newer version of DuckDB (storage "
     "version 99)", "written by another DuckDB version"),
    ('IO Error: Could not fsync file "/dev/null": Invalid argument', "Could not fsync file"),
])
def test_other_duckdb_failures_are_one_line_without_the_lock_advice(duck, expected):
    text = open_error("/x/t.duckdb", duckdb.IOException(duck))
    assert expected in text and "\n" not in text and LOCK_ADVICE not in text and "IO Error" not in text


def test_the_cli_prints_that_one_line(tmp_path):
    """The ``timem`` entry point itself (:func:`timem.cli.main`), in a subprocess."""
    bad = tmp_path / "notes.duckdb"
    bad.write_text("not a database")
    res = subprocess.run([sys.executable, "-m", "timem.cli", "tree", "--db", str(bad), "--user", "u"],
                         capture_output=True, text=True, timeout=300)
    lines = [ln for ln in (res.stdout + res.stderr).splitlines() if ln.strip()]
    assert res.returncode == 1 and len(lines) == 1, res.stdout + res.stderr
    assert lines[0].startswith("error: ") and "is not a DuckDB file" in lines[0] and LOCK_ADVICE not in lines[0]


def test_serve_on_a_file_another_process_holds_prints_one_line(tmp_path):
    """A new-user trial ran `timem serve` on a file another service held: 61 lines of uvicorn startup traceback (the
    store was opened in the app's startup), where `timem stats` gives one line."""
    db = tmp_path / "held.duckdb"
    with held(db) as pid:
        res = subprocess.run([sys.executable, "-m", "timem.cli", "serve", "--db", str(db), "--llm", "none",
                              "--port", str(free_port())], capture_output=True, text=True, timeout=300)
        lines = [ln for ln in (res.stdout + res.stderr).splitlines() if ln.strip()]  # no key warning either
        assert res.returncode == 1 and len(lines) == 1, res.stdout + res.stderr
        assert lines[0].startswith("error: ") and f"is open in another process (PID {pid})" in lines[0]
