"""Candidate search inside DuckDB: BM25 over TiMem's own postings tables, cosine over ``nodes.embedding``.

Both searches filter by ``user_id``, ``level`` and ``status = 'active'`` inside SQL, so no other
user's node can ever be returned.

**BM25.** The postings live in tables of the store's own (:mod:`timem.store.bm25`: ``bm25_dict``,
``bm25_docs``, ``bm25_postings``), written in the transaction of each write with the DuckDB fts extension's
tokenizer (Porter stemmer, English stop list, accents stripped, lower-cased; digits kept in words, so "LH1234" and
"214" are terms, numbers of one or two digits and the years 1900-2099 stop words) over ``nodes.search_text``:
the content, with Chinese / Japanese / Korean runs cut into space-separated words by
:mod:`timem.store.segmenter` (the fts tokenizer splits on whitespace and ASCII punctuation only); text
without CJK characters is indexed exactly as written. (The store used to rebuild the extension's own index
after every write, O(N); its ``match_bm25`` macro also scored *every row* of the table before the user filter.)
:func:`bm25_top` scores with exactly the formula of ``match_bm25`` (Robertson/Sparck Jones BM25 with
``k1 = 1.2``, ``b = 0.75``, ``idf = log10((N - df + 0.5) / (df + 0.5) + 1)``), with ``N``, ``df`` and
``avgdl`` taken over **the user's own rows** (every level and status: ``N`` and ``avgdl`` from
``bm25_docs``, ``df`` from the user's postings): its scores equal ``match_bm25`` of an fts index over that
user's rows alone (a test checks that on real data, after random writes, edits and deletes). So one user's
scores never depend on other users' memories (tenants do not influence each other's ranking), and a
benchmark conversation scores the same alone in its database or beside others (``timem bench --ray``
relies on it: one database per conversation).

**Vectors.** :func:`vector_top` is an exact scan by default (``array_cosine_similarity``; the
stored vectors are unit length). With ``vector_index = "hnsw"`` (:class:`timem.config.Config`)
the store keeps a vss HNSW index (cosine metric) and :func:`vector_top` asks it for the
``overfetch`` nearest rows of the whole table, keeps the user's active rows of the level, and
doubles the fetch until ``limit`` rows are found or the fetch covers the table (then it is
exact). The index cannot be per user or partial, hence the over-fetch. Approximate: recall@40
against the exact top 40 was 0.96 at 100k nodes per user; cost and numbers in
``bench/results/recall-latency.md``.
"""

from __future__ import annotations

import math

import duckdb
import numpy as np

from timem.store import bm25
from timem.store.rows import one_row
from timem.store.segmenter import search_text

FTS_SCHEMA = "fts_main_nodes"
HNSW_INDEX = "nodes_embedding_hnsw"
BM25_K1, BM25_B = 1.2, 0.75


def drop_fts(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the fts extension's index on ``nodes`` (left by TiMem before schema 9) object by object, then its
    empty schema (call inside a transaction).

    Not ``DROP SCHEMA ... CASCADE``: DuckDB cannot replay that record from its write-ahead log ("Cannot drop
    entry fts_main_nodes because there are entries that depend on it"), so a process killed after it
    committed but before the next checkpoint left a file that no longer opened."""
    tables = con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = ?", [FTS_SCHEMA]).fetchall()
    for (name,) in tables:
        con.execute(f'DROP TABLE {FTS_SCHEMA}."{name}"')
    macros = con.execute("SELECT DISTINCT function_name FROM duckdb_functions() WHERE schema_name = ?",
                         [FTS_SCHEMA]).fetchall()
    for (name,) in macros:
        con.execute(f'DROP MACRO IF EXISTS {FTS_SCHEMA}."{name}"')
    con.execute(f"DROP SCHEMA IF EXISTS {FTS_SCHEMA}")


def query_termids(con: duckdb.DuckDBPyConnection, query: str) -> list[int]:
    """Term ids (``bm25_dict``) of a BM25 query: cut like the indexed text
    (:func:`timem.store.segmenter.search_text`), tokenised and stemmed by the fts extension's tokenizer and
    stemmer (:func:`timem.store.bm25.query_termids`); terms absent from the index (and stop words, which it
    never indexes) are left out."""
    return bm25.query_termids(con, search_text(query))


def bm25_top(con: duckdb.DuckDBPyConnection, user_id: str, query: str, level: int, limit: int
             ) -> list[tuple[str, float]]:
    """Top ``limit`` active nodes of one user and level by BM25 (higher is better), as ``(id, score)``.

    The query is cut like the indexed text (:func:`timem.store.segmenter.search_text`: CJK words;
    other text unchanged), then tokenised and stemmed by the fts extension's tokenizer and stemmer; terms
    absent from the index (and stop words, which it never indexes) contribute nothing. Scores are ranked
    rounded to 9 decimals (summation order differs from ``match_bm25`` by ~1e-15), ties broken by node id.
    ``N``, ``df`` and ``avgdl`` are the user's own (see the module docstring).
    """
    termids = query_termids(con, query)
    if not termids:
        return []
    rows = con.execute(f"""
        WITH st AS (SELECT count(*) AS num_docs, sum(len) / count(len) AS avgdl FROM bm25_docs WHERE user_id = ?),
        q AS (SELECT termid, count(*) AS df FROM bm25_postings
              WHERE user_id = ? AND termid IN (SELECT unnest(?::BIGINT[])) GROUP BY termid)
        SELECT p.node_id,
               sum(log(((st.num_docs - q.df) + 0.5) / (q.df + 0.5) + 1)
                   * ((p.tf * ({BM25_K1} + 1)) / (p.tf + {BM25_K1} * ((1 - {BM25_B}) + {BM25_B} * (p.len / st.avgdl)))))
                   AS score
        FROM bm25_postings p JOIN q ON p.termid = q.termid, st
        WHERE p.user_id = ? AND p.level = ? AND p.status = 'active'
          AND p.termid IN ({", ".join(str(int(t)) for t in termids)})
        GROUP BY p.node_id ORDER BY round(score, 9) DESC, p.node_id LIMIT ?""",
        [user_id, user_id, termids, user_id, level, limit]).fetchall()
    return [(r[0], float(r[1])) for r in rows]


def ensure_hnsw(con: duckdb.DuckDBPyConnection) -> None:
    """Create the HNSW index over ``nodes.embedding`` if missing (minutes at 200k rows; see module doc)."""
    con.execute("SET hnsw_enable_experimental_persistence = true")
    con.execute(f"CREATE INDEX IF NOT EXISTS {HNSW_INDEX} ON nodes USING HNSW (embedding) WITH (metric = 'cosine')")


def drop_hnsw(con: duckdb.DuckDBPyConnection) -> bool:
    """Drop the HNSW index if present; returns whether there was one."""
    there = one_row(con.execute("SELECT count(*) FROM duckdb_indexes() WHERE index_name = ?", [HNSW_INDEX]))[0]
    if there:
        con.execute(f"DROP INDEX {HNSW_INDEX}")
    return bool(there)


def vector_top(con: duckdb.DuckDBPyConnection, dim: int, user_id: str, query_vec: np.ndarray, level: int,
               limit: int, *, hnsw: bool = False, overfetch: float = 3.0) -> list[tuple[str, float]]:
    """Top ``limit`` active nodes of one user and level by cosine similarity, as ``(id, cosine)``.

    Args:
        query_vec: ``(dim,)`` unit vector.
        hnsw: use the HNSW index with over-fetch (approximate); else an exact scan.
        overfetch: first fetch = ``limit / (share of the table that is this user's level) * overfetch``.
    """
    vec = np.asarray(query_vec, dtype=np.float32).tolist()
    if not hnsw:
        rows = con.execute(
            f"SELECT id, array_cosine_similarity(embedding, ?::FLOAT[{dim}]) AS score FROM nodes "
            "WHERE user_id = ? AND level = ? AND status = 'active' ORDER BY score DESC, id LIMIT ?",
            [vec, user_id, level, limit]).fetchall()
        return [(r[0], float(r[1])) for r in rows]
    total, mine = one_row(con.execute("SELECT count(*), "
                                      "count(*) FILTER (WHERE user_id = ? AND level = ? AND status = 'active') "
                                      "FROM nodes", [user_id, level]))
    if not mine:
        return []
    fetch = max(limit, math.ceil(limit * total / mine * overfetch))
    while fetch < total:
        # the inner ORDER BY distance LIMIT <constant> over the whole table is what the HNSW scan serves
        rows = con.execute(
            f"SELECT id, 1 - d AS score FROM (SELECT id, user_id, level, status, "
            f"array_cosine_distance(embedding, ?::FLOAT[{dim}]) AS d FROM nodes ORDER BY d LIMIT {int(fetch)}) "
            "WHERE user_id = ? AND level = ? AND status = 'active' ORDER BY d, id LIMIT ?",
            [vec, user_id, level, limit]).fetchall()
        if len(rows) >= min(limit, mine):
            return [(r[0], float(r[1])) for r in rows]
        fetch *= 2
    return vector_top(con, dim, user_id, query_vec, level, limit, hnsw=False)
