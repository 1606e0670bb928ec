"""Found by trying the command line: the memories write a week as "last week [= week of 25 March 2024]", but the
question "What happened in the week of 25 March?" got a one-day window (25 March), so that line, which mentions a
whole week, was not in it (a mentioned period counts only when it is no longer than the window). "The week of X" is
now the Monday-Sunday week holding X (:func:`timem.recall.time_window.resolve_time_window`). Real DuckDB file, real
CLI, no LLM."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from test_cli import cli_env, run  # noqa: F401  (fixture)

from timem.recall.time_window import resolve_time_window

TURNS = [
    ("s1", "I work as a data engineer at Siemens.", "2024-03-04T09:00:00+01:00"),
    ("s2", "I handed in my notice at Siemens last week.", "2024-04-02T09:18:00+02:00"),
    ("s3", "I moved to Lisbon on Tuesday.", "2024-05-12T21:00:00+01:00"),
]


def test_the_week_of_a_date_finds_a_line_that_mentions_that_week(cli_env):  # noqa: F811
    chat, db = cli_env / "sam.jsonl", str(cli_env / "sam.duckdb")
    chat.write_text("".join(json.dumps({"user_id": "sam", "session_id": s, "role": "user", "speaker": "Sam", "text": t,
                                        "timestamp": ts}) + "\n" for s, t, ts in TURNS))
    assert run("ingest", str(chat), "--llm", "none", "--db", db)[0] == 0
    code, out = run("ask", "What happened in the week of 25 March?", "--user", "sam", "--db", db, "--recall-only",
                    "--trace", "--at", "2024-06-10T12:00:00+01:00")
    assert code == 0, out
    assert "time window=2024-03-25..2024-04-01" in out and "1 mention a date in it" in out, out
    assert "handed in my notice at Siemens last week [= week of 25 March 2024]" in out, out


def test_the_week_of_a_day_that_is_no_monday():
    asked, utc = datetime(2024, 6, 10, tzinfo=UTC), ZoneInfo("UTC")
    found = resolve_time_window("What did I do the week of March 27?", asked, utc)
    assert found is not None and found[0] == "the week of March 27"
    assert (found[1].start, found[1].end) == (datetime(2024, 3, 25, tzinfo=UTC), datetime(2024, 4, 1, tzinfo=UTC))
    day = resolve_time_window("What did I do on 27 March?", asked, utc)
    assert day is not None and (day[1].end - day[1].start).days == 1
