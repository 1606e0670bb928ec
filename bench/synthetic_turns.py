"""Give a synthetic store's L1 segments the turns and sessions a real conversation has (issue 26 benchmarks).

``bench/recall_latency.py --keep-db`` builds a user's L1 segments with :meth:`Store.add_nodes` alone: no ``turns``
and no ``sessions`` rows, and no ``source_turn_ids``. A recall never reads them, but a chat write does (its
consolidation reads the user's sessions, and the working set the segments' turn seqs), so a write measured on
such a store costs what a user with one session would pay. This script adds, in SQL, for every L1 segment of the
given users that has no source turns, the two turns its text holds (``On …:\\nA: text\\nB: text``), numbered
within the segment's session in time order, the sessions (first and last turn), and the segment's
``source_turn_ids``. Texts, vectors and BM25 postings are unchanged, so a recall ranks as before.

    .venv/bin/python bench/synthetic_turns.py /work/bench100/bench-100000.duckdb --users bench-a,bench-b

Idempotent: segments that already have source turns are left alone. Prints what it added as JSON.
"""

from __future__ import annotations

import argparse
import json
import time

import duckdb

ADD_TURNS = """
INSERT INTO turns (id, user_id, session_id, seq, speaker, role, text, event_time, source_ref, image_caption,
                   ingested_at, utc_offset_minutes)
WITH seg AS (
    SELECT id, user_id, session_id, span_start, string_split(content, chr(10)) AS lines,
           row_number() OVER (PARTITION BY user_id, session_id ORDER BY span_start, id) - 1 AS k
    FROM nodes WHERE user_id = $user AND level = 1 AND len(source_turn_ids) = 0 AND session_id IS NOT NULL
), line AS (
    SELECT id, user_id, session_id, span_start, k, j, lines[j + 2] AS l
    FROM seg, range(0, 2) AS r(j) WHERE len(lines) >= j + 2
)
SELECT id || ':t' || j, user_id, session_id, 2 * k + j, split_part(l, ': ', 1), 'user',
       substr(l, strpos(l, ': ') + 2), span_start, NULL, NULL, span_start, 0
FROM line
"""

ADD_SESSIONS = """
INSERT INTO sessions
SELECT user_id, session_id, min(event_time), max(event_time), FALSE FROM turns WHERE user_id = $user
GROUP BY user_id, session_id
ON CONFLICT (user_id, session_id) DO UPDATE SET started_at = least(started_at, excluded.started_at),
    last_event_at = greatest(last_event_at, excluded.last_event_at)
"""

LINK = """
UPDATE nodes SET source_turn_ids = [id || ':t0', id || ':t1']
WHERE user_id = $user AND level = 1 AND len(source_turn_ids) = 0 AND session_id IS NOT NULL
"""


def add_turns(con: duckdb.DuckDBPyConnection, user: str) -> dict[str, int]:
    """The turns, sessions and source turn ids of ``user``'s L1 segments without source turns (one transaction);
    returns how many turns, sessions and segments were written."""
    con.execute("BEGIN")
    try:
        turns = con.execute(ADD_TURNS, {"user": user}).fetchone()[0]
        con.execute(ADD_SESSIONS, {"user": user})
        linked = con.execute(LINK, {"user": user}).fetchone()[0]
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    sessions = con.execute("SELECT count(*) FROM sessions WHERE user_id = ?", [user]).fetchone()[0]
    return {"turns": int(turns), "sessions": int(sessions), "segments_linked": int(linked)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db", help="a store kept by bench/recall_latency.py --keep-db")
    ap.add_argument("--users", default="bench-a,bench-b", help="comma separated")
    args = ap.parse_args()
    con = duckdb.connect(args.db)
    out = {}
    for user in [u for u in args.users.split(",") if u]:
        t0 = time.perf_counter()
        out[user] = {**add_turns(con, user), "seconds": round(time.perf_counter() - t0, 1)}
    con.execute("CHECKPOINT")
    con.close()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
