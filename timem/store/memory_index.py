"""In-memory copies of one user's searchable nodes per level: vectors and BM25 postings (issue 13 §4).

Leaf selection asks for the top ``k`` nodes of one user and level by cosine and by BM25 on every
recall. In SQL both read the whole level each time (at 100k L1 nodes per user: 76 ms p50 for the
vector scan, 26 ms for BM25; ``bench/results/recall-latency.md``). :class:`MemoryIndex` keeps, per
store, user and level:

* **vectors** — the active nodes' ids (sorted) and their ``(n, dim)`` float32 embeddings, keyed by
  the store's *nodes version* (meta ``nodes_version``: a fresh random token written in the same
  transaction as every change to ``nodes``, so a rolled-back write leaves it unchanged and a
  committed one is always seen). After writes that only appended nodes
  (:meth:`MemoryIndex.note_append`, called by ``Store.add_nodes``) the cached copy is extended
  instead of reloaded; any other change (edit, soft-delete, erase) reloads it.
* **BM25 postings** — the active nodes' postings of the user and level from
  ``fts_main_nodes.postings`` and the user's document frequencies over all its rows, keyed by the
  *postings version* (meta ``postings_version``, rewritten by every fts rebuild). The fts index
  stays a snapshot rebuilt after writes (:meth:`timem.store.duckdb_store.Store.refresh_fts`).

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
24 bytes per posting; the least recently used entries are dropped beyond :data:`CACHE_BYTES`.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import numpy as np

from timem.store.search import BM25_B, BM25_K1

#: numpy-vs-DuckDB cosine slack of the shortlist (the two differ by < 5e-5)
MARGIN = 1e-3
#: bytes of cached vectors and postings per store (least recently used first out; the latest always kept)
CACHE_BYTES = 768 * 2**20
#: ``k1 + 1`` in tenths (the SQL's decimal literal ``1.2 + 1``), derived so the two formulas cannot drift apart
_K1_PLUS_1_TENTHS = round((BM25_K1 + 1) * 10)
#: append steps remembered per store (an ingest writes one per batch of nodes)
MAX_STEPS = 4096


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


@dataclass
class _Vectors:
    ids: list[str]  #: sorted
    vecs: np.ndarray  #: (n, dim) float32

    @property
    def nbytes(self) -> int:
        return int(self.vecs.nbytes) + 64 * len(self.ids)


@dataclass
class _Postings:
    ids: list[str]  #: active nodes of the level with at least one posting, sorted
    slices: dict[int, tuple[int, int]]  #: term id -> [start, end) into the posting arrays
    doc: np.ndarray  #: int64 position in ``ids`` per posting, grouped by term id
    tf: np.ndarray  #: int64 term frequency per posting
    dlen: np.ndarray  #: float64 document length per posting
    df: dict[int, int]  #: term id -> postings of the user (every level and status)
    num_docs: int
    avgdl: float

    @property
    def nbytes(self) -> int:
        return int(self.doc.nbytes + self.tf.nbytes + self.dlen.nbytes) + 64 * (len(self.ids) + len(self.df))


class MemoryIndex:
    """One store's cache of per-user, per-level vectors and BM25 postings (see the module docstring).

    Thread-safe: loads happen outside the lock; the connection is the caller's (DuckDB serialises it).
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._lock = threading.Lock()
        #: full loads from DuckDB so far, by kind (``"vec"``, ``"bm25"``): appends patch without one
        self.loads: Counter[str] = Counter()
        self._entries: OrderedDict[tuple[str, str, int], tuple[str | None, _Vectors | _Postings]] = OrderedDict()
        #: nodes version before -> (version after, {(user, level): (ids, vectors)}) of an append-only write
        self._steps: OrderedDict[str | None, tuple[str, dict[tuple[str, int], tuple[list[str], np.ndarray]]]] = \
            OrderedDict()

    # ------------------------------------------------------------------ bookkeeping
    def note_append(self, before: str | None, after: str, user_ids: Sequence[str], levels: Sequence[int],
                    ids: Sequence[str], vecs: np.ndarray) -> None:
        """Record that a write turned nodes version ``before`` into ``after`` by inserting active nodes only
        (``ids[i]`` of ``user_ids[i]`` at ``levels[i]`` with unit vector ``vecs[i]``)."""
        added: dict[tuple[str, int], tuple[list[str], list[int]]] = {}
        for k, (u, lv, i) in enumerate(zip(user_ids, levels, ids, strict=True)):
            slot = added.setdefault((u, int(lv)), ([], []))
            slot[0].append(i)
            slot[1].append(k)
        step = {key: (got, np.asarray(vecs, dtype=np.float32)[rows]) for key, (got, rows) in added.items()}
        with self._lock:
            self._steps[before] = (after, step)
            while len(self._steps) > MAX_STEPS:
                self._steps.popitem(last=False)

    def _get(self, key: tuple[str, str, int], version: str | None) -> _Vectors | _Postings | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0] == version:
                self._entries.move_to_end(key)
                return hit[1]
        return None

    def _put(self, key: tuple[str, str, int], version: str | None, value: _Vectors | _Postings) -> None:
        with self._lock:
            self._entries[key] = (version, value)
            self._entries.move_to_end(key)
            while len(self._entries) > 1 and sum(v.nbytes for _, v in self._entries.values()) > CACHE_BYTES:
                self._entries.popitem(last=False)

    # ------------------------------------------------------------------ vectors
    def _appended(self, user_id: str, level: int, start: str | None, version: str | None
                  ) -> tuple[list[str], list[np.ndarray]] | None:
        """The nodes appended for ``(user_id, level)`` on the chain of append steps ``start`` -> ``version``,
        or None when no such chain is remembered (then the copy is reloaded)."""
        ids: list[str] = []
        vecs: list[np.ndarray] = []
        at = start
        with self._lock:
            for _ in range(len(self._steps)):
                if at == version:
                    return ids, vecs
                step = self._steps.get(at)
                if step is None:
                    return None
                at, added = step
                got = added.get((user_id, level))
                if got is not None:
                    ids += got[0]
                    vecs.append(got[1])
            return (ids, vecs) if at == version else None

    def _vectors(self, con: duckdb.DuckDBPyConnection, version: str | None, user_id: str, level: int) -> _Vectors:
        key = ("vec", user_id, level)
        hit = self._get(key, version)
        if hit is not None:
            assert isinstance(hit, _Vectors)
            return hit
        with self._lock:
            old = self._entries.get(key)
        if old is not None and isinstance(old[1], _Vectors):
            chain = self._appended(user_id, level, old[0], version)
            if chain is not None:
                new_ids, new_vecs = chain
                ids = old[1].ids + new_ids
                vecs = np.concatenate([old[1].vecs, *new_vecs]) if new_vecs else old[1].vecs
                order = np.argsort(np.array(ids, dtype=object), kind="stable") if new_ids else None
                value = _Vectors([ids[k] for k in order], vecs[order]) if order is not None else _Vectors(ids, vecs)
                self._put(key, version, value)
                return value
        self.loads["vec"] += 1
        tbl = con.execute("SELECT id, embedding FROM nodes WHERE user_id = ? AND level = ? AND status = 'active' "
                          "ORDER BY id", [user_id, level]).to_arrow_table()
        n = tbl.num_rows
        flat = tbl.column("embedding").combine_chunks().flatten().to_numpy() if n else np.zeros(0, np.float32)
        value = _Vectors(tbl.column("id").to_pylist(), np.asarray(flat, dtype=np.float32).reshape(n, self.dim))
        self._put(key, version, value)
        return value

    def vector_top(self, con: duckdb.DuckDBPyConnection, version: str | None, user_id: str,
                   query_vec: np.ndarray, level: int, limit: int) -> list[tuple[str, float]]:
        """Top ``limit`` active nodes of one user and level by cosine, as ``(id, cosine)``: the rows and order of
        :func:`timem.store.search.vector_top` (exact), from the cached copy at nodes ``version``.

        Args:
            query_vec: ``(dim,)`` unit vector.
        """
        v = self._vectors(con, version, user_id, int(level))
        n = len(v.ids)
        if not n or limit <= 0:
            return []
        approx = v.vecs @ np.asarray(query_vec, dtype=np.float32)
        if n > limit:
            kth = np.partition(approx, n - limit)[n - limit]
            short = np.flatnonzero(approx >= kth - MARGIN)
        else:
            short = np.arange(n)
        exact = exact_cosines(v.vecs[short], query_vec)
        scored = sorted(zip(exact, short.tolist(), strict=True), key=lambda t: (-t[0], t[1]))
        return [(v.ids[k], c) for c, k in scored[:limit]]

    # ------------------------------------------------------------------ BM25
    def _postings(self, con: duckdb.DuckDBPyConnection, version: str | None, user_id: str, level: int) -> _Postings:
        key = ("bm25", user_id, level)
        hit = self._get(key, version)
        if hit is not None:
            assert isinstance(hit, _Postings)
            return hit
        self.loads["bm25"] += 1
        stats = con.execute("SELECT num_docs, avgdl FROM fts_main_nodes.user_stats WHERE user_id = ?",
                            [user_id]).fetchone()
        df = dict(con.execute("SELECT termid, count(*) FROM fts_main_nodes.postings WHERE user_id = ? "
                              "GROUP BY termid", [user_id]).fetchall())
        tbl = con.execute("SELECT termid, node_id, tf, len FROM fts_main_nodes.postings WHERE user_id = ? "
                          "AND level = ? AND status = 'active' ORDER BY termid, node_id",
                          [user_id, level]).fetchnumpy()
        term = np.asarray(tbl["termid"], dtype=np.int64)
        node = np.asarray(tbl["node_id"], dtype=object)
        ids = sorted(set(node.tolist()))
        pos = {i: k for k, i in enumerate(ids)}
        cuts = np.flatnonzero(np.diff(term)) + 1 if len(term) else np.zeros(0, np.int64)
        starts = np.concatenate([[0], cuts]).astype(np.int64) if len(term) else cuts
        ends = np.concatenate([cuts, [len(term)]]).astype(np.int64) if len(term) else cuts
        value = _Postings(ids=ids, slices={int(term[s]): (int(s), int(e)) for s, e in zip(starts, ends, strict=True)},
                          doc=np.array([pos[i] for i in node.tolist()], dtype=np.int64),
                          tf=np.asarray(tbl["tf"], dtype=np.int64), dlen=np.asarray(tbl["len"], dtype=np.float64),
                          df={int(t): int(c) for t, c in df.items()},
                          num_docs=int(stats[0]) if stats else 0, avgdl=float(stats[1]) if stats else 0.0)
        self._put(key, version, value)
        return value

    def bm25_top(self, con: duckdb.DuckDBPyConnection, version: str | None, user_id: str, termids: Sequence[int],
                 level: int, limit: int) -> list[tuple[str, float]]:
        """Top ``limit`` active nodes of one user and level by BM25 over the query's ``termids`` (ids of
        ``fts_main_nodes.dict``), as ``(id, score)``: the rows, scores and order of
        :func:`timem.store.search.bm25_top`, from the cached postings at ``version``."""
        p = self._postings(con, version, user_id, int(level))
        score = np.zeros(len(p.ids), dtype=np.float64)
        hit = np.zeros(len(p.ids), dtype=bool)
        for t in sorted({int(t) for t in termids}):
            span, df = p.slices.get(t), p.df.get(t)
            if span is None or not df:
                continue
            s, e = span
            idf = math.log10((p.num_docs - df + 0.5) / (df + 0.5) + 1)
            tf = p.tf[s:e]
            # DuckDB: tf * (k1 + 1) is an exact one-decimal product, then a double: (tf * 22) / 10 for k1 = 1.2
            num = (tf * _K1_PLUS_1_TENTHS).astype(np.float64) / 10.0
            norm = num / (tf + BM25_K1 * ((1 - BM25_B) + BM25_B * (p.dlen[s:e] / p.avgdl)))
            docs = p.doc[s:e]
            score[docs] += idf * norm
            hit[docs] = True
        found = np.flatnonzero(hit)
        if not len(found) or limit <= 0:
            return []
        order = np.lexsort((found, -np.round(score[found], 9)))[:limit]
        return [(p.ids[k], float(score[k])) for k in found[order].tolist()]
