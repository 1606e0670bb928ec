"""The in-memory copy of one user's BM25 postings of one level, and its exact top k (:mod:`timem.store.memory_index`
caches the copies and brings them to the current nodes version).

A copy (:class:`Postings`) holds the active nodes' postings of the user and level per term (``bm25_postings``) and
the user's ``N``, summed length and document frequencies over all its rows.

**Same answers as the SQL.** :func:`top` repeats :func:`timem.store.search.bm25_top`'s formula in float64 with the
same operations (Robertson/Sparck Jones BM25, ``k1 = 1.2``, ``b = 0.75``, ``idf = log10((N − df + 0.5) / (df + 0.5)
+ 1)``; a node's terms summed in ascending term id, as DuckDB scans them; DuckDB's parallel aggregation sometimes
combines them in another order, so about 0.3 % of scores differ in the last bit), ranked by the score rounded to 9
decimals, ties by id. Tests compare it with the SQL on LoCoMo text.

Memory: about 24 bytes per posting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import duckdb
import numpy as np

from timem.store.memory_steps import ACTIVE, Change
from timem.store.search import BM25_B, BM25_K1

#: ``k1 + 1`` in tenths (the SQL's decimal literal ``1.2 + 1``), derived so the two formulas cannot drift apart
_K1_PLUS_1_TENTHS = round((BM25_K1 + 1) * 10)


@dataclass(frozen=True)
class Postings:
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
    #: term -> term id for every term id of :attr:`terms` (a query's stems are looked up here, not in ``bm25_dict``:
    #: a term without postings here scores nothing); ``None`` when a patch met a term id without its term
    by_term: dict[str, int] | None = None

    @property
    def avgdl(self) -> float:
        # DuckDB's sum(len) / count(len) of BIGINTs: one double division of two exactly representable numbers
        return self.sum_len / self.num_docs if self.num_docs else 0.0

    @property
    def nbytes(self) -> int:
        return (24 * self.n_postings + int(self.alive.nbytes) + 96 * len(self.ids)
                + 64 * (len(self.terms) + len(self.df)))


def load(con: duckdb.DuckDBPyConnection, user_id: str, level: int) -> Postings:
    """The postings of the active nodes of ``user_id`` and ``level`` and the user's statistics, read from DuckDB."""
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
    by_term = {str(w): int(t) for t, w in con.execute(
        "SELECT termid, term FROM bm25_dict WHERE termid IN (SELECT unnest(?::BIGINT[]))", [list(terms)]).fetchall()}
    return Postings(ids, pos, np.ones(len(ids), dtype=bool), terms, {int(t): int(c) for t, c in df.items()},
                    int(stats[0]) if stats else 0, int(stats[1]) if stats else 0, len(term),
                    by_term if len(by_term) == len(terms) else None)


def patched(old: Postings, user_id: str, level: int, chain: Sequence[Change]) -> Postings:
    """``old`` after the ``chain`` of writes (a new copy; ``old`` is not changed): the user's statistics follow
    every node it removed or added, its active nodes of ``level`` are masked or appended; compacted when half of it
    is dead."""
    ids, where, alive = list(old.ids), dict(old.where), old.alive.copy()
    new_alive: list[bool] = []
    df = dict(old.df)
    num_docs, sum_len = old.num_docs, old.sum_len
    grown: dict[int, tuple[list[int], list[int], list[float]]] = {}
    names: dict[int, str] = {}
    n0 = len(old.ids)
    for change in chain:
        for d in change.removed:
            if d.user_id != user_id:
                continue
            num_docs, sum_len = num_docs - 1, sum_len - d.length
            for t in d.terms:
                df[t] -= 1
            if d.level == level and d.status == ACTIVE and d.node_id in where:
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
            if d.level == level and d.status == ACTIVE and d.terms:
                names.update(d.names)
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
    by_term = old.by_term
    if by_term is not None and any(t not in old.terms for t in grown):
        new = {t: names.get(t) for t in grown if t not in old.terms}
        by_term = None if None in new.values() else {**by_term, **{w: t for t, w in new.items() if w is not None}}
    value = Postings(ids, where, np.concatenate([alive, np.array(new_alive, dtype=bool)]), terms,
                     {t: c for t, c in df.items() if c}, num_docs, sum_len,
                     old.n_postings + sum(len(p[0]) for p in grown.values()), by_term)
    if len(value.where) * 2 < len(value.ids):  # half dead: compact
        value = compact(value)
    return value


def top(p: Postings, termids: Sequence[int], limit: int) -> list[tuple[str, float]]:
    """Top ``limit`` nodes of the copy by BM25 over the query's ``termids`` (ids of ``bm25_dict``), as ``(id,
    score)``: the rows, scores and order of :func:`timem.store.search.bm25_top`."""
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
    pos, key, ids = found.tolist(), rounded.tolist(), p.ids  # Python values: the sort reads no numpy scalar
    order = sorted(range(len(pos)), key=lambda i: (-key[i], ids[pos[i]]))[:limit]
    raw = score[found].tolist()
    return [(ids[pos[i]], raw[i]) for i in order]


def compact(p: Postings) -> Postings:
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
    by_term = None if p.by_term is None else {w: t for w, t in p.by_term.items() if t in terms}
    return Postings(ids, {i: k for k, i in enumerate(ids)}, np.ones(len(ids), dtype=bool), terms, p.df,
                    p.num_docs, p.sum_len, n, by_term)
