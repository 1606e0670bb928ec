"""The dates each L1 segment's text mentions (``node_mentions``): what the TIDER time channel looks up by date.

A turn is stored with its relative dates annotated ("yesterday [= 7 May 2023]", "上周[=2023年5月1日至7日]",
:func:`timem.reldates.resolve_relative_dates`); :func:`timem.written_dates.mentioned_periods` reads them back as
inclusive ``(first, last)`` calendar dates, with the days of a month written in the text ("on 7 May", "May 7th",
"7 May 2024"; a year-less one dated by the segment's date line). ``node_mentions`` holds one row per such period of
every level-1 node,
of any status (``user_id, node_id, first_day DATE, last_day DATE``): the calendar days the annotation names, as
written, with no zone (a reader takes them as days in the user's zone, as
:func:`timem.recall.time_channel.mentions_in` does). Rows are derived from ``nodes.content`` alone and kept in
step in the transaction of every write to ``nodes``, as the BM25 postings are (:mod:`timem.store.bm25`): an
insert adds the rows of its L1 nodes, a content edit writes the node's rows again, a hard delete, a turn rewrite
and an erase-user remove them; a status change (forget, supersede) needs nothing, as :func:`segments_mentioning`
joins to the active nodes. :func:`rebuild` writes the table from every L1 node (schema migration 12, ``timem
check --repair``, hard erase); :func:`stale` is what ``timem check`` compares.

Cost: a write parses only the texts it writes (two regular expressions over each); the lookup reads the user's rows
of this table and the matching nodes, instead of every L1 text of the user.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime

import duckdb

from timem.store.records import db_time
from timem.written_dates import mentioned_periods

#: one row per period a level-1 node's text names (dates inclusive, calendar days as written)
DDL = ("CREATE TABLE IF NOT EXISTS node_mentions (user_id VARCHAR NOT NULL, node_id VARCHAR NOT NULL, "
       "first_day DATE NOT NULL, last_day DATE NOT NULL)")
#: the texts that may mention a date: an annotation (what :data:`timem.written_dates._ANNOTATED` needs) or a written day
#: of a month, which holds a digit (so does every date line: each verbatim L1 text is read), as a SQL condition
_MAY_HOLD = "(contains(content, '[=') OR contains(content, '［=') OR regexp_matches(content, '[0-9]'))"

Row = tuple[str, str, date, date]


def create_table(con: duckdb.DuckDBPyConnection) -> None:
    """Create ``node_mentions`` if missing (empty)."""
    con.execute(DDL)


def mention_rows(nodes: Iterable[tuple[str, str, str]]) -> list[Row]:
    """``(user_id, node_id, first_day, last_day)`` of every period that the texts of level-1 nodes ``(node_id,
    user_id, content)`` mention, in node then text order (a period named twice by one node is kept once)."""
    out: list[Row] = []
    for node_id, user_id, content in nodes:
        out += [(user_id, node_id, first, last) for first, last in dict.fromkeys(mentioned_periods(content))]
    return out


def _insert(con: duckdb.DuckDBPyConnection, rows: Sequence[Row]) -> None:
    if rows:
        con.execute("INSERT INTO node_mentions SELECT unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), "
                    "unnest(?::DATE[]), unnest(?::DATE[])", [list(col) for col in zip(*rows, strict=True)])


def index_nodes(con: duckdb.DuckDBPyConnection, nodes: Sequence[tuple[str, str, str]]) -> None:
    """Add the rows of just-inserted level-1 nodes ``(node_id, user_id, content)`` (inside the inserting
    transaction; other levels must not be passed)."""
    _insert(con, mention_rows(nodes))


def reindex_node(con: duckdb.DuckDBPyConnection, node_id: str) -> None:
    """Write a node's rows again from its stored content (inside the transaction that changed it); a node that is
    gone or not level 1 is left with none."""
    unindex_nodes(con, [node_id])
    row = con.execute("SELECT id, user_id, content FROM nodes WHERE id = ? AND level = 1", [node_id]).fetchone()
    if row is not None:
        index_nodes(con, [(row[0], row[1], row[2])])


def unindex_nodes(con: duckdb.DuckDBPyConnection, node_ids: Sequence[str]) -> None:
    """Remove the rows of ``node_ids`` (inside the deleting transaction; ids without rows are skipped)."""
    if node_ids:
        con.execute("DELETE FROM node_mentions WHERE node_id IN (SELECT unnest(?::VARCHAR[]))",
                    [list(dict.fromkeys(node_ids))])


def unindex_user(con: duckdb.DuckDBPyConnection, user_id: str) -> None:
    """Remove every row of ``user_id`` (inside the erase's transaction)."""
    con.execute("DELETE FROM node_mentions WHERE user_id = ?", [user_id])


def _expected(con: duckdb.DuckDBPyConnection) -> list[Row]:
    """The rows every level-1 node of the file should have, by user then node (reads each text with ``[=``)."""
    nodes = con.execute(f"SELECT id, user_id, content FROM nodes WHERE level = 1 AND {_MAY_HOLD} "
                        "ORDER BY user_id, id").fetchall()
    return mention_rows((r[0], r[1], r[2]) for r in nodes)


def rebuild(con: duckdb.DuckDBPyConnection) -> int:
    """Write the table again from every level-1 node (call inside a transaction); returns its rows. Cost: one scan of
    ``nodes.content`` and a parse of the texts holding ``[=`` or a digit after the date line (measured before the
    written dates were read: 0.6 s at 100k leaves, 10 % annotated)."""
    create_table(con)
    con.execute("DELETE FROM node_mentions")
    rows = _expected(con)
    _insert(con, rows)
    return len(rows)


def stale(con: duckdb.DuckDBPyConnection, limit: int = 100) -> list[str]:
    """Ids (at most ``limit``, sorted) of the nodes whose rows differ from what their text mentions: missing, extra
    or of another user; what ``timem check`` reports (``--repair`` rebuilds)."""
    want = set(_expected(con))
    have = {(r[0], r[1], r[2], r[3]) for r in con.execute(
        "SELECT user_id, node_id, first_day, last_day FROM node_mentions").fetchall()}
    return sorted({r[1] for r in want ^ have})[:limit]


def segments_mentioning(con: duckdb.DuckDBPyConnection, user_id: str, days: Sequence[tuple[date, date, int]],
                        until: datetime | None = None) -> list[tuple[str, str]]:
    """Active L1 nodes of ``user_id`` that mention a period (``node_mentions``) overlapping one of ``days`` --
    ``(first, last, max_days)``: inclusive calendar days, and the most days the period may last -- as ``(id,
    content)``, earliest first (span start, then id); ``until`` (UTC-aware) drops nodes that start after it (the
    question time). The dates are compared as written, with no zone: the caller passes the days of its windows in
    the user's zone (:func:`timem.recall.time_channel.mention_days`) and reads the texts for the exact test."""
    if not days:
        return []
    cond = " OR ".join("(first_day <= ? AND last_day >= ? AND last_day - first_day < ?)" for _ in days)
    args: list[object] = [user_id]
    for first, last, most in days:
        args += [last, first, int(most)]
    args.append(user_id)
    extra = ""
    if until is not None:
        extra = " AND n.span_start <= ?"
        args.append(db_time(until))
    rows = con.execute(f"""
        SELECT n.id, n.content FROM nodes n
        WHERE n.id IN (SELECT node_id FROM node_mentions WHERE user_id = ? AND ({cond}))
          AND n.user_id = ? AND n.level = 1 AND n.status = 'active'{extra}
        ORDER BY n.span_start, n.id""", args).fetchall()
    return [(r[0], r[1]) for r in rows]
