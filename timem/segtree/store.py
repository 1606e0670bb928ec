"""The segment tree in the DuckDB file (tables of migration ``_v5``), kept in step with the L1 memories.

* ``segtree_nodes``: one row per internal node (``height >= 1``, with its centroid ``FLOAT[dim]``)
  and per leaf (``height = 0``, ``id`` = the L1 node id, no centroid, no text): ``parent_id``,
  ``first_seq`` / ``last_seq`` (leaf positions in conversation order), ``span_start`` / ``span_end``
  (UTC), ``n_leaves``, ``n_children``.
* ``segtree_state``: per user the number of leaves, the next internal id and the ``threshold`` /
  ``max_children`` the tree was built with.

:func:`sync` appends the user's new L1 memories online (``O(log n)`` rows written per leaf, see
:mod:`timem.segtree.tree`) when the stored leaves are a prefix of the user's active L1 memories in
conversation order and the settings match; otherwise (an L1 memory was erased, soft-deleted,
rewritten, or arrived out of order, or the settings changed) it rebuilds the user's tree. Every
query filters by ``user_id``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from timem.errors import StoreError
from timem.segtree.tree import SegNode, SegTree
from timem.store import Store
from timem.store.records import db_time
from timem.tree.order import SQL_ORDER

_COLS = ("id, user_id, parent_id, height, first_seq, last_seq, span_start, span_end, n_leaves, n_children, "
         "centroid")
_IN = "(SELECT unnest(?::VARCHAR[]))"


@dataclass
class SyncReport:
    """What :func:`sync` did for one user: ``rebuilt`` (from scratch), ``added`` leaves, ``rows`` written."""

    rebuilt: bool
    added: int
    rows: int


def _utc(dt: datetime) -> datetime:
    return dt.replace(tzinfo=UTC)


def _row(r: tuple[Any, ...]) -> SegNode:
    return SegNode(id=r[0], parent_id=r[2], height=int(r[3]), first_seq=int(r[4]), last_seq=int(r[5]),
                   span_start=_utc(r[6]), span_end=_utc(r[7]), n_leaves=int(r[8]), n_children=int(r[9]),
                   centroid=None if r[10] is None else np.asarray(r[10], dtype=np.float32))


def _state(store: Store, user_id: str) -> tuple[int, int, float, int] | None:
    row = store.con.execute("SELECT n_leaves, next_id, threshold, max_children FROM segtree_state WHERE user_id = ?",
                            [user_id]).fetchone()
    return None if row is None else (int(row[0]), int(row[1]), float(row[2]), int(row[3]))


def l1_leaves(store: Store, user_id: str) -> list[tuple[str, datetime, datetime]]:
    """The user's active L1 memories in conversation order as ``(id, span_start, span_end)`` (UTC-aware)."""
    rows = store.con.execute(f"SELECT id, span_start, span_end FROM nodes WHERE user_id = ? AND level = 1 "
                             f"AND status = 'active' ORDER BY {SQL_ORDER}", [user_id]).fetchall()
    return [(r[0], _utc(r[1]), _utc(r[2])) for r in rows]


def drop(store: Store, user_ids: Sequence[str]) -> None:
    """Delete the segment tree of each user (rows and state); the next :func:`sync` rebuilds it."""
    if user_ids:
        store.con.execute(f"DELETE FROM segtree_nodes WHERE user_id IN {_IN}", [list(user_ids)])
        store.con.execute(f"DELETE FROM segtree_state WHERE user_id IN {_IN}", [list(user_ids)])


def is_current(store: Store, user_id: str, threshold: float, max_children: int) -> bool:
    """Cheap check (two counts): the stored tree has as many leaves as the user has active L1 memories
    and was built with these settings. The write paths (:func:`sync` after ingest and chat, :func:`drop`
    on erase) keep the order in step; :func:`sync` compares the ids themselves."""
    state = _state(store, user_id)
    if state is None or (state[2], state[3]) != (float(threshold), int(max_children)):
        return False
    n = store.con.execute("SELECT count(*) FROM nodes WHERE user_id = ? AND level = 1 AND status = 'active'",
                          [user_id]).fetchone()[0]
    return int(n) == state[0]


def load(store: Store, user_id: str) -> list[SegNode]:
    """Every stored node and leaf of the user, in leaf order (parents before their first child)."""
    rows = store.con.execute(f"SELECT {_COLS} FROM segtree_nodes WHERE user_id = ? ORDER BY first_seq, height DESC",
                             [user_id]).fetchall()
    return [_row(r) for r in rows]


def sync(store: Store, user_id: str, threshold: float, max_children: int, *, rebuild: bool = False) -> SyncReport:
    """Bring the user's segment tree in step with the active L1 memories (module docstring).

    Raises:
        ConfigError: invalid ``threshold`` / ``max_children`` (from :class:`SegTree`).
        StoreError: an L1 memory has no stored vector.
    """
    leaves = l1_leaves(store, user_id)
    state = _state(store, user_id)
    stored: list[str] = []
    if state is not None and not rebuild and (state[2], state[3]) == (float(threshold), int(max_children)):
        stored = [r[0] for r in store.con.execute("SELECT id FROM segtree_nodes WHERE user_id = ? AND height = 0 "
                                                  "ORDER BY first_seq", [user_id]).fetchall()]
    resume = state is not None and len(stored) == state[0] and stored == [x[0] for x in leaves[:len(stored)]] \
        and (len(stored) > 0 or state[0] == 0)
    with store.transaction():
        if resume:
            frontier = [_row(r) for r in store.con.execute(
                f"SELECT {_COLS} FROM segtree_nodes WHERE user_id = ? AND height > 0 AND last_seq = ?",
                [user_id, state[0] - 1]).fetchall()]
            tree = SegTree.from_frontier(user_id, threshold, max_children, frontier, state[0], state[1])
            new = leaves[len(stored):]
        else:
            drop(store, [user_id])
            tree = SegTree(user_id, threshold, max_children)
            new = leaves
        if not new and resume:
            return SyncReport(rebuilt=False, added=0, rows=0)
        vecs = store.embeddings([x[0] for x in new])
        touched: dict[str, None] = {}
        for nid, start, end in new:
            if nid not in vecs:
                raise StoreError(f"L1 memory {nid} has no stored vector; re-import the conversation")
            touched.update(dict.fromkeys(tree.insert(nid, vecs[nid], start, end).touched))
        rows = [tree.nodes[i] for i in touched]
        store.con.execute(f"DELETE FROM segtree_nodes WHERE user_id = ? AND id IN {_IN}", [user_id, list(touched)])
        if rows:  # none when the user has no L1 memory yet (only the state row is written)
            store.con.executemany(f"INSERT INTO segtree_nodes ({_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)", [
                [x.id, user_id, x.parent_id, x.height, x.first_seq, x.last_seq, db_time(x.span_start),
                 db_time(x.span_end), x.n_leaves, x.n_children,
                 None if x.centroid is None else x.centroid.astype(np.float32).tolist()] for x in rows])
        store.con.execute("DELETE FROM segtree_state WHERE user_id = ?", [user_id])
        store.con.execute("INSERT INTO segtree_state VALUES (?, ?, ?, ?, ?, ?)",
                          [user_id, tree.n, tree.next_id, float(threshold), int(max_children),
                           db_time(datetime.now(UTC))])
    return SyncReport(rebuilt=not resume, added=len(new), rows=len(rows))


def sync_users(store: Store, user_ids: Sequence[str], threshold: float, max_children: int, *,
               rebuild: bool = False) -> dict[str, SyncReport]:
    """:func:`sync` for each user (after an ingest, a chat turn, an edit or an erase)."""
    return {u: sync(store, u, threshold, max_children, rebuild=rebuild) for u in dict.fromkeys(user_ids)}


def lineage(store: Store, user_id: str, ids: Sequence[str], max_height: int, query_vec: np.ndarray
            ) -> dict[str, tuple[str | None, int, int, float | None, datetime]]:
    """``ids`` (leaves or internal nodes of the user) and their ancestors up to ``max_height``, one query
    per height, user filter in SQL, as ``id -> (parent id or None above max_height, height, n_children,
    cosine(query_vec, centroid) or None for a leaf, span_start UTC)``."""
    out: dict[str, tuple[str | None, int, int, float | None, datetime]] = {}
    frontier = list(dict.fromkeys(ids))
    qv = np.asarray(query_vec, dtype=np.float32).tolist()
    while frontier:
        rows = store.con.execute(
            f"SELECT id, parent_id, height, n_children, CASE WHEN centroid IS NULL THEN NULL ELSE "
            f"array_cosine_similarity(centroid, ?::FLOAT[{store.dim}]) END, span_start FROM segtree_nodes "
            f"WHERE user_id = ? AND id IN {_IN}", [qv, user_id, frontier]).fetchall()
        for r in rows:
            out[r[0]] = (r[1] if int(r[2]) < max_height else None, int(r[2]), int(r[3]),
                         None if r[4] is None else float(r[4]), _utc(r[5]))
        frontier = sorted({r[1] for r in rows if r[1] and int(r[2]) < max_height} - out.keys())
    return out


def top_internal(store: Store, user_id: str, query_vec: np.ndarray, max_height: int, per_height: int,
                 until: datetime | None = None) -> list[tuple[str, int, float]]:
    """The ``per_height`` internal nodes of each height ``1..max_height`` closest to ``query_vec`` by
    cosine with their centroid, as ``(id, height, cosine)``; ``until`` (UTC-aware) drops nodes that
    start after it. User filter in SQL."""
    args: list[Any] = [np.asarray(query_vec, dtype=np.float32).tolist(), user_id, int(max_height)]
    extra = ""
    if until is not None:
        extra, args = " AND span_start <= ?", args + [db_time(until)]
    rows = store.con.execute(
        f"SELECT id, height, array_cosine_similarity(centroid, ?::FLOAT[{store.dim}]) AS cos FROM segtree_nodes "
        f"WHERE user_id = ? AND height BETWEEN 1 AND ?{extra} "
        f"QUALIFY row_number() OVER (PARTITION BY height ORDER BY cos DESC, id) <= {int(per_height)}",
        args).fetchall()
    return [(r[0], int(r[1]), float(r[2])) for r in rows]


def leaves_under(store: Store, user_id: str, parent_ids: Sequence[str]) -> list[tuple[str, str, datetime]]:
    """The leaves whose parent is one of ``parent_ids`` (height-1 nodes), as ``(leaf id, parent id,
    span_start UTC)``, in leaf order."""
    rows = store.con.execute(f"SELECT id, parent_id, span_start FROM segtree_nodes WHERE user_id = ? AND height = 0 "
                             f"AND parent_id IN {_IN} ORDER BY first_seq", [user_id, list(parent_ids)]).fetchall()
    return [(r[0], r[1], _utc(r[2])) for r in rows]
