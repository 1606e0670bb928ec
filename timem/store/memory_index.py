"""In-memory copies of one user's searchable nodes per level: vectors and BM25 postings (issue 13 §4).

Leaf selection asks for the top ``k`` nodes of one user and level by cosine and by BM25 on every
recall. In SQL both read the whole level each time (at 100k L1 nodes per user: 76 ms p50 for the
vector scan, 26 ms for BM25; ``bench/results/recall-latency.md``). :class:`MemoryIndex` keeps, per
store, user and level:

* **vectors** — the active nodes' ids and their ``(n, dim)`` float32 embeddings, in a buffer that grows
  by doubling, with a live mask (a removed node is masked, the buffer compacted when half of it is dead);
* **BM25 postings** — the active nodes' postings of the user and level per term (``bm25_postings``) and
  the user's ``N``, summed length and document frequencies over all its rows.

Both are keyed by the store's *nodes version* (meta ``nodes_version``: a fresh random token written in the
same transaction as every change to ``nodes``, so a rolled-back write leaves it unchanged and a committed
one is always seen). Each write that can say what it changed (``Store.add_nodes``, ``update_node``,
``delete_nodes``, a turn's new text) records a step (:meth:`MemoryIndex.note_change`: the nodes removed
and added, as :class:`timem.store.bm25.Doc` records, and the added ones' vectors); the first search after
it follows the chain of steps from the cached copy's version to the current one and patches the copy
(work in the size of the change, not of the user). A version reached otherwise (a user erased, a file
merged, a full index rebuild) is loaded again from DuckDB.

**Same answers as the SQL.** numpy only shortlists vectors: every node whose numpy cosine is within
:data:`MARGIN` of the ``k``-th best (float32 sums of 384 products differ from DuckDB's by less
than ``γ₃₈₄ ≈ 2.3e-5``), then the shortlist is
scored with DuckDB's ``array_cosine_similarity`` arithmetic reproduced bit for bit
(:func:`exact_cosines`), so the cosines and their order (ties by id) are those of
:func:`timem.store.search.vector_top`. BM25 repeats :func:`timem.store.search.bm25_top`'s formula in
float64 with the same operations (Robertson/Sparck Jones BM25, ``k1 = 1.2``, ``b = 0.75``,
``idf = log10((N − df + 0.5) / (df + 0.5) + 1)``; a node's terms summed in ascending term id, as DuckDB
scans them; DuckDB's parallel aggregation sometimes combines them in another order, so about 0.3 % of
scores differ in the last bit), ranked by the score rounded to 9 decimals, ties by id. Tests compare
both with the SQL on LoCoMo text.

Memory: ``4·dim`` bytes per node for vectors (1.5 KB at dim 384: 154 MB for 100k nodes) plus about
24 bytes per posting. The same cache holds each user's node rows (:mod:`timem.store.working_set`) and segment-tree
index (:mod:`timem.store.segtree_view`): one budget per store (``budget_bytes``, the setting
``StoreSettings.working_set_mb``) over every user's copies, the least recently used dropped first (the latest always
kept). :meth:`MemoryIndex.stats` counts hits, patches, loads and evictions per kind.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from timem.models import Level
from timem.store import working_set
from timem.store.bm25 import Doc
from timem.store.search import BM25_B, BM25_K1
from timem.store.working_set import WorkingSet

#: numpy-vs-DuckDB cosine slack of the shortlist (the two differ by < 5e-5)
MARGIN = 1e-3
#: default bytes of cached copies per store (least recently used first out; the latest always kept)
CACHE_BYTES = 1024 * 2**20
#: ``k1 + 1`` in tenths (the SQL's decimal literal ``1.2 + 1``), derived so the two formulas cannot drift apart
_K1_PLUS_1_TENTHS = round((BM25_K1 + 1) * 10)
#: write steps remembered per store (an ingest writes one per batch of nodes)
MAX_STEPS = 4096
_ACTIVE = "active"


def exact_cosines(rows: np.ndarray, query_vec: np.ndarray) -> list[float]:
    """DuckDB's ``array_cosine_similarity(row, query)`` over ``FLOAT[dim]`` values, bit for bit, per row of
    ``rows`` ``(m, dim)``, computed in numpy.

    DuckDB (``CosineSimilarityOp``) sums ``x·y``, ``x·x`` and ``y·y`` in float32, element by element in order,
    divides the dot product by ``sqrt(|x|²·|y|²)`` and clamps with ``max(-1, min(s, 1))`` (so a zero vector,
    whose ratio is NaN, gives -1). ``np.cumsum`` along a row accumulates in the same order, so the results are
    identical (``tests/test_store_search.py`` checks it against DuckDB on real and random vectors), without a
    query per call."""
    v = np.asarray(rows, dtype=np.float32)
    q = np.asarray(query_vec, dtype=np.float32)
    if not len(v):
        return []
    dot = np.cumsum(v * q, axis=1, dtype=np.float32)[:, -1]
    nl = np.cumsum(v * v, axis=1, dtype=np.float32)[:, -1]
    nr = np.cumsum(q * q, dtype=np.float32)[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        sim = dot / np.sqrt(nl * nr)
    sim = np.where(np.float32(1) < sim, np.float32(1), sim)  # std::min(s, 1): NaN stays NaN
    sim = np.where(np.float32(-1) < sim, sim, np.float32(-1))  # std::max(-1, s): NaN becomes -1
    return [float(x) for x in sim]


@dataclass(frozen=True)
class _Change:
    """One write's effect on ``nodes``: nodes removed (their old state), then nodes added (``vecs[i]`` is
    ``added[i]``'s unit vector); ``touched``: other rows it changed (a parent link, a flag)."""

    removed: tuple[Doc, ...]
    added: tuple[Doc, ...]
    vecs: np.ndarray
    touched: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Vectors:
    """Active nodes of one user and level: ``ids[k]`` has vector ``buf[k]``; ``k`` is live while ``alive[k]``."""

    ids: list[str]  #: position -> node id (arrival order; a position is never reused)
    where: dict[str, int]  #: node id -> its live position
    buf: np.ndarray  #: (capacity, dim) float32; rows ``[0, len(ids))`` are used
    alive: np.ndarray  #: bool per used position

    @property
    def nbytes(self) -> int:
        return int(self.buf.nbytes + self.alive.nbytes) + 96 * len(self.ids)


@dataclass(frozen=True)
class _Postings:
    """Active nodes of one user and level with their postings per term, and the user's statistics over
    every level and status."""

    ids: list[str]  #: position -> node id (a position is never reused)
    where: dict[str, int]  #: node id -> its live position
    alive: np.ndarray  #: bool per position
    terms: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]  #: term id -> (positions, tf int64, len float64)
    df: dict[int, int]  #: term id -> the user's nodes holding it (every level and status)
    num_docs: int
    sum_len: int
    n_postings: int = field(default=0)

    @property
    def avgdl(self) -> float:
        # DuckDB's sum(len) / count(len) of BIGINTs: one double division of two exactly representable numbers
        return self.sum_len / self.num_docs if self.num_docs else 0.0

    @property
    def nbytes(self) -> int:
        return (24 * self.n_postings + int(self.alive.nbytes) + 96 * len(self.ids)
                + 64 * (len(self.terms) + len(self.df)))


def _grow(buf: np.ndarray, used: int, rows: np.ndarray) -> np.ndarray:
    """``buf`` with ``rows`` written after its first ``used`` rows, reallocated (doubling) when full. Rows
    below ``used`` are never written, so a copy that shares ``buf`` keeps seeing its own rows."""
    need = used + len(rows)
    if need > len(buf):
        bigger = np.empty((max(need, 2 * len(buf), 16), buf.shape[1]), dtype=np.float32)
        bigger[:used] = buf[:used]
        buf = bigger
    buf[used:need] = rows
    return buf


class MemoryIndex:
    """One store's cache of per-user, per-level vectors and BM25 postings (see the module docstring).

    Thread-safe: loads and patches happen outside the lock on copies (copy-on-write: a cached copy is never
    changed, a patch makes a new one; rows appended to a shared vector buffer lie past every older copy's rows);
    the lock guards the dictionaries. The connection is the caller's (its own cursor, read in one snapshot:
    ``Store.snapshot``); a reader of an older snapshot never replaces a newer cached copy.
    """

    def __init__(self, dim: int, budget_bytes: int = CACHE_BYTES) -> None:
        self.dim = dim
        #: bytes the cached copies of every user may take (least recently used dropped first; the latest kept)
        self.budget_bytes = int(budget_bytes)
        self._lock = threading.Lock()
        #: full loads from DuckDB so far, by kind (``"vec"``, ``"bm25"``, ``"rows"``, ``"seg"``): recorded writes
        #: patch without one
        self.loads: Counter[str] = Counter()
        #: reads served by a copy at the asked version, by kind; ``patches``: by a copy brought there by steps
        self.hits: Counter[str] = Counter()
        self.patches: Counter[str] = Counter()
        #: copies dropped to stay within the budget, by kind
        self.evictions: Counter[str] = Counter()
        self._entries: OrderedDict[tuple[str, str, int], tuple[Any, Any]] = OrderedDict()
        #: nodes version before -> (version after, what the write changed)
        self._steps: OrderedDict[str | None, tuple[str, _Change]] = OrderedDict()

    # ------------------------------------------------------------------ bookkeeping
    def note_change(self, before: str | None, after: str, removed: Sequence[Doc], added: Sequence[Doc],
                    vecs: np.ndarray, touched: Sequence[str] = ()) -> None:
        """Record that a write turned nodes version ``before`` into ``after`` by removing the nodes ``removed``
        (as they were) and then adding ``added`` (``vecs``: ``(len(added), dim)`` unit vectors; rows of nodes
        that are not active are not used), and by changing the rows ``touched`` otherwise (parent links, flags).
        An edit is a removal and an addition of the same id."""
        change = _Change(tuple(removed), tuple(added), np.asarray(vecs, dtype=np.float32).reshape(len(added), self.dim),
                         tuple(touched))
        with self._lock:
            self._steps[before] = (after, change)
            while len(self._steps) > MAX_STEPS:
                self._steps.popitem(last=False)

    def _chain(self, start: str | None, version: str | None) -> list[_Change] | None:
        """The changes on the chain of steps ``start`` -> ``version``, or None when no such chain is remembered."""
        out: list[_Change] = []
        at = start
        with self._lock:
            for _ in range(len(self._steps) + 1):
                if at == version:
                    return out
                step = self._steps.get(at)
                if step is None:
                    return None
                at, change = step
                out.append(change)
        return None

    def _cached(self, key: tuple[str, str, int], version: Any) -> tuple[Any, list[_Change] | None]:
        """``(copy, None)`` when cached at ``version``; ``(older copy, changes to apply)`` when a chain of steps
        leads there from it; ``(None, None)`` when it must be loaded. Counts a hit, a patch or a load of the kind."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
        chain = None if hit is None or hit[0] == version else self._chain(hit[0], version)
        with self._lock:
            if hit is not None and hit[0] == version:
                self.hits[key[0]] += 1
                return hit[1], None
            if hit is not None and chain is not None:
                self.patches[key[0]] += 1
                return hit[1], chain
            self.loads[key[0]] += 1
        return None, None

    def cached(self, key: tuple[str, str, int], version: Any) -> Any:
        """The copy cached under ``key`` at exactly ``version`` (counted as a hit), else ``None`` (not counted: the
        caller then loads or patches it and :meth:`put` s it, counting with :meth:`count`)."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is None or hit[0] != version:
                return None
            self._entries.move_to_end(key)
            self.hits[key[0]] += 1
            return hit[1]

    def latest(self, key: tuple[str, str, int]) -> tuple[Any, Any] | None:
        """``(version, copy)`` cached under ``key`` at any version, or ``None``."""
        with self._lock:
            return self._entries.get(key)

    def count(self, kind: str, what: str) -> None:
        """Count a ``"load"`` or a ``"patch"`` of ``kind`` done outside :meth:`_cached` (the segment-tree index)."""
        with self._lock:
            (self.loads if what == "load" else self.patches)[kind] += 1

    def put(self, key: tuple[str, str, int], version: Any, value: Any) -> None:
        """Cache ``value`` (anything with an ``nbytes``) at ``version``, unless a newer copy is cached (a reader of an
        older snapshot loaded it: the steps lead from its version to the cached one); then drop the least recently
        used copies while the cache is over :attr:`budget_bytes` (the one just put stays)."""
        with self._lock:
            have = self._entries.get(key)
        if have is not None and have[0] != version and self._chain(version, have[0]) is not None:
            return
        with self._lock:
            self._entries[key] = (version, value)
            self._entries.move_to_end(key)
            total = sum(v.nbytes for _, v in self._entries.values())
            while len(self._entries) > 1 and total > self.budget_bytes:
                old_key, (_, old) = self._entries.popitem(last=False)
                total -= old.nbytes
                self.evictions[old_key[0]] += 1

    _put = put

    def stats(self) -> dict[str, Any]:
        """What the cache holds and did: ``bytes`` (estimated), ``budget_bytes``, ``users``, ``entries`` per kind,
        and per kind the ``hits``, ``patches``, ``loads``, ``evictions`` and ``hit_rate`` (hits and patches over all
        reads) so far."""
        with self._lock:
            entries = list(self._entries.items())
            kinds = sorted({k[0] for k, _ in entries} | set(self.hits) | set(self.loads) | set(self.patches))
            out: dict[str, Any] = {"bytes": sum(v.nbytes for _, (_, v) in entries), "budget_bytes": self.budget_bytes,
                                   "users": len({k[1] for k, _ in entries})}
            for kind in kinds:
                h, p, lo = self.hits[kind], self.patches[kind], self.loads[kind]
                out[kind] = {"entries": sum(1 for k, _ in entries if k[0] == kind),
                             "bytes": sum(v.nbytes for k, (_, v) in entries if k[0] == kind),
                             "hits": h, "patches": p, "loads": lo, "evictions": self.evictions[kind],
                             "hit_rate": round((h + p) / (h + p + lo), 4) if h + p + lo else None}
            return out

    def clear(self) -> None:
        """Drop every cached copy (the next reads load again); the remembered steps stay."""
        with self._lock:
            self._entries.clear()

    def reset_counts(self) -> None:
        """Zero the hit, patch, load and eviction counters (a benchmark's warm-up)."""
        with self._lock:
            for c in (self.hits, self.patches, self.loads, self.evictions):
                c.clear()

    # ------------------------------------------------------------------ node rows
    def rows(self, con: duckdb.DuckDBPyConnection, version: str | None, user_id: str) -> WorkingSet:
        """The user's node rows (:class:`~timem.store.working_set.WorkingSet`) at nodes ``version``, from the
        cached copy (patched by the steps since) or loaded; read in the caller's snapshot."""
        key = ("rows", user_id, 0)
        old, chain = self._cached(key, version)
        if old is not None:
            assert isinstance(old, WorkingSet)
            if chain is None:
                return old
            changed: set[str] = set()
            for change in chain:
                changed.update(d.node_id for d in (*change.removed, *change.added) if d.user_id == user_id)
                changed.update(change.touched)
            value = working_set.patched(con, old, changed)
        else:
            value = working_set.load(con, user_id)
        self.put(key, version, value)
        return value

    # ------------------------------------------------------------------ vectors
    def _patch_vectors(self, old: _Vectors, user_id: str, level: int, chain: list[_Change]) -> _Vectors:
        ids, where, alive = list(old.ids), dict(old.where), old.alive.copy()
        new_alive: list[bool] = []
        rows: list[np.ndarray] = []
        n0 = len(old.ids)
        for change in chain:
            for d in change.removed:
                if d.user_id == user_id and d.level == level and d.status == _ACTIVE and d.node_id in where:
                    k = where.pop(d.node_id)
                    if k < n0:
                        alive[k] = False
                    else:
                        new_alive[k - n0] = False
            for d, v in zip(change.added, change.vecs, strict=True):
                if d.user_id == user_id and d.level == level and d.status == _ACTIVE:
                    where[d.node_id] = len(ids)
                    ids.append(d.node_id)
                    rows.append(v)
                    new_alive.append(True)
        buf = _grow(old.buf, n0, np.stack(rows)) if rows else old.buf
        value = _Vectors(ids, where, buf, np.concatenate([alive, np.array(new_alive, dtype=bool)]))
        if len(value.where) * 2 < len(value.ids):  # half dead: compact
            keep = np.flatnonzero(value.alive)
            kept = [value.ids[k] for k in keep.tolist()]
            value = _Vectors(kept, {i: k for k, i in enumerate(kept)}, value.buf[keep].copy(),
                             np.ones(len(kept), dtype=bool))
        return value

    def _vectors(self, con: duckdb.DuckDBPyConnection, version: str | None, user_id: str, level: int) -> _Vectors:
        key = ("vec", user_id, level)
        old, chain = self._cached(key, version)
        if old is not None:
            assert isinstance(old, _Vectors)
            if chain is None:
                return old
            value = self._patch_vectors(old, user_id, level, chain)
        else:
            tbl = con.execute("SELECT id, embedding FROM nodes WHERE user_id = ? AND level = ? "
                              "AND status = 'active' ORDER BY id", [user_id, level]).to_arrow_table()
            n = tbl.num_rows
            flat = tbl.column("embedding").combine_chunks().flatten().to_numpy() if n else np.zeros(0, np.float32)
            ids = tbl.column("id").to_pylist()
            value = _Vectors(ids, {i: k for k, i in enumerate(ids)},
                             np.asarray(flat, dtype=np.float32).reshape(n, self.dim), np.ones(n, dtype=bool))
        self._put(key, version, value)
        return value

    def cached_vectors(self, version: str | None, user_id: str, node_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors of those of ``node_ids`` that the user's vector copies cached at exactly nodes ``version`` hold
        (active nodes of a level searched since: every recall's L1 candidates), by id, each a fresh ``(dim,)``
        float32 array equal to the stored ``FLOAT[dim]`` value. Never loads or patches a copy (each copy read counts
        a hit); an id no copy holds is left out, for the caller to read from DuckDB."""
        out: dict[str, np.ndarray] = {}
        rest = list(dict.fromkeys(node_ids))
        for level in Level:
            if not rest:
                break
            v = self.cached(("vec", user_id, int(level)), version)
            if v is None:
                continue
            assert isinstance(v, _Vectors)
            out.update({i: v.buf[k].copy() for i in rest if (k := v.where.get(i)) is not None})
            rest = [i for i in rest if i not in out]
        return out

    def vector_top(self, con: duckdb.DuckDBPyConnection, version: str | None, user_id: str,
                   query_vec: np.ndarray, level: int, limit: int) -> list[tuple[str, float]]:
        """Top ``limit`` active nodes of one user and level by cosine, as ``(id, cosine)``: the rows and order of
        :func:`timem.store.search.vector_top` (exact), from the cached copy at nodes ``version``.

        Args:
            query_vec: ``(dim,)`` unit vector.
        """
        v = self._vectors(con, version, user_id, int(level))
        n = len(v.ids)
        live = len(v.where)
        if not live or limit <= 0:
            return []
        approx = v.buf[:n] @ np.asarray(query_vec, dtype=np.float32)
        approx[~v.alive] = -np.inf
        if live > limit:
            kth = np.partition(approx, n - limit)[n - limit]
            short = np.flatnonzero((approx >= kth - MARGIN) & v.alive)
        else:
            short = np.flatnonzero(v.alive)
        exact = exact_cosines(v.buf[short], query_vec)
        scored = sorted(zip(exact, short.tolist(), strict=True), key=lambda t: (-t[0], v.ids[t[1]]))
        return [(v.ids[k], c) for c, k in scored[:limit]]

    # ------------------------------------------------------------------ BM25
    def _patch_postings(self, old: _Postings, user_id: str, level: int, chain: list[_Change]) -> _Postings:
        ids, where, alive = list(old.ids), dict(old.where), old.alive.copy()
        new_alive: list[bool] = []
        df = dict(old.df)
        num_docs, sum_len = old.num_docs, old.sum_len
        grown: dict[int, tuple[list[int], list[int], list[float]]] = {}
        n0 = len(old.ids)
        for change in chain:
            for d in change.removed:
                if d.user_id != user_id:
                    continue
                num_docs, sum_len = num_docs - 1, sum_len - d.length
                for t in d.terms:
                    df[t] -= 1
                if d.level == level and d.status == _ACTIVE and d.node_id in where:
                    k = where.pop(d.node_id)
                    if k < n0:
                        alive[k] = False
                    else:
                        new_alive[k - n0] = False
            for d in change.added:
                if d.user_id != user_id:
                    continue
                num_docs, sum_len = num_docs + 1, sum_len + d.length
                for t in d.terms:
                    df[t] = df.get(t, 0) + 1
                if d.level == level and d.status == _ACTIVE and d.terms:
                    k = len(ids)
                    where[d.node_id] = k
                    ids.append(d.node_id)
                    new_alive.append(True)
                    for t, tf in d.terms.items():
                        slot = grown.setdefault(t, ([], [], []))
                        slot[0].append(k)
                        slot[1].append(tf)
                        slot[2].append(float(d.length))
        terms = dict(old.terms)
        for t, (new_pos, new_tf, new_len) in grown.items():
            add = (np.array(new_pos, dtype=np.int64), np.array(new_tf, dtype=np.int64),
                   np.array(new_len, dtype=np.float64))
            have = terms.get(t)
            terms[t] = add if have is None else (np.concatenate([have[0], add[0]]), np.concatenate([have[1], add[1]]),
                                                 np.concatenate([have[2], add[2]]))
        value = _Postings(ids, where, np.concatenate([alive, np.array(new_alive, dtype=bool)]), terms,
                          {t: c for t, c in df.items() if c}, num_docs, sum_len,
                          old.n_postings + sum(len(p[0]) for p in grown.values()))
        if len(value.where) * 2 < len(value.ids):  # half dead: compact
            value = _compact(value)
        return value

    def _postings(self, con: duckdb.DuckDBPyConnection, version: str | None, user_id: str, level: int) -> _Postings:
        key = ("bm25", user_id, level)
        old, chain = self._cached(key, version)
        if old is not None:
            assert isinstance(old, _Postings)
            if chain is None:
                return old
            value = self._patch_postings(old, user_id, level, chain)
        else:
            value = self._load_postings(con, user_id, level)
        self._put(key, version, value)
        return value

    def _load_postings(self, con: duckdb.DuckDBPyConnection, user_id: str, level: int) -> _Postings:
        stats = con.execute("SELECT count(*), coalesce(sum(len), 0) FROM bm25_docs WHERE user_id = ?",
                            [user_id]).fetchone()
        df = dict(con.execute("SELECT termid, count(*) FROM bm25_postings WHERE user_id = ? GROUP BY termid",
                              [user_id]).fetchall())
        tbl = con.execute("SELECT termid, node_id, tf, len FROM bm25_postings WHERE user_id = ? "
                          "AND level = ? AND status = 'active' ORDER BY termid, node_id",
                          [user_id, level]).fetchnumpy()
        term = np.asarray(tbl["termid"], dtype=np.int64)
        node = np.asarray(tbl["node_id"], dtype=object)
        ids = sorted(set(node.tolist()))
        pos = {i: k for k, i in enumerate(ids)}
        doc = np.array([pos[i] for i in node.tolist()], dtype=np.int64)
        tf, dlen = np.asarray(tbl["tf"], dtype=np.int64), np.asarray(tbl["len"], dtype=np.float64)
        cuts = np.flatnonzero(np.diff(term)) + 1 if len(term) else np.zeros(0, np.int64)
        starts = np.concatenate([[0], cuts]).astype(np.int64) if len(term) else cuts
        ends = np.concatenate([cuts, [len(term)]]).astype(np.int64) if len(term) else cuts
        terms = {int(term[s]): (doc[s:e], tf[s:e], dlen[s:e])
                 for s, e in zip(starts.tolist(), ends.tolist(), strict=True)}
        return _Postings(ids, pos, np.ones(len(ids), dtype=bool), terms, {int(t): int(c) for t, c in df.items()},
                         int(stats[0]) if stats else 0, int(stats[1]) if stats else 0, len(term))

    def bm25_top(self, con: duckdb.DuckDBPyConnection, version: str | None, user_id: str, termids: Sequence[int],
                 level: int, limit: int) -> list[tuple[str, float]]:
        """Top ``limit`` active nodes of one user and level by BM25 over the query's ``termids`` (ids of
        ``bm25_dict``), as ``(id, score)``: the rows, scores and order of :func:`timem.store.search.bm25_top`,
        from the cached postings at nodes ``version``."""
        p = self._postings(con, version, user_id, int(level))
        score = np.zeros(len(p.ids), dtype=np.float64)
        hit = np.zeros(len(p.ids), dtype=bool)
        avgdl = p.avgdl
        for t in sorted({int(t) for t in termids}):
            got, df = p.terms.get(t), p.df.get(t)
            if got is None or not df:
                continue
            docs, tf, dlen = got
            idf = math.log10((p.num_docs - df + 0.5) / (df + 0.5) + 1)
            # DuckDB: tf * (k1 + 1) is an exact one-decimal product, then a double: (tf * 22) / 10 for k1 = 1.2
            num = (tf * _K1_PLUS_1_TENTHS).astype(np.float64) / 10.0
            norm = num / (tf + BM25_K1 * ((1 - BM25_B) + BM25_B * (dlen / avgdl)))
            score[docs] += idf * norm
            hit[docs] = True
        found = np.flatnonzero(hit & p.alive)
        if not len(found) or limit <= 0:
            return []
        rounded = np.round(score[found], 9)
        if len(found) > limit:  # the top `limit` by score, and every node tied with the last of them
            keep = rounded >= np.partition(rounded, len(found) - limit)[len(found) - limit]
            found, rounded = found[keep], rounded[keep]
        order = sorted(range(len(found)), key=lambda i: (-rounded[i], p.ids[found[i]]))[:limit]
        return [(p.ids[int(found[i])], float(score[found[i]])) for i in order]


def _compact(p: _Postings) -> _Postings:
    """``p`` without its dead positions."""
    keep = np.flatnonzero(p.alive)
    new_pos = np.full(len(p.ids), -1, dtype=np.int64)
    new_pos[keep] = np.arange(len(keep))
    terms: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    n = 0
    for t, (docs, tf, dl) in p.terms.items():
        m = p.alive[docs]
        if m.any():
            terms[t] = (new_pos[docs[m]], tf[m], dl[m])
            n += int(m.sum())
    ids = [p.ids[k] for k in keep.tolist()]
    return _Postings(ids, {i: k for k, i in enumerate(ids)}, np.ones(len(ids), dtype=bool), terms, p.df,
                     p.num_docs, p.sum_len, n)
