"""A new-user trial: `timem erase-user conv-30 </dev/null` hard-erased 369 turns with no prompt and no `--yes`, and
`timem erase` did the same, while the reversible `timem forget` asks first. Both now show what goes and ask; with no
terminal on stdin and no --yes they refuse (exit code 2) and the store is unchanged."""

from __future__ import annotations

import duckdb
import pytest
from test_cli import chat_file, cli_env, ingested_db, run  # noqa: F401  (fixtures)

from timem import cli_common
from timem.tokens import one_line


def _count(db: str, sql: str) -> int:
    con = duckdb.connect(db, read_only=True)
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


@pytest.fixture()
def db(ingested_db):  # noqa: F811
    return ingested_db


def _segment(db: str) -> str:
    con = duckdb.connect(db, read_only=True)
    try:
        return con.execute("SELECT id FROM nodes WHERE level = 1 AND status = 'active' ORDER BY id").fetchone()[0]
    finally:
        con.close()


@pytest.mark.parametrize("cmd", ["erase-user", "erase"])
def test_erase_without_a_terminal_and_without_yes_refuses_and_changes_nothing(db, cmd):
    target = "zoe" if cmd == "erase-user" else _segment(db)
    turns, nodes = _count(db, "SELECT count(*) FROM turns"), _count(db, "SELECT count(*) FROM nodes")
    code, out = run(cmd, target, "--db", db)  # the runner's stdin is not a terminal (as </dev/null)
    assert code == 2, out
    out = " ".join(out.replace("│", " ").split())  # the runner draws a usage error in a box (`timem`: one line)
    assert "--yes" in out and "not a terminal" in out and "Nothing was erased" in out, out
    assert _count(db, "SELECT count(*) FROM turns") == turns == 4
    assert _count(db, "SELECT count(*) FROM nodes") == nodes


def test_erase_user_shows_counts_and_asks_at_a_terminal(db, monkeypatch):
    from typer.testing import CliRunner

    from timem.cli import app

    monkeypatch.setattr(cli_common, "_stdin_is_terminal", lambda: True)
    res = CliRunner().invoke(app, ["erase-user", "zoe", "--db", db], input="n\n")
    assert res.exit_code == 1 and "aborted: nothing erased" in res.output, res.output
    assert "4 turn(s) in 2 session(s)" in res.output and "cannot be undone" in res.output, res.output
    assert _count(db, "SELECT count(*) FROM turns") == 4
    res = CliRunner().invoke(app, ["erase-user", "zoe", "--db", db], input="y\n")
    assert res.exit_code == 0 and "erased user zoe" in res.output, res.output
    assert _count(db, "SELECT count(*) FROM turns") == 0


def test_erase_lists_the_memories_and_yes_erases_without_asking(db):
    seg = _segment(db)
    code, out = run("erase", seg, "--db", db, "--llm", "none", "--yes")
    assert code == 0 and seg in out and "source turn(s)" in out and "erased 1 memory(ies)" in out, out
    assert _count(db, f"SELECT count(*) FROM nodes WHERE id = '{seg}'") == 0


def test_erase_user_yes_erases_without_asking(db):
    code, out = run("erase-user", "zoe", "--db", db, "--yes")
    assert code == 0 and "erased user zoe" in out, out
    assert _count(db, "SELECT count(*) FROM turns") == 0


def test_preview_cuts_at_a_word_and_marks_the_cut():
    said = one_line("I keep the watch, a gift from my grandmother, in a drawer", 40)
    assert said.endswith("…") and len(said) <= 40 and said == "I keep the watch, a gift from my…", said


def test_erase_user_preview_counts_what_goes_forgotten_and_superseded_included(db):
    """A new-user trial: the preview said "4 memory item(s)" and the erase then removed 6 memory_items: it counted
    active items (and nodes) only, while the erase removes every status."""
    import re

    code, out = run("forget", "I adopted a rescue dog called Rex", "--user", "zoe", "--db", db, "--yes")
    assert code == 0, out  # a forgotten (deleted) node
    nodes, items = _count(db, "SELECT count(*) FROM nodes"), _count(db, "SELECT count(*) FROM memory_items")
    assert _count(db, "SELECT count(*) FROM nodes WHERE status <> 'active'") > 0
    code, out = run("erase-user", "zoe", "--db", db, "--yes")
    assert code == 0 and f"{nodes} memory node(s), {items} memory item(s)" in out, out
    erased = {k: int(v) for v, k in re.findall(r"(\d+) (nodes|memory_items)\b", out.split("erased user")[1])}
    assert erased.get("nodes", nodes) == nodes and erased.get("memory_items", items) == items, out
