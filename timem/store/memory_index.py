"""In-memory copies of one user's searchable nodes per level: vectors and BM25 postings (issue 13 §4).

Leaf selection asks for the top ``k`` nodes of one user and level by cosine and by BM25 on every
recall. In SQL both read the whole level each time (at 100k L1 nodes per user: 76 ms p50 for the
vector scan, 26 ms for BM25; ``bench/results/recall-latency.md``). :class:`MemoryIndex` keeps, per
store, user and level:

* **vectors** (:mod:`timem.store.memory_vectors`) — the active nodes' ids and their ``(n, dim)`` float32 embeddings,
  in a buffer that grows by doubling, with a live mask (a removed node is masked, the buffer compacted when half of
  it is dead);
* **BM25 postings** (:mod:`timem.store.memory_postings`) — the active nodes' postings of the user and level per term
  (``bm25_postings``) and the user's ``N``, summed length and document frequencies over all its rows.

Both are keyed by the store's *nodes version* (meta ``nodes_version``: a fresh random token written in the
same transaction as every change to ``nodes``, so a rolled-back write leaves it unchanged and a committed
one is always seen). Each write that can say what it changed (``Store.add_nodes``, ``update_node``,
``delete_nodes``, a turn's new text) records a step (:meth:`MemoryIndex.note_change`: the nodes removed
and added, as :class:`timem.store.bm25.Doc` records, and the added ones' vectors; :mod:`timem.store.memory_steps`);
the first search after it follows the chain of steps from the cached copy's version to the current one and patches
the copy (work in the size of the change, not of the user). A version reached otherwise (a user erased, a file
merged, a full index rebuild) is loaded again from DuckDB.

**Same answers as the SQL.** numpy only shortlists vectors: every node whose numpy cosine is within
:data:`MARGIN` of the ``k``-th best, then the shortlist is scored with DuckDB's ``array_cosine_similarity``
arithmetic reproduced bit for bit (:func:`exact_cosines`), so the cosines and their order (ties by id) are those of
:func:`timem.store.search.vector_top`. BM25 repeats :func:`timem.store.search.bm25_top`'s formula in float64 with
the same operations, ranked by the score rounded to 9 decimals, ties by id. Tests compare both with the SQL on LoCoMo
text.

Memory: ``4·dim`` bytes per node for vectors (1.5 KB at dim 384: 154 MB for 100k nodes) plus about
24 bytes per posting. The same cache holds each user's node rows (:mod:`timem.store.working_set`) and segment-tree
index (:mod:`timem.store.segtree_view`): one budget per store (``budget_bytes``, the setting
``StoreSettings.working_set_mb``) over every user's copies, the least recently used dropped first (the latest always
kept). :meth:`MemoryIndex.stats` counts hits, patches, loads and evictions per kind.

``exact_cosines``, ``MARGIN`` and ``MAX_STEPS`` are re-exported here (their modules are the ones above).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

import duckdb
import numpy as np

from timem.models import Level
from timem.store import memory_postings, memory_vectors, working_set
from timem.store.bm25 import Doc
from timem.store.memory_postings import Postings
from timem.store.memory_steps import MAX_STEPS, Change, StepLog
from timem.store.memory_vectors import MARGIN, Dots, Vectors, exact_cosines
from timem.store.working_set import WorkingSet

__all__ = ["CACHE_BYTES", "MARGIN", "MAX_STEPS", "MemoryIndex", "exact_cosines", "gc_paused"]

@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """CPython's cyclic garbage collector off while a user's copy loads or is patched (on again after, if it was on).

    A load makes tens of thousands of short-lived objects (fetched rows, lists, arrow conversions). Live during the
    load, they survive young collections and count towards a full one, which walks every tracked object of the
    process (~500k with MiniLM loaded: ~250 ms). With 17 users of 10k L1 nodes in a 1 GiB working set, a miss spent
    146 ms on average in the collector this way (``bench/recall_many_users.py``). What the load keeps holds no
    reference cycle (tuples, strings, numpy arrays), so nothing is left for the collector to find. Process-wide
    while it lasts: another thread's allocations meanwhile trigger no collection either.

    On the way out, every tracked object moves to the oldest generation (``gc.freeze()`` then ``gc.unfreeze()``:
    two list splices, O(1)). What the block built is long-lived; left young, its containers (a patched copy's
    row dict and id lists, hundreds of thousands of entries at 100k nodes) were walked by the next young
    collections: 10-35 ms of the first recall after every write at 100k L1 nodes (``gc.callbacks``, profiled with
    ``bench/synthetic_turns.py``'s store). Other young objects move too: garbage among them waits for the next full
    collection."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


#: how many L1 dot-product arrays each thread keeps for :meth:`MemoryIndex.leaf_dots` (a recall's question and aspects)
_RECENT_DOTS = 4


def _query_key(query_vec: np.ndarray) -> bytes:
    return np.asarray(query_vec, dtype=np.float32).tobytes()


#: default bytes of cached copies per store (least recently used first out; the latest always kept)
CACHE_BYTES = 1024 * 2**20


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
        #: the recorded writes: nodes version before -> (version after, what the write changed)
        self._steps = StepLog()
        #: per thread, the latest L1 :meth:`vector_top` dot products by (user, query bytes) (:meth:`leaf_dots`)
        self._local = threading.local()

    # ------------------------------------------------------------------ bookkeeping
    def note_change(self, before: str | None, after: str, removed: Sequence[Doc], added: Sequence[Doc],
                    vecs: np.ndarray, touched: Sequence[str] = ()) -> None:
        """Record that a write turned nodes version ``before`` into ``after`` by removing the nodes ``removed``
        (as they were) and then adding ``added`` (``vecs``: ``(len(added), dim)`` unit vectors; rows of nodes
        that are not active are not used), and by changing the rows ``touched`` otherwise (parent links, flags).
        An edit is a removal and an addition of the same id."""
        change = Change(tuple(removed), tuple(added), np.asarray(vecs, dtype=np.float32).reshape(len(added), self.dim),
                        tuple(touched))
        self._steps.record(before, after, change)

    def _chain(self, start: str | None, version: str | None) -> list[Change] | None:
        """The changes on the chain of steps ``start`` -> ``version``, or None when no such chain is remembered."""
        return self._steps.chain(start, version)

    def _cached(self, key: tuple[str, str, int], version: Any) -> tuple[Any, list[Change] | None]:
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
            with gc_paused():  # long-lived: straight to the oldest generation
                value = working_set.patched(con, old, changed)
        else:
            with gc_paused():
                value = working_set.load(con, user_id)
        self.put(key, version, value)
        return value

    # ------------------------------------------------------------------ vectors
    def _vectors(self, con: duckdb.DuckDBPyConnection, version: str | None, user_id: str, level: int) -> Vectors:
        key = ("vec", user_id, level)
        old, chain = self._cached(key, version)
        if old is not None:
            assert isinstance(old, Vectors)
            if chain is None:
                return old
            with gc_paused():
                value = memory_vectors.patched(old, user_id, level, chain)
        else:
            with gc_paused():
                value = memory_vectors.load(con, user_id, level, self.dim)
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
            assert isinstance(v, Vectors)
            out.update(v.of(rest))
            rest = [i for i in rest if i not in out]
        return out

    def vector_top(self, con: duckdb.DuckDBPyConnection, version: str | None, user_id: str,
                   query_vec: np.ndarray, level: int, limit: int) -> list[tuple[str, float]]:
        """Top ``limit`` active nodes of one user and level by cosine, as ``(id, cosine)``: the rows and order of
        :func:`timem.store.search.vector_top` (exact), from the cached copy at nodes ``version``.

        Args:
            query_vec: ``(dim,)`` unit vector.
        """
        vectors = self._vectors(con, version, user_id, int(level))
        approx = memory_vectors.dots(vectors, query_vec)
        if int(level) == int(Level.SEGMENT):
            recent: dict[tuple[str, bytes], Dots] = getattr(self._local, "dots", {})
            key = (user_id, _query_key(query_vec))
            recent.pop(key, None)
            recent[key] = approx
            self._local.dots = dict(list(recent.items())[-_RECENT_DOTS:])
        return memory_vectors.top(vectors, query_vec, limit, approx)

    def leaf_dots(self, user_id: str, query_vec: np.ndarray) -> Dots | None:
        """The dot products (:func:`timem.store.memory_vectors.dots`, with the L1 copy they were read from; dead
        rows meaningless) of one of this thread's latest L1 :meth:`vector_top` calls with ``query_vec`` for
        ``user_id``, else None. Relevance propagation shortlists the segment tree's centroids from them
        (:mod:`timem.store.segtree_view`): a centroid is the mean of its leaves' vectors, so its dot product is the
        mean of theirs."""
        recent: dict[tuple[str, bytes], Dots] = getattr(self._local, "dots", {})
        return recent.get((user_id, _query_key(query_vec)))

    # ------------------------------------------------------------------ BM25
    def _postings(self, con: duckdb.DuckDBPyConnection, version: str | None, user_id: str, level: int) -> Postings:
        key = ("bm25", user_id, level)
        old, chain = self._cached(key, version)
        if old is not None:
            assert isinstance(old, Postings)
            if chain is None:
                return old
            with gc_paused():
                value = memory_postings.patched(old, user_id, level, chain)
        else:
            with gc_paused():
                value = memory_postings.load(con, user_id, level)
        self._put(key, version, value)
        return value

    def bm25_top(self, con: duckdb.DuckDBPyConnection, version: str | None, user_id: str, termids: Sequence[int],
                 level: int, limit: int) -> list[tuple[str, float]]:
        """Top ``limit`` active nodes of one user and level by BM25 over the query's ``termids`` (ids of
        ``bm25_dict``), as ``(id, score)``: the rows, scores and order of :func:`timem.store.search.bm25_top`,
        from the cached postings at nodes ``version``."""
        return memory_postings.top(self._postings(con, version, user_id, int(level)), termids, limit)

    def bm25_top_stems(self, con: duckdb.DuckDBPyConnection, version: str | None, user_id: str,
                       stems: Sequence[str], level: int, limit: int) -> list[tuple[str, float]] | None:
        """:meth:`bm25_top` for a query given as its stemmed terms (:mod:`timem.store.bm25_query`), their ids read
        from the postings' own term map; ``None`` when the copy has no complete map (then ask with term ids)."""
        postings = self._postings(con, version, user_id, int(level))
        if postings.by_term is None:
            return None
        termids = [t for w in dict.fromkeys(stems) if (t := postings.by_term.get(w)) is not None]
        return memory_postings.top(postings, termids, limit) if termids else []
