"""The store's memory-item tables (the memory layer, :mod:`timem.memory`): ``memory_items`` and
``memory_extractions`` (schema: :func:`timem.store.migrations._v6`).

A mixin of :class:`timem.store.duckdb_store.Store` (it needs ``self.con``, ``self.dim`` and
``self.transaction``). Times are UTC-aware at this boundary and naive UTC in the columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

import duckdb
import numpy as np

from timem.errors import NotFoundError
from timem.models import MemoryItem
from timem.store.records import db_time
from timem.store.rows import ID_LIST, one_row, utc

_COLS = ("id, user_id, kind, subject, attribute, value, event_time, valid_from, valid_to, confidence, source, "
         "source_ids, superseded_by, status, pinned, last_access, access_count, created_at")


def _aware(dt: datetime | None) -> datetime | None:
    return None if dt is None else dt.replace(tzinfo=UTC)



def _item(r: tuple[Any, ...]) -> MemoryItem:
    return MemoryItem(id=r[0], user_id=r[1], kind=r[2], subject=r[3], attribute=r[4], value=r[5],
                      event_time=utc(r[6]), valid_from=utc(r[7]), valid_to=_aware(r[8]), confidence=r[9],
                      source=r[10], source_ids=list(r[11]), superseded_by=r[12], status=r[13], pinned=r[14],
                      last_access=_aware(r[15]), access_count=r[16], created_at=utc(r[17]))


def _t(dt: datetime | None) -> datetime | None:
    return None if dt is None else db_time(dt)


class ItemTables:
    """Memory items and the extraction log over ``self.con``."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection:  # provided by Store: the calling thread's cursor
        raise NotImplementedError

    dim: int

    def transaction(self) -> AbstractContextManager[None]:  # provided by Store
        raise NotImplementedError

    def add_item(self, item: MemoryItem, embedding: np.ndarray) -> None:
        """Insert one item with its embedding (``float32[dim]`` of "subject attribute: value")."""
        self.con.execute(f"INSERT INTO memory_items ({_COLS}, embedding) VALUES "
                         "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         [item.id, item.user_id, item.kind, item.subject, item.attribute, item.value,
                          db_time(item.event_time), db_time(item.valid_from), _t(item.valid_to), item.confidence,
                          item.source, list(item.source_ids), item.superseded_by, item.status, item.pinned,
                          _t(item.last_access), item.access_count, db_time(item.created_at),
                          np.asarray(embedding, dtype=np.float32).tolist()])

    def update_item(self, item_id: str, **fields: Any) -> None:
        """Set some columns of one item (``valid_from``, ``valid_to``, ``superseded_by``, ``status``, ``source_ids``,
        ``pinned``, ``confidence``); datetimes UTC-aware. Raises NotFoundError for an unknown id."""
        if not one_row(self.con.execute("SELECT count(*) FROM memory_items WHERE id = ?", [item_id]))[0]:
            raise NotFoundError(f"no memory item {item_id!r}; list them with `timem memories list --user U`")
        for col, val in fields.items():
            if col not in ("valid_from", "valid_to", "superseded_by", "status", "source_ids", "pinned", "confidence"):
                raise ValueError(f"memory item column {col!r} cannot be updated")
            val = _t(val) if isinstance(val, datetime) else val
            self.con.execute(f"UPDATE memory_items SET {col} = ? WHERE id = ?", [val, item_id])

    def items(self, user_id: str | None = None, *, status: str | None = "active", ids: Sequence[str] | None = None,
              subject: str | None = None, attribute: str | None = None) -> list[MemoryItem]:
        """Items (active only unless ``status`` is another value or ``None`` = any), oldest event first."""
        conds: list[str] = []
        args: list[Any] = []
        for col, val in (("user_id", user_id), ("status", status), ("subject", subject), ("attribute", attribute)):
            if val is not None:
                conds.append(f"{col} = ?")
                args.append(val)
        if ids is not None:
            conds.append(f"id IN {ID_LIST}")
            args.append(list(ids))
        where = " WHERE " + " AND ".join(conds) if conds else ""
        rows = self.con.execute(f"SELECT {_COLS} FROM memory_items{where} ORDER BY event_time, created_at, id",
                                args).fetchall()
        return [_item(r) for r in rows]

    def item_subjects(self, user_id: str) -> list[tuple[str, datetime, str]]:
        """Each subject the user's items (any status) are stored under, exactly as spelled, with its first item:
        ``(subject, created_at (UTC-aware), item id)``, first by ``created_at`` then id. One query; a row per
        subject, not per item (:func:`timem.memory.history.stored_subject` runs it for every statement written)."""
        rows = self.con.execute(
            "SELECT subject, created_at, id FROM memory_items WHERE user_id = ? "
            "QUALIFY row_number() OVER (PARTITION BY subject ORDER BY created_at, id) = 1 ORDER BY created_at, id",
            [user_id]).fetchall()
        return [(r[0], utc(r[1]), r[2]) for r in rows]

    def item(self, item_id: str) -> MemoryItem:
        found = self.items(ids=[item_id], status=None)
        if not found:
            raise NotFoundError(f"no memory item {item_id!r}; list them with `timem memories list --user U`")
        return found[0]

    def item_embeddings(self, item_ids: Sequence[str]) -> dict[str, np.ndarray]:
        rows = self.con.execute(f"SELECT id, embedding FROM memory_items WHERE id IN {ID_LIST}",
                                [list(item_ids)]).fetchall()
        return {r[0]: np.asarray(r[1], dtype=np.float32) for r in rows}

    def touch_items(self, item_ids: Sequence[str], at: datetime) -> None:
        """Record one recall of each item: ``last_access = at`` (UTC-aware), ``access_count + 1``."""
        if item_ids:
            with self.transaction():  # the one writer: a consolidation may be rewriting the same items
                self.con.execute(f"UPDATE memory_items SET last_access = ?, access_count = access_count + 1 "
                                 f"WHERE id IN {ID_LIST}", [db_time(at), list(item_ids)])

    def items_from_sources(self, node_ids: Sequence[str]) -> list[MemoryItem]:
        """Items (any status) citing any of ``node_ids`` as a source."""
        rows = self.con.execute(f"SELECT {_COLS} FROM memory_items "
                                "WHERE len(list_intersect(source_ids, ?::VARCHAR[])) > 0", [list(node_ids)]).fetchall()
        return [_item(r) for r in rows]

    def drop_item_sources(self, node_ids: Sequence[str], units: Sequence[str] = ()) -> dict[str, int]:
        """Hard erase (or rewrite) of L1 segments: items whose every source is among ``node_ids`` are deleted
        (rows gone; what one had superseded holds again, until the first value after it that stays), the others lose
        those sources; extraction marks of the segments, and of the other
        ``units`` (e.g. ``session:<id>``, read again by the LLM extractor), are removed. Returns counts."""
        gone = list(node_ids)
        out = {"items_deleted": 0, "items_trimmed": 0}
        with self.transaction():
            found = self.items_from_sources(gone)
            dropped = {it.id: it for it in found if not [s for s in it.source_ids if s not in gone]}
            for it in found:
                rest = [s for s in it.source_ids if s not in gone]
                if rest:
                    self.con.execute("UPDATE memory_items SET source_ids = ? WHERE id = ?", [rest, it.id])
                    out["items_trimmed"] += 1
                    continue
                # what it had superseded holds again (the newer statement is gone) until what superseded the erased
                # item, if that stays (a trial: erasing Bristol between Manchester and Cardiff left both open);
                # a rewrite's new statement, read next, supersedes it afresh
                nxt = it.superseded_by
                while nxt in dropped:
                    nxt = dropped[nxt].superseded_by
                row = self.con.execute("SELECT valid_from FROM memory_items WHERE id = ?", [nxt]).fetchone() \
                    if nxt else None  # none: the successor row is gone too (an erase before this one)
                self.con.execute("UPDATE memory_items SET superseded_by = ?, valid_to = ? WHERE superseded_by = ?",
                                 [nxt if row else None, row[0] if row else None, it.id])
                self.con.execute("DELETE FROM memory_items WHERE id = ?", [it.id])
                out["items_deleted"] += 1
            self.con.execute(f"DELETE FROM memory_extractions WHERE unit_id IN {ID_LIST}", [gone + list(units)])
        return out

    def items_without_active_source(self, node_ids: Sequence[str]) -> list[MemoryItem]:
        """Active items citing any of ``node_ids`` none of whose sources is an active node any more."""
        rows = self.con.execute(
            f"SELECT {_COLS} FROM memory_items i WHERE status = 'active' AND "
            "len(list_intersect(source_ids, ?::VARCHAR[])) > 0 AND NOT EXISTS (SELECT 1 FROM nodes n "
            "WHERE n.status = 'active' AND list_contains(i.source_ids, n.id))", [list(node_ids)]).fetchall()
        return [_item(r) for r in rows]

    def was_forgotten(self, item_id: str) -> bool:
        """Whether the item was forgotten explicitly (an audit row ``forget-item``), not only with its sources."""
        return bool(one_row(self.con.execute("SELECT count(*) FROM audit WHERE action = 'forget-item' "
                                             "AND node_id = ?", [item_id]))[0])

    # ---------------------------------------------------------------- extraction log
    def extracted_units(self, user_id: str, mode: str) -> set[str]:
        """Unit ids (L1 segment ids for ``rules``, ``session:<id>`` for ``llm``) already read in ``mode``."""
        return {r[0] for r in self.con.execute("SELECT unit_id FROM memory_extractions WHERE user_id = ? AND mode = ?",
                                               [user_id, mode]).fetchall()}

    def unread_segments(self, user_id: str, mode: str, limit: int | None = None) -> list[str]:
        """The ids of the user's active L1 segments not yet read in ``mode`` (``rules``), at most ``limit`` of them
        (any ones: a caller asks ``limit = n + 1`` to learn whether more than ``n`` are unread; at 100k unread
        segments, ~2 ms against ~22 ms for every id): one query, not the user's segments (the rules read a write's
        items at every recall with a queued write)."""
        tail = "" if limit is None else f" LIMIT {int(limit)}"
        return [r[0] for r in self.con.execute(
            "SELECT id FROM nodes WHERE user_id = ? AND level = 1 AND status = 'active' AND id NOT IN "
            "(SELECT unit_id FROM memory_extractions WHERE user_id = ? AND mode = ?)" + tail, [user_id, user_id, mode]
        ).fetchall()]

    def mark_extracted(self, user_id: str, unit_id: str, mode: str, n_items: int) -> None:
        self.con.execute("INSERT OR REPLACE INTO memory_extractions VALUES (?,?,?,?,?)",
                         [user_id, unit_id, mode, n_items, db_time(datetime.now(UTC))])
