"""The command line creates only users the studio and the memory service take (:func:`timem.ids.check_service_id`).
A new-user trial: ``timem ingest`` took the user id "ana smith", which the studio and the service refuse."""

from __future__ import annotations

import json

import duckdb
import pytest
from test_cli import cli_env, run  # noqa: F401  (fixture)

RULE = "use 1-128 ASCII letters (a-z, A-Z; no accents, no Chinese), digits, '.', '_' or '-', starting with a letter"


def _file(path, user: str):
    path.write_text(json.dumps({"user_id": user, "session_id": "s1", "role": "user", "text": "I live in Porto.",
                                "timestamp": "2024-05-01T10:00:00"}) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("user", ["ana smith", "Zoë", "-ana"])
def test_ingest_refuses_a_user_id_the_service_refuses_and_writes_nothing(cli_env, user):  # noqa: F811
    db = cli_env / "t.duckdb"
    bad = _file(cli_env / "bad.jsonl", user)
    code, out = run("ingest", str(bad), "--format", "jsonl", "--llm", "none", "--db", str(db))
    err = out.strip().splitlines()[-1]
    assert code == 1 and err.startswith(f"error: user id {user!r} is not valid: {RULE}"), out
    assert f"rename the user in the file (the studio and the memory service take no other id) (file {bad}" in err
    assert not db.exists()  # refused before the database is opened
    # an existing database is left as it was
    assert run("ingest", str(_file(cli_env / "ok.jsonl", "ana")), "--format", "jsonl", "--llm", "none", "--l1-only",
               "--db", str(db))[0] == 0
    code, out = run("ingest", str(bad), "--format", "jsonl", "--llm", "none", "--db", str(db))
    assert code == 1 and "is not valid" in out, out
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT DISTINCT user_id FROM turns").fetchall() == [("ana",)]


def test_mcp_refuses_a_user_id_with_a_space_before_opening_anything(cli_env):  # noqa: F811
    db = cli_env / "m.duckdb"
    code, out = run("mcp", "--user", "ana smith", "--db", str(db))
    assert code == 1 and f"user id 'ana smith' is not valid: {RULE}" in out and not db.exists(), out
