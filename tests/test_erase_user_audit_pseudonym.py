"""Found by trying it: after `timem erase-user U` the audit log still named U on every row of U's history (item added,
forget, restore …), and by an unkeyed hash of U and the content in their node and item ids. A person who asks to be
erased expects the id gone too. Decided: the audit log still records that an erase happened and how much (the
``erase-user`` row and its counts), and each row of U keeps its action and time, but U's id becomes a pseudonym drawn
at random for that erase (``erased-`` and 12 hex digits: it links U's rows to the erase, and nothing in the file leads
back to U), node and item ids of U's rows go, and their detail stays redacted. Real CLI entry, real DuckDB file."""

from __future__ import annotations

import json
import re

import pytest
from test_cli import cli_env, run  # noqa: F401  (fixture)

USER, OTHER = "zoe-4417", "bo-2290"


@pytest.fixture()
def db(cli_env):  # noqa: F811
    chat = cli_env / "chat.jsonl"
    lines = [(USER, "user", "I live in Porto and I adopted a dog called Rex.", "2024-05-02T09:00:00"),
             (USER, "assistant", "Lovely!", "2024-05-02T09:00:30"),
             (OTHER, "user", "I live in Lisbon.", "2024-05-02T10:00:00")]
    chat.write_text("".join(json.dumps({"user_id": u, "session_id": "s1", "role": r, "text": t, "timestamp": ts})
                            + "\n" for u, r, t, ts in lines))
    path = str(cli_env / "t.duckdb")
    assert run("ingest", str(chat), "--format", "jsonl", "--llm", "none", "--mode", "extractive", "--db", path)[0] == 0
    for user, what in ((USER, "Rex"), (OTHER, "Lisbon")):  # audit rows of both: forget (soft delete)
        assert run("forget", what, "--user", user, "--db", path, "--yes")[0] == 0
    return path


def _audit(path: str) -> list[tuple]:
    import duckdb

    con = duckdb.connect(path, read_only=True)
    try:
        return con.execute("SELECT action, user_id, node_id, detail FROM audit ORDER BY logged_at").fetchall()
    finally:
        con.close()


def test_the_audit_log_keeps_the_erase_but_not_the_user_id(db):
    before = _audit(db)
    mine = [r for r in before if r[1] == USER]
    assert mine and any(r[0] == "soft-delete" for r in mine)
    others = [r for r in before if r[1] == OTHER]

    code, out = run("erase-user", USER, "--db", db, "--yes")
    assert code == 0, out
    after = _audit(db)
    assert not any(USER in str(value) for row in after for value in row), [r for r in after if USER in str(r)]
    (erase,) = [r for r in after if r[0] == "erase-user"]
    pseudonym = erase[1]
    assert re.fullmatch(r"erased-[0-9a-f]{12}", pseudonym), erase
    counts = json.loads(erase[3])["counts"]
    assert counts["turns"] == 2 and counts["nodes"] >= 2  # how much was erased stays on record
    was_mine = [r for r in after if r[1] == pseudonym and r[0] != "erase-user"]
    assert [r[0] for r in was_mine] == [r[0] for r in mine]  # each row of the user keeps its action, in order
    assert all(r[2] is None and json.loads(r[3]) == {"redacted": "hard erase"} for r in was_mine)
    assert [r for r in after if r[1] == OTHER] == others  # another user's rows are untouched
    with open(db, "rb") as fh:
        assert USER.encode() not in fh.read()  # nowhere in the rewritten file

    code, out = run("erase-user", OTHER, "--db", db, "--yes")
    assert code == 0, out
    second = [r[1] for r in _audit(db) if r[0] == "erase-user"]
    assert len(set(second)) == 2  # a new pseudonym per erase: two erased users are not one
