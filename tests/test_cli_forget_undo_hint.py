"""Found by trying the command line: `timem forget … --yes` ended with "forgot 0 item(s) and 1 segment(s) (soft delete,
audited)" and its help says the forget is undoable, but no `timem` command restores, and the line did not say where
the undo is. It now names it (the studio's Memories page, or the service's restore route) and the hard erase."""

from __future__ import annotations

from test_cli import chat_file, cli_env, ingested_db, run  # noqa: F401  (fixtures)
from test_cli_erase_confirm import db  # noqa: F401  (fixture: a file with zoe's chat ingested)


def test_forget_says_where_the_undo_is(db):  # noqa: F811
    code, out = run("forget", "Rex", "--user", "zoe", "--db", db, "--yes")
    last = out.strip().splitlines()[-1]
    assert code == 0 and last.startswith("forgot "), out
    assert f"timem studio --db {db}" in last and "/v1/users/zoe/memories/ID/restore" in last, last
    assert "timem erase ID" in last, last
