"""Small query helpers: the one row of a query that always yields one, id lists bound for ``IN``, UTC columns, the
nodes' conversation order in SQL."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import duckdb

from timem.errors import StoreError


def one_row(result: duckdb.DuckDBPyConnection) -> tuple[Any, ...]:
    """The first row of an executed query (``con.execute(...)``), for queries that always return one.

    Raises:
        StoreError: the query returned no row (a damaged database file; check it with `timem check`).
    """
    row = result.fetchone()
    if row is None:
        raise StoreError("a query that always yields one row returned none; the database file may be damaged "
                         "(check it with `timem check`)")
    return row


#: conversation order (:mod:`timem.tree.order`) in SQL over the ``nodes`` table (the store's default ``ORDER BY``)
SQL_ORDER = ("span_start, level, session_id NULLS FIRST, "
             "TRY_CAST(regexp_extract(source_turn_ids[1], ':([0-9]+)$', 1) AS INTEGER) NULLS FIRST, id")

#: ``col IN {ID_LIST}`` with one list parameter: a semi-join (``list_contains(?, col)`` scanned every row)
ID_LIST = "(SELECT unnest(?::VARCHAR[]))"


def utc(dt: datetime) -> datetime:
    """A naive UTC value of a TIMESTAMP column as UTC-aware."""
    return dt.replace(tzinfo=UTC)


#: id lists up to this length are bound as ``IN (?, ?, …)``: constants, which DuckDB answers from the
#: primary-key index; longer ones as a semi-join over ``unnest(?)``, which reads the whole id column
#: (80 ids out of 228k rows: 2.6 ms against 17 ms)
MAX_PLACEHOLDERS = 512


def in_list(values: Sequence[str]) -> tuple[str, list[Any]]:
    """``(sql, params)`` for ``col IN <sql>`` matching ``values`` (see :data:`MAX_PLACEHOLDERS`); the params go
    where the fragment sits in the query. An empty list matches nothing."""
    vals = list(values)
    if 0 < len(vals) <= MAX_PLACEHOLDERS:
        return "(" + ", ".join("?" * len(vals)) + ")", vals
    return ID_LIST, [vals]
