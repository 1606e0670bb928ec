"""The one row of a DuckDB query that always yields one (``count(*)``, ``max(...)`` and other aggregates)."""

from __future__ import annotations

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
