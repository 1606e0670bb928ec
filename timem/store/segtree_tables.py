"""The segment tree in the DuckDB file (tables of migration ``_v5``), kept in step with the L1 memories.

* ``segtree_nodes``: one row per internal node (``height >= 1``, with its centroid ``FLOAT[dim]``)
  and per leaf (``height = 0``, ``id`` = the L1 node id, no centroid, no text): ``parent_id``,
  ``first_seq`` / ``last_seq`` (leaf positions in conversation order), ``span_start`` / ``span_end``
  (UTC), ``n_leaves``, ``n_children``.
* ``segtree_state``: per user the number of leaves, the next internal id and the ``threshold`` /
  ``max_children`` the tree was built with.

:func:`sync` appends the user's new L1 memories online (``O(log n)`` rows written per leaf, see
:mod:`timem.tree.segtree`) when the stored leaves are a prefix of the user's active L1 memories in
conversation order and the settings match; otherwise (an L1 memory was erased, soft-deleted,
rewritten, or arrived out of order, or the settings changed) it rebuilds the user's tree. Every
query filters by ``user_id``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from timem.errors import StoreError
from timem.store.handle import StoreHandle
from timem.store.records import db_time
from timem.store.rows import ID_LIST, SQL_ORDER, utc
from timem.store.segtree_index import cached_index, note_append
from timem.store.segtree_view import TreeView, leaves_under
from timem.tree.segtree import SegNode, SegTree

_COLS = ("id, user_id, parent_id, height, first_seq, last_seq, span_start, span_end, n_leaves, n_children, "
         "centroid")


@dataclass
class SyncReport:
    """What :func:`sync` did for one user: ``rebuilt`` (from scratch), ``added`` leaves, ``rows`` written."""

    rebuilt: bool
    added: int
    rows: int



def _row(r: tuple[Any, ...]) -> SegNode:
    return SegNode(id=r[0], parent_id=r[2], height=int(r[3]), first_seq=int(r[4]), last_seq=int(r[5]),
                   span_start=utc(r[6]), span_end=utc(r[7]), n_leaves=int(r[8]), n_children=int(r[9]),
                   centroid=None if r[10] is None else np.asarray(r[10], dtype=np.float32))


def _state(store: StoreHandle, user_id: str) -> tuple[Any, ...] | None:
    """The user's ``segtree_state`` row ``(n_leaves, next_id, threshold, max_children, built_at)``, if any."""
    row = store.con.execute("SELECT n_leaves, next_id, threshold, max_children, built_at FROM segtree_state "
                            "WHERE user_id = ?", [user_id]).fetchone()
    return None if row is None else tuple(row)


def l1_leaves(store: StoreHandle, user_id: str) -> list[tuple[str, datetime, datetime]]:
    """The user's active L1 memories in conversation order as ``(id, span_start, span_end)`` (UTC-aware)."""
    rows = store.con.execute(f"SELECT id, span_start, span_end FROM nodes WHERE user_id = ? AND level = 1 "
                             f"AND status = 'active' ORDER BY {SQL_ORDER}", [user_id]).fetchall()
    return [(r[0], utc(r[1]), utc(r[2])) for r in rows]


def drop(store: StoreHandle, user_ids: Sequence[str]) -> None:
    """Delete the segment tree of each user (rows, state and summaries); the next :func:`sync` rebuilds it."""
    if user_ids:
        for table in ("segtree_nodes", "segtree_state", "segtree_summaries"):
            store.con.execute(f"DELETE FROM {table} WHERE user_id IN {ID_LIST}", [list(user_ids)])


def summaries(store: StoreHandle, user_id: str) -> dict[str, str]:
    """The LLM topic lines of the user's segment-tree nodes whose leaf range is still the one summarised."""
    rows = store.con.execute(
        "SELECT s.node_id, s.summary FROM segtree_summaries s JOIN segtree_nodes n ON n.user_id = s.user_id AND "
        "n.id = s.node_id AND n.first_seq = s.first_seq AND n.last_seq = s.last_seq WHERE s.user_id = ?",
        [user_id]).fetchall()
    return {r[0]: r[1] for r in rows}


def save_summary(store: StoreHandle, user_id: str, node: SegNode, summary: str, model_id: str,
                 prompt_version: str) -> None:
    """Store (or replace) the topic line of ``node`` for its current leaf range."""
    store.con.execute("INSERT OR REPLACE INTO segtree_summaries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                      [user_id, node.id, node.first_seq, node.last_seq, summary, model_id, prompt_version,
                       db_time(datetime.now(UTC))])


def version(store: StoreHandle, user_id: str, threshold: float, max_children: int) -> tuple[Any, ...] | None:
    """The stored tree's version if it is current, else ``None``: one query (:func:`stored_version`)."""
    got = stored_version(store, user_id, threshold, max_children)
    return got[0] if got is not None and got[1] == 0 else None


def stored_version(store: StoreHandle, user_id: str, threshold: float, max_children: int
                   ) -> tuple[tuple[Any, ...], int] | None:
    """``(the stored tree's version, how many active L1 memories it lacks)``, or ``None`` when no tree is stored
    with these settings or it holds more leaves than the user has: one query. Behind by ``n > 0``: the user's
    last ``n`` L1 memories were appended since its last sync (an erase or edit drops the tree instead).

    Current: the stored tree has as many leaves as the user has active L1 memories and was built with
    these settings (the write paths -- :func:`sync` after ingest and chat, :func:`drop` and the store's
    erase and edit paths -- keep the order in step; :func:`sync` compares the ids themselves). The
    version is the ``segtree_state`` row, which every :func:`sync` that writes rewrites with a
    strictly increasing ``built_at`` and every erase, edit and drop deletes: equal versions, equal trees
    (what :mod:`timem.store.segtree_index` caches by).
    """
    ws = store.working_set(user_id)  # the active L1 count from the user's rows in memory, when held
    if ws is not None:
        got = store.con.execute("SELECT n_leaves, next_id, threshold, max_children, built_at FROM segtree_state "
                                "WHERE user_id = ?", [user_id]).fetchone()
        row = None if got is None else (*got, ws.active_l1)
    else:
        row = store.con.execute(
            "SELECT s.n_leaves, s.next_id, s.threshold, s.max_children, s.built_at, (SELECT count(*) FROM nodes "
            "WHERE user_id = ? AND level = 1 AND status = 'active') FROM segtree_state s WHERE s.user_id = ?",
            [user_id, user_id]).fetchone()
    if row is None or (float(row[2]), int(row[3])) != (float(threshold), int(max_children)) \
            or int(row[5]) < int(row[0]):
        return None
    return tuple(row[:5]), int(row[5]) - int(row[0])  # the version as _state reads it


def is_current(store: StoreHandle, user_id: str, threshold: float, max_children: int) -> bool:
    """Whether the user's stored tree is current (:func:`version`; one query, two counts)."""
    return version(store, user_id, threshold, max_children) is not None


_last_stamp = datetime.min.replace(tzinfo=UTC)
_stamp_lock = threading.Lock()


def _stamp() -> datetime:
    """``now`` (UTC), strictly later than every earlier stamp of this process (the tree version's ``built_at``)."""
    global _last_stamp
    with _stamp_lock:
        _last_stamp = max(datetime.now(UTC), _last_stamp + timedelta(microseconds=1))
        return _last_stamp


def load(store: StoreHandle, user_id: str) -> list[SegNode]:
    """Every stored node and leaf of the user, in leaf order (parents before their first child)."""
    rows = store.con.execute(f"SELECT {_COLS} FROM segtree_nodes WHERE user_id = ? ORDER BY first_seq, height DESC",
                             [user_id]).fetchall()
    return [_row(r) for r in rows]


def sync(store: StoreHandle, user_id: str, threshold: float, max_children: int, *, rebuild: bool = False) -> SyncReport:
    """Bring the user's segment tree in step with the active L1 memories (module docstring).

    Raises:
        ConfigError: invalid ``threshold`` / ``max_children`` (from :class:`SegTree`).
        StoreError: an L1 memory has no stored vector.
    """
    with store.transaction():  # reads and writes in one transaction under the store's writer: two syncs never race
        return _sync(store, user_id, threshold, max_children, rebuild=rebuild)


def appended_leaves(store: StoreHandle, user_id: str, n_stored: int) -> list[tuple[str, datetime, datetime]] | None:
    """The user's active L1 memories past the first ``n_stored`` in conversation order, as :func:`l1_leaves` gives
    them, if the stored tree's leaves are exactly those first ``n_stored`` (leaf ``k`` has ``first_seq`` ``k``);
    else None (the tree must be rebuilt). One query; only the appended rows come back to Python (a chat write at
    100k L1 nodes: ~60 ms, against ~340 ms for reading every leaf)."""
    rows = store.con.execute(
        f"WITH cur AS MATERIALIZED (SELECT id, span_start, span_end, row_number() OVER (ORDER BY {SQL_ORDER}) - 1 "
        "AS seq FROM nodes WHERE user_id = ? AND level = 1 AND status = 'active'), "
        "st AS (SELECT id, first_seq FROM segtree_nodes WHERE user_id = ? AND height = 0), "
        "agg AS (SELECT (SELECT count(*) FROM st) AS stored, (SELECT count(*) FROM cur JOIN st ON st.id = cur.id "
        "AND st.first_seq = cur.seq) AS in_place, (SELECT min(seq) FROM cur ANTI JOIN st ON st.id = cur.id) AS first) "
        "SELECT agg.stored, agg.in_place, agg.first, c.id, c.span_start, c.span_end FROM agg "
        "LEFT JOIN (SELECT * FROM cur WHERE seq >= ?) c ON true ORDER BY c.seq NULLS FIRST",
        [user_id, user_id, n_stored]).fetchall()
    stored, in_place, first_new = rows[0][:3]
    if not stored == in_place == n_stored or (first_new is not None and first_new < n_stored):
        return None
    return [(r[3], utc(r[4]), utc(r[5])) for r in rows if r[3] is not None]


def _sync(store: StoreHandle, user_id: str, threshold: float, max_children: int, *, rebuild: bool) -> SyncReport:
    state = _state(store, user_id)
    appended = None
    if state is not None and not rebuild and (state[2], state[3]) == (float(threshold), int(max_children)):
        appended = appended_leaves(store, user_id, int(state[0]))
    resume = state is not None and appended is not None
    new = appended if appended is not None else l1_leaves(store, user_id)  # the leaves to insert
    with store.transaction():
        if state is not None and resume:
            frontier = [_row(r) for r in store.con.execute(
                f"SELECT {_COLS} FROM segtree_nodes WHERE user_id = ? AND height > 0 AND last_seq = ?",
                [user_id, state[0] - 1]).fetchall()]
            tree = SegTree.from_frontier(user_id, threshold, max_children, frontier, state[0], state[1])
        else:
            drop(store, [user_id])
            tree = SegTree(user_id, threshold, max_children)
        if not new and resume:
            return SyncReport(rebuilt=False, added=0, rows=0)
        vecs = store.embeddings([x[0] for x in new])
        touched: dict[str, None] = {}
        for nid, start, end in new:
            if nid not in vecs:
                raise StoreError(f"L1 memory {nid} has no stored vector; re-import the conversation")
            touched.update(dict.fromkeys(tree.insert(nid, vecs[nid], start, end).touched))
        rows = [tree.nodes[i] for i in touched]
        store.con.execute(f"DELETE FROM segtree_nodes WHERE user_id = ? AND id IN {ID_LIST}", [user_id, list(touched)])
        if rows:  # none when the user has no L1 memory yet (only the state row is written)
            store.con.executemany(f"INSERT INTO segtree_nodes ({_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)", [
                [x.id, user_id, x.parent_id, x.height, x.first_seq, x.last_seq, db_time(x.span_start),
                 db_time(x.span_end), x.n_leaves, x.n_children,
                 None if x.centroid is None else x.centroid.astype(np.float32).tolist()] for x in rows])
        store.con.execute("DELETE FROM segtree_state WHERE user_id = ?", [user_id])
        store.con.execute("INSERT INTO segtree_state VALUES (?, ?, ?, ?, ?, ?)",
                          [user_id, tree.n, tree.next_id, float(threshold), int(max_children),
                           db_time(_stamp())])
        if resume:  # the cached index of the old version can be patched with the rewritten nodes alone
            note_append(store, user_id, state, _state(store, user_id), rows)
    return SyncReport(rebuilt=not resume, added=len(new), rows=len(rows))


def sync_users(store: StoreHandle, user_ids: Sequence[str], threshold: float, max_children: int, *,
               rebuild: bool = False) -> dict[str, SyncReport]:
    """:func:`sync` for each user (after an ingest, a chat turn, an edit or an erase)."""
    return {u: sync(store, u, threshold, max_children, rebuild=rebuild) for u in dict.fromkeys(user_ids)}


class SegmentTreeTables:
    """This module and :mod:`timem.store.segtree_view` bound to one store: the
    :class:`~timem.store.ports.SegmentTreePort` that code outside ``timem.store`` uses (``store.segment_tree``).

    Every method is the module function of the same name with ``store`` bound; see those for
    arguments, units and errors.
    """

    def __init__(self, store: StoreHandle) -> None:
        self._store = store

    def version(self, user_id: str, threshold: float, max_children: int) -> tuple[Any, ...] | None:
        return version(self._store, user_id, threshold, max_children)

    def stored_version(self, user_id: str, threshold: float, max_children: int
                       ) -> tuple[tuple[Any, ...], int] | None:
        return stored_version(self._store, user_id, threshold, max_children)

    def is_current(self, user_id: str, threshold: float, max_children: int) -> bool:
        return is_current(self._store, user_id, threshold, max_children)

    def sync(self, user_id: str, threshold: float, max_children: int, *, rebuild: bool = False) -> SyncReport:
        return sync(self._store, user_id, threshold, max_children, rebuild=rebuild)

    def sync_users(self, user_ids: Sequence[str], threshold: float, max_children: int, *,
                   rebuild: bool = False) -> dict[str, SyncReport]:
        return sync_users(self._store, user_ids, threshold, max_children, rebuild=rebuild)

    def load(self, user_id: str) -> list[SegNode]:
        return load(self._store, user_id)

    def summaries(self, user_id: str) -> dict[str, str]:
        return summaries(self._store, user_id)

    def save_summary(self, user_id: str, node: SegNode, summary: str, model_id: str, prompt_version: str) -> None:
        save_summary(self._store, user_id, node, summary, model_id, prompt_version)

    def view(self, user_id: str, version: Any, leaf_ids: Sequence[str], query_vec: np.ndarray, per_height: int,
             until: datetime | None, max_height: int) -> TreeView:
        """A :class:`~timem.store.segtree_view.TreeView` for one question: the user's cached index at
        ``version`` (:func:`version`) up to ``max_height``, and the rows of the candidate ``leaf_ids``."""
        index = cached_index(self._store, user_id, max_height, version)
        rows = {i: (leaf[0], leaf[1]) for i in leaf_ids if (leaf := index.leaves.get(i)) is not None}
        return TreeView(index, rows, query_vec, per_height, until,
                        self._store.memory_index.leaf_dots(user_id, query_vec))

    def leaves_under(self, user_id: str, parent_ids: Sequence[str]) -> list[tuple[str, str, int, datetime]]:
        return leaves_under(self._store, user_id, parent_ids)
