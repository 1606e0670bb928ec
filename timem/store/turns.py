"""The store's turn log (the :class:`~timem.store.ports.TurnLog` port): ``turns`` and ``sessions``.

A mixin of :class:`timem.store.duckdb_store.Store` (it needs ``self.con`` and the BM25 upkeep,
``self._unindex_nodes``).
Times are UTC-aware at this boundary and naive UTC in the columns; event time is when a turn was said,
``ingested_at`` when it was stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import duckdb

from timem.models import Role, SessionInfo, Turn
from timem.store import mentions
from timem.store.records import db_time
from timem.store.rows import ID_LIST, in_list, utc

TURN_COLS = ("id, user_id, session_id, seq, speaker, role, text, event_time, source_ref, image_caption, ingested_at, "
             "utc_offset_minutes")



class TurnTables:
    """Turns (what was said, in order) and their sessions over ``self.con``."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection:  # provided by Store: the calling thread's cursor
        raise NotImplementedError

    if TYPE_CHECKING:  # provided by Store's search part (timem.store.search_tables)
        def _unindex_nodes(self, node_ids: Sequence[str]) -> None: ...

    def add_turns(self, turns: Sequence[Turn]) -> int:
        """Insert turns whose id is new; returns how many were inserted (idempotent)."""
        if not turns:
            return 0
        ids = [t.id for t in turns]
        existing = {r[0] for r in self.con.execute(f"SELECT id FROM turns WHERE id IN {ID_LIST}", [ids]).fetchall()}
        new = [t for t in turns if t.id not in existing]
        if new:
            self.con.executemany(f"INSERT INTO turns ({TURN_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", [
                [t.id, t.user_id, t.session_id, t.seq, t.speaker, t.role.value, t.text, db_time(t.event_time),
                 t.source_ref, t.image_caption, db_time(t.ingested_at), t.utc_offset_minutes] for t in new])
            for (user, sess), ts in _group_sessions(new).items():
                lo, hi = min(t.event_time for t in ts), max(t.event_time for t in ts)
                self.con.execute("""
                    INSERT INTO sessions VALUES (?, ?, ?, ?, FALSE)
                    ON CONFLICT (user_id, session_id) DO UPDATE SET
                      started_at = least(started_at, excluded.started_at),
                      last_event_at = greatest(last_event_at, excluded.last_event_at)""",
                                 [user, sess, db_time(lo), db_time(hi)])
        return len(new)

    def changed_turns(self, turns: Sequence[Turn]) -> list[tuple[Turn, Turn]]:
        """``(new, stored)`` for each of ``turns`` whose id is stored with another text or image caption."""
        if not turns:
            return []
        by_id = {t.id: t for t in turns}
        rows = self.con.execute(f"SELECT id, user_id FROM turns WHERE id IN {ID_LIST}", [list(by_id)]).fetchall()
        out = []
        for uid in sorted({r[1] for r in rows}):
            for old in self.turns(uid, ids=[r[0] for r in rows if r[1] == uid]):
                new = by_id[old.id]
                if (new.text, new.image_caption) != (old.text, old.image_caption):
                    out.append((new, old))
        return out

    def update_turn_text(self, turn: Turn) -> list[tuple[str, str | None]]:
        """Store ``turn``'s new text and caption; the L1 segments made from it are removed (their turns
        kept) so that consolidation writes them again. Returns ``[(L1 id, its parent id or None)]``."""
        rows = self.con.execute("SELECT id, parent_id FROM nodes WHERE level = 1 AND list_contains(source_turn_ids, ?)",
                                [turn.id]).fetchall()
        self.con.execute("UPDATE turns SET text = ?, image_caption = ? WHERE id = ?",
                         [turn.text, turn.image_caption, turn.id])
        if rows:
            self.con.execute(f"DELETE FROM nodes WHERE id IN {ID_LIST}", [[r[0] for r in rows]])
            mentions.unindex_nodes(self.con, [r[0] for r in rows])
            for table in ("segtree_nodes", "segtree_state"):  # its centroids hold the old text's vector
                self.con.execute(f"DELETE FROM {table} WHERE user_id = ?", [turn.user_id])
            self._unindex_nodes([r[0] for r in rows])
        return [(r[0], r[1]) for r in rows]

    def turns(self, user_id: str, session_id: str | None = None, ids: Sequence[str] | None = None) -> list[Turn]:
        """Turns of a user (optionally one session or given ids), in event-time then seq order."""
        sql = f"SELECT {TURN_COLS} FROM turns WHERE user_id = ?"
        args: list[Any] = [user_id]
        if session_id is not None:
            sql, args = sql + " AND session_id = ?", args + [session_id]
        if ids is not None:
            frag, vals = in_list(ids)
            sql, args = sql + f" AND id IN {frag}", args + vals
        rows = self.con.execute(sql + " ORDER BY event_time, session_id, seq", args).fetchall()
        return [Turn(id=r[0], user_id=r[1], session_id=r[2], seq=r[3], speaker=r[4], role=Role(r[5]), text=r[6],
                     event_time=utc(r[7]), source_ref=r[8], image_caption=r[9], ingested_at=utc(r[10]),
                     utc_offset_minutes=r[11]) for r in rows]

    def speaker_roles(self, user_id: str) -> set[tuple[str, Role]]:
        """Each ``(speaker, role)`` of the user's turns, once."""
        return {(r[0], Role(r[1])) for r in self.con.execute(
            "SELECT DISTINCT speaker, role FROM turns WHERE user_id = ?", [user_id]).fetchall()}

    def sessions(self, user_id: str) -> list[SessionInfo]:
        """Sessions of a user, by start (then id)."""
        rows = self.con.execute("SELECT session_id, started_at, last_event_at, ended FROM sessions "
                                "WHERE user_id = ? ORDER BY started_at, session_id", [user_id]).fetchall()
        return [SessionInfo(session_id=r[0], started_at=utc(r[1]), last_event_at=utc(r[2]), ended=bool(r[3]))
                for r in rows]

    def sessions_among(self, user_id: str, session_ids: Sequence[str]
                       ) -> tuple[list[SessionInfo], datetime | None, datetime | None]:
        """The user's sessions among ``session_ids`` (by start, then id), with the latest start and the latest
        event of *all* the user's sessions (UTC-aware; ``None`` with no session): what closing a few sessions
        needs (:func:`timem.tree.windows.closed_sessions`), in one query, without reading every session (a chat
        write's read-your-writes: ~10 ms of rows per 1,000 sessions otherwise)."""
        if not session_ids:
            return [], None, None
        rows = self.con.execute(
            "SELECT session_id, started_at, last_event_at, ended, max(started_at) OVER (), "
            "max(last_event_at) OVER () FROM sessions WHERE user_id = ? "
            "QUALIFY list_contains(?, session_id) ORDER BY started_at, session_id",
            [user_id, list(dict.fromkeys(session_ids))]).fetchall()
        if not rows:
            row = self.con.execute("SELECT max(started_at), max(last_event_at) FROM sessions WHERE user_id = ?",
                                   [user_id]).fetchone()
            return [], (utc(row[0]) if row and row[0] else None), (utc(row[1]) if row and row[1] else None)
        return ([SessionInfo(session_id=r[0], started_at=utc(r[1]), last_event_at=utc(r[2]), ended=bool(r[3]))
                 for r in rows], utc(rows[0][4]), utc(rows[0][5]))

    def end_session(self, user_id: str, session_id: str) -> None:
        self.con.execute("UPDATE sessions SET ended = TRUE WHERE user_id = ? AND session_id = ?", [user_id, session_id])

    def users(self) -> list[str]:
        """Every user with a turn, a memory node or a memory item stored, sorted."""
        rows = self.con.execute("SELECT DISTINCT user_id FROM turns UNION SELECT DISTINCT user_id FROM nodes "
                                "UNION SELECT DISTINCT user_id FROM memory_items ORDER BY 1").fetchall()
        return [r[0] for r in rows]

    def has_user(self, user_id: str) -> bool:
        """Whether ``user_id`` is in :meth:`users`, without listing them."""
        row = self.con.execute("SELECT EXISTS (SELECT 1 FROM turns WHERE user_id = ?) OR EXISTS (SELECT 1 FROM nodes "
                               "WHERE user_id = ?) OR EXISTS (SELECT 1 FROM memory_items WHERE user_id = ?)",
                               [user_id] * 3).fetchone()
        return bool(row and row[0])


def _group_sessions(turns: Sequence[Turn]) -> dict[tuple[str, str], list[Turn]]:
    out: dict[tuple[str, str], list[Turn]] = {}
    for t in turns:
        out.setdefault((t.user_id, t.session_id), []).append(t)
    return out
