"""`timem erase` refused an answer piped in (stdin not a terminal: exit 2, "pass --yes") while `timem forget` took
`echo y |` and forgot: two rules for one question. Both now ask only at a terminal: with stdin not a terminal and no
--yes they refuse with a usage error naming --yes (exit code 2) and change nothing, even with "y" piped in; --yes does
it without asking. Through the real entry point (:func:`timem.cli.main`), on a real DuckDB file."""

from __future__ import annotations

import io
import sys

import duckdb
import pytest
from test_cli import chat_file, cli_env, ingested_db, run  # noqa: F401  (fixtures)

import timem.cli as cli
from timem import cli_common


@pytest.fixture()
def db(ingested_db):  # noqa: F811
    return ingested_db


def _active(db: str) -> tuple[int, int]:
    """(active L1 segments, turns) in the file."""
    con = duckdb.connect(db, read_only=True)
    try:
        seg = con.execute("SELECT count(*) FROM nodes WHERE level = 1 AND status = 'active'").fetchone()[0]
        return seg, con.execute("SELECT count(*) FROM turns").fetchone()[0]
    finally:
        con.close()


def _args(cmd: str, db: str) -> list[str]:
    if cmd == "forget":
        return ["forget", "Rex", "--user", "zoe", "--db", db]
    if cmd == "erase-user":
        return ["erase-user", "zoe", "--db", db]
    con = duckdb.connect(db, read_only=True)
    try:
        seg = con.execute("SELECT id FROM nodes WHERE level = 1 AND status = 'active' ORDER BY id").fetchone()[0]
    finally:
        con.close()
    return ["erase", seg, "--db", db, "--llm", "none"]


def _main(monkeypatch, capsys, args: list[str], stdin: str) -> tuple[int, str]:
    """``timem ARGS`` with ``stdin`` piped in: exit code and stderr (one line per message)."""
    monkeypatch.setattr(sys, "argv", ["timem", *args])
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        cli.main()
        raise SystemExit(0)
    return int(exc.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize("cmd", ["forget", "erase", "erase-user"])
@pytest.mark.parametrize("stdin", ["y\n", ""])
def test_without_a_terminal_a_piped_answer_is_refused_the_same_way(db, monkeypatch, capsys, cmd, stdin):
    before = _active(db)
    code, err = _main(monkeypatch, capsys, _args(cmd, db), stdin)
    assert code == 2, err
    verb, done = ("forget", "forgotten") if cmd == "forget" else ("erase", "erased")
    assert err.startswith("error: ") and "stdin is not a terminal" in err, err
    assert f"pass --yes to {verb} without asking" in err and f"Nothing was {done}." in err, err
    assert _active(db) == before


@pytest.mark.parametrize("cmd", ["forget", "erase", "erase-user"])
def test_yes_does_it_without_asking(db, monkeypatch, capsys, cmd):
    segments, turns = _active(db)
    code, err = _main(monkeypatch, capsys, [*_args(cmd, db), "--yes"], "")
    assert code == 0, err
    assert _active(db) < (segments, turns)


@pytest.mark.parametrize("cmd", ["forget", "erase"])
def test_at_a_terminal_both_ask_and_take_the_answer(db, monkeypatch, capsys, cmd):
    monkeypatch.setattr(cli_common, "_stdin_is_terminal", lambda: True)
    before = _active(db)
    code, err = _main(monkeypatch, capsys, _args(cmd, db), "n\n")
    assert code == 1 and "aborted: nothing" in err and _active(db) == before, err
    code, err = _main(monkeypatch, capsys, _args(cmd, db), "y\n")
    assert code == 0 and _active(db)[0] < before[0], err
