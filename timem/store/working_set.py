"""One user's node rows held in memory: what recall reads by id (issue 26 §3).

A recall reads the rows of its candidate leaves, their neighbours and their ancestors by id (``Store.nodes(user_id=…,
ids=…)``, ``Store.lineage``), a handful of queries that each cost milliseconds at 100k nodes per user, however few
rows they return. :class:`WorkingSet` keeps every node row of one user (all levels and statuses: content, spans,
session, source turns, child ids, parent id, status) as the ``SELECT`` returns it, and builds the
:class:`~timem.models.MemoryNode` of a row when it is asked for (memoised: the models are frozen).

**Consistency** is that of the vectors and postings (:mod:`timem.store.memory_index`): a working set is cached in the
store's :class:`~timem.store.memory_index.MemoryIndex` under key ``("rows", user, 0)`` at a *nodes version* (meta
``nodes_version``), read in the caller's snapshot (``Store.snapshot``). Every write that changes a node row records a
step naming the rows it changed (the nodes it removed and added, and ``touched``: rows whose parent link or flags it
changed, e.g. the children of a new parent); the first read after it re-reads those rows by id, in the size of the
change. A version reached otherwise (a user erased, a file merged, an index rebuilt) loads the user's rows again.

**Same answers as the SQL.** :meth:`WorkingSet.nodes` returns the rows ``Store.nodes`` would (``id IN … AND user_id
= …`` and the status filter) in the same order (:data:`timem.store.rows.SQL_ORDER`, reproduced by :func:`sql_key`);
:meth:`WorkingSet.lineage` follows ``parent_id`` as ``Store.lineage`` does. ``tests/test_working_set.py`` compares
both ways on a DuckDB file.

Memory: :attr:`WorkingSet.nbytes` estimates the Python objects (about 1 KB per row plus the text; the models built
are counted when built, about 1.5 KB each); the store's budget (``StoreSettings.working_set_mb``) evicts the least
recently used user's copies first.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from timem.models import Level, MemoryNode, NodeStatus
from timem.store.rows import in_list, utc

#: the node columns, as ``timem.store.nodes.NODE_COLS`` (``parent_id`` is column 11)
NODE_COLS = ("id, user_id, level, window_key, session_id, span_start, span_end, content, child_ids, "
             "history_ids, source_turn_ids, parent_id, model_id, prompt_version, created_at, status, stale, mode")
_PARENT, _LEVEL, _STATUS = 11, 2, 15
#: estimated bytes of one row's tuple, its strings, datetimes and lists, without the text (CPython 3.11, measured
#: with tracemalloc on the bench's rows: ~900 B) and of one built MemoryNode (~1,400 B)
ROW_BYTES, MODEL_BYTES, LIST_ITEM_BYTES = 900, 1400, 90
#: a change touching more than this share of the cached rows is applied by loading the user again
RELOAD_SHARE = 0.5
_SEQ = re.compile(r":([0-9]+)$")
_INT_MAX = 2**31 - 1


def node_of(r: tuple[Any, ...]) -> MemoryNode:
    """The :class:`MemoryNode` of a ``SELECT NODE_COLS`` row (naive-UTC columns made UTC-aware)."""
    return MemoryNode(id=r[0], user_id=r[1], level=Level(r[2]), window_key=r[3], session_id=r[4],
                      span_start=utc(r[5]), span_end=utc(r[6]), content=r[7], child_ids=list(r[8]),
                      history_ids=list(r[9]), source_turn_ids=list(r[10]), model_id=r[12], prompt_version=r[13],
                      created_at=utc(r[14]), status=NodeStatus(r[15]), stale=r[16], mode=r[17])


def _seq(source_turn_ids: Sequence[str]) -> int:
    """``TRY_CAST(regexp_extract(source_turn_ids[1], ':([0-9]+)$', 1) AS INTEGER)``, NULL as -1 (NULLS FIRST)."""
    if not source_turn_ids or source_turn_ids[0] is None:
        return -1
    m = _SEQ.search(source_turn_ids[0])
    if m is None:
        return -1
    v = int(m.group(1))
    return v if v <= _INT_MAX else -1


def sql_key(r: tuple[Any, ...]) -> tuple[datetime, int, int, str, int, str]:
    """Sort key of a row in :data:`timem.store.rows.SQL_ORDER` (span start, level, session NULLS FIRST, first turn's
    seq NULLS FIRST, id; strings compare by code point, as DuckDB's binary collation of UTF-8)."""
    return (r[5], r[2], 0 if r[4] is None else 1, r[4] or "", _seq(r[10]), r[0])


def _row_bytes(r: tuple[Any, ...]) -> int:
    return ROW_BYTES + sys.getsizeof(r[7]) + LIST_ITEM_BYTES * (len(r[8]) + len(r[9]) + len(r[10]))


@dataclass
class WorkingSet:
    """Every node row of one user at one nodes version, by id (see the module docstring). Never changed once cached:
    :func:`patched` makes a new one (the memo of built models is shared by copies where the row is the same)."""

    user_id: str
    rows: dict[str, tuple[Any, ...]]
    row_bytes: int
    active_l1: int  #: active L1 rows (the segment tree's leaf count when current)
    #: L1 id -> ``seq`` of its first and of its last source turn (``None``: that turn is not stored)
    seqs: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)
    _built: dict[str, MemoryNode] = field(default_factory=dict, repr=False)
    #: session -> its active L1 rows with a first turn, as sorted ``(first seq, id)`` (built on first use)
    _sessions: dict[str, list[tuple[int, str]]] | None = field(default=None, repr=False)

    @property
    def nbytes(self) -> int:
        return self.row_bytes + MODEL_BYTES * len(self._built) + 120 * len(self.seqs)

    def _session_index(self) -> dict[str, list[tuple[int, str]]]:
        if self._sessions is None:
            groups: dict[str, list[tuple[int, str]]] = {}
            for i, (first, _) in self.seqs.items():
                r = self.rows.get(i)
                if r is not None and first is not None and r[4] is not None and _active_l1(r):
                    groups.setdefault(r[4], []).append((first, i))
            self._sessions = {s: sorted(v) for s, v in groups.items()}
        return self._sessions

    def adjacent(self, node_ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
        """``Store.adjacent_segments`` over the cached rows (:func:`timem.store.tree_queries.adjacent_segments`):
        per L1 node of the user among ``node_ids`` whose first and last turns are stored, the previous and the next
        active L1 node of its session by first-turn seq."""
        index = self._session_index()
        out: dict[str, tuple[str | None, str | None]] = {}
        for i in dict.fromkeys(node_ids):
            r, seq = self.rows.get(i), self.seqs.get(i)
            if r is None or seq is None or int(r[_LEVEL]) != 1 or seq[0] is None or seq[1] is None:
                continue
            members = index.get(r[4], []) if r[4] is not None else []
            k = bisect.bisect_left(members, (seq[0], ""))
            prev = members[k - 1][1] if k > 0 else None
            j = bisect.bisect_right(members, (seq[1], "\U0010ffff"))
            out[i] = (prev, members[j][1] if j < len(members) else None)
        return out

    def node(self, node_id: str) -> MemoryNode:
        """The model of one cached row (built once)."""
        got = self._built.get(node_id)
        if got is None:
            got = self._built[node_id] = node_of(self.rows[node_id])
        return got

    def nodes(self, ids: Iterable[str], status: NodeStatus | None = NodeStatus.ACTIVE) -> list[MemoryNode]:
        """The user's nodes among ``ids`` with ``status`` (``None``: any), in :data:`~timem.store.rows.SQL_ORDER`:
        what ``Store.nodes(user_id, ids=ids, status=status)`` returns."""
        want = None if status is None else status.value
        found = [r for i in dict.fromkeys(ids) if (r := self.rows.get(i)) is not None
                 and (want is None or r[_STATUS] == want)]
        found.sort(key=sql_key)
        return [self.node(r[0]) for r in found]

    def lineage(self, node_ids: Sequence[str], top_level: int
                ) -> tuple[dict[str, MemoryNode], dict[str, str | None]]:
        """``Store.lineage`` over the cached rows: ``node_ids`` and their ancestors up to the first node at or above
        ``top_level``; ``(nodes by id, parent id by node id, None for a parent outside the result)``."""
        nodes: dict[str, MemoryNode] = {}
        parent: dict[str, str | None] = {}
        frontier = list(dict.fromkeys(node_ids))
        while frontier:
            rows = [r for i in frontier if (r := self.rows.get(i)) is not None]
            for r in rows:
                nodes[r[0]] = self.node(r[0])
                parent[r[0]] = r[_PARENT]
            frontier = sorted({r[_PARENT] for r in rows if r[_PARENT] and int(r[_LEVEL]) < top_level} - nodes.keys())
        return nodes, {nid: (pid if pid in nodes else None) for nid, pid in parent.items()}


def _active_l1(r: tuple[Any, ...]) -> bool:
    return int(r[_LEVEL]) == 1 and r[_STATUS] == NodeStatus.ACTIVE.value


_SEQS = ("SELECT n.id, tf.seq, tl.seq FROM nodes n LEFT JOIN turns tf ON tf.id = n.source_turn_ids[1] "
         "LEFT JOIN turns tl ON tl.id = n.source_turn_ids[-1] WHERE n.user_id = ? AND n.level = 1")


def _seqs(con: duckdb.DuckDBPyConnection, user_id: str, ids: Sequence[str] | None = None
          ) -> dict[str, tuple[int | None, int | None]]:
    """First and last source-turn seqs of the user's L1 rows (``ids`` of them, or all). Turns are never rewritten or
    removed without their L1 rows (``Store.delete_nodes``, ``erase_user``), so these follow the node rows."""
    if ids is None:
        got = con.execute(_SEQS, [user_id]).fetchall()
        return {r[0]: (r[1], r[2]) for r in got}
    if not ids:
        return {}
    # a few rows (a write's patch): by primary key, not the join, which scans every turn of the file (~90 ms a
    # patch at 200k turns)
    frag, vals = in_list(ids)
    ends = con.execute(f"SELECT id, source_turn_ids[1], source_turn_ids[-1] FROM nodes WHERE id IN {frag} "
                       "AND user_id = ? AND level = 1", [*vals, user_id]).fetchall()
    turn_ids = sorted({t for r in ends for t in r[1:] if t is not None})
    seq: dict[str, int] = {}
    if turn_ids:
        tfrag, tvals = in_list(turn_ids)
        seq = dict(con.execute(f"SELECT id, seq FROM turns WHERE id IN {tfrag}", tvals).fetchall())
    return {r[0]: (seq.get(r[1]) if r[1] is not None else None, seq.get(r[2]) if r[2] is not None else None)
            for r in ends}


def _immutable(r: tuple[Any, ...]) -> tuple[Any, ...]:
    """``r`` with its id lists (child, history, source turn ids) as tuples. A row then holds no mutable container,
    so CPython's cyclic garbage collector stops tracking it after its first pass: a user of 10k L1 rows held as
    fetched kept ~46k tracked lists and tuples, and with 17 users held (1 GiB working set) full collections took
    up to ~1 s of a recall (``bench/recall_many_users.py``)."""
    return (*r[:8], tuple(r[8]), tuple(r[9]), tuple(r[10]), *r[11:])


def load(con: duckdb.DuckDBPyConnection, user_id: str) -> WorkingSet:
    """Every node row of ``user_id`` and its L1 rows' turn seqs (two queries, user filter in SQL)."""
    rows = [_immutable(r) for r in con.execute(f"SELECT {NODE_COLS} FROM nodes WHERE user_id = ?",
                                               [user_id]).fetchall()]
    return WorkingSet(user_id, {r[0]: r for r in rows}, sum(_row_bytes(r) for r in rows),
                      sum(1 for r in rows if _active_l1(r)), _seqs(con, user_id))


def patched(con: duckdb.DuckDBPyConnection, old: WorkingSet, changed: set[str]) -> WorkingSet:
    """``old`` with the rows ``changed`` read again: a row found (of this user) replaces the cached one, an id not found
    is dropped. Loads the user again when the change is large (:data:`RELOAD_SHARE`)."""
    if len(changed) > max(512, RELOAD_SHARE * len(old.rows)):
        return load(con, old.user_id)
    frag, vals = in_list(sorted(changed))
    got = con.execute(f"SELECT {NODE_COLS} FROM nodes WHERE id IN {frag} AND user_id = ?",
                      [*vals, old.user_id]).fetchall() if changed else []
    fresh = {r[0]: _immutable(r) for r in got}
    rows = dict(old.rows)
    built = dict(old._built)
    for i in changed:
        built.pop(i, None)
    nbytes, active = old.row_bytes, old.active_l1
    sessions: set[str] = set()
    for i in changed:
        was = rows.pop(i, None)
        if was is not None:
            nbytes, active = nbytes - _row_bytes(was), active - _active_l1(was)
            sessions.add(was[4])
        now = fresh.get(i)
        if now is not None:
            rows[i] = now
            nbytes, active = nbytes + _row_bytes(now), active + _active_l1(now)
            sessions.add(now[4])
    seqs = dict(old.seqs)  # a C copy, then the changed ones out: a dict comprehension was ~24 ms at 100k nodes
    for i in changed:
        seqs.pop(i, None)
    seqs.update(_seqs(con, old.user_id, sorted(i for i in changed if i in fresh and int(fresh[i][_LEVEL]) == 1)))
    out = WorkingSet(old.user_id, rows, nbytes, active, seqs, built)
    if old._sessions is not None:  # the sessions the change touched, done again; the others shared
        index = dict(old._sessions)
        for s in sessions - {None}:
            kept = [(q, i) for q, i in index.get(s, []) if i not in changed]
            kept += [(first, i) for i in changed if (r := rows.get(i)) is not None and r[4] == s and _active_l1(r)
                     and (first := seqs.get(i, (None, None))[0]) is not None]
            index[s] = sorted(kept)
        out._sessions = index
    return out
