"""Structural queries over the Temporal Memory Tree used by recall: neighbouring segments and
segments inside time windows (segments mentioning dates in them: :mod:`timem.store.mentions`). Every query
filters by ``user_id`` inside SQL, so another user's node can never be returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import duckdb

from timem.store.records import db_time
from timem.store.rows import in_list


def adjacent_segments(con: duckdb.DuckDBPyConnection, user_id: str, node_ids: Sequence[str]
                      ) -> dict[str, tuple[str | None, str | None]]:
    """For each L1 node of ``user_id`` in ``node_ids``: ``(previous, next)`` active L1 node of the same
    session in turn order (``None`` at a session's edge).

    "Next" is the segment whose first turn comes first after the node's last turn; "previous" the
    one whose first turn comes last before the node's first turn. Ids that are not the user's L1
    nodes are absent from the result.
    """
    if not node_ids:
        return {}
    frag, vals = in_list(node_ids)
    rows = con.execute(f"""
        WITH k AS (
            SELECT n.id, n.session_id, tf.seq AS first_seq, tl.seq AS last_seq
            FROM nodes n JOIN turns tf ON tf.id = n.source_turn_ids[1] JOIN turns tl ON tl.id = n.source_turn_ids[-1]
            WHERE n.id IN {frag} AND n.user_id = ? AND n.level = 1),
        s AS (
            SELECT n.id, n.session_id, t.seq AS first_seq
            FROM nodes n JOIN turns t ON t.id = n.source_turn_ids[1]
            WHERE n.user_id = ? AND n.level = 1 AND n.status = 'active'
              AND n.session_id IN (SELECT session_id FROM k))
        SELECT k.id,
               (SELECT s.id FROM s WHERE s.session_id = k.session_id AND s.first_seq < k.first_seq
                ORDER BY s.first_seq DESC LIMIT 1),
               (SELECT s.id FROM s WHERE s.session_id = k.session_id AND s.first_seq > k.last_seq
                ORDER BY s.first_seq LIMIT 1)
        FROM k""", [*vals, user_id, user_id]).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def segments_in_windows(con: duckdb.DuckDBPyConnection, user_id: str, windows: Sequence[tuple[datetime, datetime]],
                        limit: int, until: datetime | None = None) -> list[tuple[str, datetime, datetime]]:
    """Active L1 nodes of ``user_id`` whose span overlaps any half-open ``[start, end)`` window (UTC-aware),
    as ``(id, span_start, span_end)``, earliest first, at most ``limit``; ``until`` drops nodes that
    start after it (the question time)."""
    if not windows:
        return []
    cond = " OR ".join("(span_start < ? AND span_end >= ?)" for _ in windows)
    args: list[object] = [user_id]
    for start, end in windows:
        args += [db_time(end), db_time(start)]
    extra = ""
    if until is not None:
        extra = " AND span_start <= ?"
        args.append(db_time(until))
    rows = con.execute(f"SELECT id, span_start, span_end FROM nodes WHERE user_id = ? AND level = 1 "
                       f"AND status = 'active' AND ({cond}){extra} ORDER BY span_start, id LIMIT {int(limit)}",
                       args).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]

