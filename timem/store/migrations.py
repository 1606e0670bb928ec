"""Versioned schema migrations for the DuckDB store.

Every timestamp column is ``TIMESTAMP`` holding **UTC** wall time (DuckDB's ``TIMESTAMPTZ``
would depend on the session zone); :mod:`timem.store.duckdb_store` converts to and from
UTC-aware ``datetime`` at the boundary. Add a migration by appending a function to
``MIGRATIONS``; never edit a released one.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import duckdb

from timem.store.rows import one_row


def _v1(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    con.execute("""
        CREATE TABLE turns (
            id VARCHAR PRIMARY KEY, user_id VARCHAR NOT NULL, session_id VARCHAR NOT NULL,
            seq INTEGER NOT NULL, speaker VARCHAR NOT NULL, role VARCHAR NOT NULL, text VARCHAR NOT NULL,
            event_time TIMESTAMP NOT NULL, source_ref VARCHAR, image_caption VARCHAR,
            ingested_at TIMESTAMP NOT NULL)""")
    con.execute("""
        CREATE TABLE sessions (
            user_id VARCHAR NOT NULL, session_id VARCHAR NOT NULL, started_at TIMESTAMP NOT NULL,
            last_event_at TIMESTAMP NOT NULL, ended BOOLEAN NOT NULL DEFAULT FALSE,
            PRIMARY KEY (user_id, session_id))""")
    con.execute(f"""
        CREATE TABLE nodes (
            id VARCHAR PRIMARY KEY, user_id VARCHAR NOT NULL, level TINYINT NOT NULL,
            window_key VARCHAR NOT NULL, session_id VARCHAR,
            span_start TIMESTAMP NOT NULL, span_end TIMESTAMP NOT NULL, content VARCHAR NOT NULL,
            child_ids VARCHAR[] NOT NULL, history_ids VARCHAR[] NOT NULL, source_turn_ids VARCHAR[] NOT NULL,
            parent_id VARCHAR, model_id VARCHAR NOT NULL, prompt_version VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL, status VARCHAR NOT NULL, stale BOOLEAN NOT NULL DEFAULT FALSE,
            embedding FLOAT[{dim}] NOT NULL)""")
    con.execute("CREATE INDEX nodes_user_level ON nodes (user_id, level)")
    con.execute("CREATE INDEX nodes_parent ON nodes (parent_id)")
    con.execute("""
        CREATE TABLE llm_cache (
            key VARCHAR PRIMARY KEY, model_id VARCHAR NOT NULL, request VARCHAR NOT NULL,
            response VARCHAR NOT NULL, prompt_tokens INTEGER, completion_tokens INTEGER,
            created_at TIMESTAMP NOT NULL)""")
    con.execute("""
        CREATE TABLE llm_calls (
            called_at TIMESTAMP NOT NULL, model_id VARCHAR NOT NULL, purpose VARCHAR NOT NULL,
            user_id VARCHAR, cached BOOLEAN NOT NULL, prompt_tokens INTEGER, completion_tokens INTEGER,
            latency_ms DOUBLE, cache_key VARCHAR)""")
    con.execute("""
        CREATE TABLE recall_traces (
            id VARCHAR PRIMARY KEY, user_id VARCHAR NOT NULL, query VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL, trace VARCHAR NOT NULL)""")
    con.execute("""
        CREATE TABLE audit (
            logged_at TIMESTAMP NOT NULL, action VARCHAR NOT NULL, user_id VARCHAR, node_id VARCHAR,
            detail VARCHAR)""")


def _v2(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    """``nodes.mode``: how a node was written (verbatim / llm for L1; extractive / hybrid / abstractive for
    L2-L5). Existing rows: ``verbatim`` for L1 written by ``verbatim``, ``llm`` for other L1, ``abstractive``
    for L2-L5 (the only consolidation there was)."""
    con.execute("ALTER TABLE nodes ADD COLUMN IF NOT EXISTS mode VARCHAR")  # idempotent: safe in any order
    con.execute("UPDATE nodes SET mode = CASE WHEN level = 1 AND model_id = 'verbatim' THEN 'verbatim' "
                "WHEN level = 1 THEN 'llm' ELSE 'abstractive' END WHERE mode IS NULL")


def _v3(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    """``turns.utc_offset_minutes``: the speaker's UTC offset when the turn was said (``NULL`` for turns
    stored before: their relative dates keep resolving in the configured zone)."""
    con.execute("ALTER TABLE turns ADD COLUMN IF NOT EXISTS utc_offset_minutes SMALLINT")


def _v4(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    """``nodes.search_text``: what the BM25 index reads (CJK runs cut into words; see
    :mod:`timem.store.segmenter`), filled for existing rows; the fts index is rebuilt on next use."""
    from timem.store.segmenter import has_cjk, search_text

    con.execute("ALTER TABLE nodes ADD COLUMN IF NOT EXISTS search_text VARCHAR")
    rows = con.execute("SELECT id, content FROM nodes WHERE search_text IS NULL").fetchall()
    cjk = [[search_text(c), i] for i, c in rows if has_cjk(c)]
    con.execute("UPDATE nodes SET search_text = content WHERE search_text IS NULL")
    if cjk:
        con.executemany("UPDATE nodes SET search_text = ? WHERE id = ?", cjk)
    con.execute("INSERT OR REPLACE INTO meta VALUES ('fts_dirty', '1')")


def _v5(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    """SegTreeMem's segment tree (arXiv 2606.04555; :mod:`timem.tree.segtree`): ``segtree_nodes`` (internal
    nodes with their centroid, and leaves = L1 node ids, no text) and ``segtree_state`` (per user: leaves,
    next id, the settings it was built with). Empty at first: trees are built by the next ingest, chat
    turn, ``timem segtree build`` or a recall with ``recall_index = "segtree"``."""
    con.execute(f"""
        CREATE TABLE IF NOT EXISTS segtree_nodes (
            id VARCHAR NOT NULL, user_id VARCHAR NOT NULL, parent_id VARCHAR, height SMALLINT NOT NULL,
            first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL, span_start TIMESTAMP NOT NULL,
            span_end TIMESTAMP NOT NULL, n_leaves INTEGER NOT NULL, n_children INTEGER NOT NULL,
            centroid FLOAT[{dim}])""")
    con.execute("""
        CREATE TABLE IF NOT EXISTS segtree_state (
            user_id VARCHAR NOT NULL, n_leaves INTEGER NOT NULL, next_id INTEGER NOT NULL,
            threshold DOUBLE NOT NULL, max_children INTEGER NOT NULL, built_at TIMESTAMP NOT NULL)""")


def _v6_idempotency(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    """``write_requests``: one row per write a client sent with an idempotency key (the memory service's
    ``Idempotency-Key``), committed in the same transaction as its turns, so a retried write (after a
    timeout or a crash of the service) is answered from here instead of being stored twice. Holds the
    key, a SHA-256 of the request body and the turn ids written, never the text; erased with the user."""
    con.execute("""
        CREATE TABLE IF NOT EXISTS write_requests (
            user_id VARCHAR NOT NULL, key VARCHAR NOT NULL, fingerprint VARCHAR NOT NULL,
            turn_ids VARCHAR[] NOT NULL, created_at TIMESTAMP NOT NULL, PRIMARY KEY (user_id, key))""")


def _v7_memory_items(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    """The memory layer (:mod:`timem.memory`): ``memory_items`` (facts, preferences, events and plans
    about a subject, each with its validity interval ``[valid_from, valid_to)`` in UTC, ``valid_to`` NULL
    while it holds, its source L1 segment ids, supersession link, decay bookkeeping and an embedding of
    "subject attribute: value") and ``memory_extractions`` (which L1 segment / closed session was already
    read, so that extraction is resumable and runs once per unit)."""
    con.execute(f"""
        CREATE TABLE IF NOT EXISTS memory_items (
            id VARCHAR PRIMARY KEY, user_id VARCHAR NOT NULL, kind VARCHAR NOT NULL, subject VARCHAR NOT NULL,
            attribute VARCHAR NOT NULL, value VARCHAR NOT NULL, event_time TIMESTAMP NOT NULL,
            valid_from TIMESTAMP NOT NULL, valid_to TIMESTAMP, confidence DOUBLE NOT NULL, source VARCHAR NOT NULL,
            source_ids VARCHAR[] NOT NULL, superseded_by VARCHAR, status VARCHAR NOT NULL,
            pinned BOOLEAN NOT NULL DEFAULT FALSE, last_access TIMESTAMP, access_count INTEGER NOT NULL DEFAULT 0,
            created_at TIMESTAMP NOT NULL, embedding FLOAT[{dim}] NOT NULL)""")
    con.execute("CREATE INDEX IF NOT EXISTS memory_items_user ON memory_items (user_id, subject, attribute)")
    con.execute("""
        CREATE TABLE IF NOT EXISTS memory_extractions (
            user_id VARCHAR NOT NULL, unit_id VARCHAR NOT NULL, mode VARCHAR NOT NULL, n_items INTEGER NOT NULL,
            extracted_at TIMESTAMP NOT NULL, PRIMARY KEY (user_id, unit_id, mode))""")


def _v8_segtree_summaries(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    """``segtree_summaries``: a one-line topic per closed segment-tree node, written by an LLM on request
    (:func:`timem.store.segtree_tables.save_summary`), keyed by the node's id *and* leaf range so that a
    summary of a node that later grew or was rebuilt is never shown for it."""
    con.execute("""
        CREATE TABLE IF NOT EXISTS segtree_summaries (
            user_id VARCHAR NOT NULL, node_id VARCHAR NOT NULL, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL,
            summary VARCHAR NOT NULL, model_id VARCHAR NOT NULL, prompt_version VARCHAR NOT NULL,
            written_at TIMESTAMP NOT NULL, PRIMARY KEY (user_id, node_id))""")


def _v9_trace_bodies(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    """``recall_traces.trace`` (JSON text, ~60-110 KB per recall) becomes ``body`` (BLOB): the document as
    zlib-compressed JSON (:mod:`timem.store.traces`). Existing traces keep their whole document, compressed
    (about a quarter of the size; they load as before); new ones are written in the recall layer's compact
    form (:mod:`timem.recall.trace_store`). The table is rebuilt (DuckDB cannot drop a column of a table
    altered in the same transaction); ids, users, queries and times are kept. Idempotent: a table that
    already has ``body`` is left as it is."""
    cols = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = "
                                      "'recall_traces' AND table_schema = current_schema()").fetchall()}
    if "body" in cols:
        return
    con.execute("""
        CREATE TABLE recall_traces_v9 (
            id VARCHAR PRIMARY KEY, user_id VARCHAR NOT NULL, query VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL, body BLOB NOT NULL)""")
    ids = [r[0] for r in con.execute("SELECT id FROM recall_traces ORDER BY id").fetchall()]
    for i in range(0, len(ids), 200):  # bounded memory: a 400 MB table is read 200 traces at a time
        rows = con.execute("SELECT id, user_id, query, created_at, trace FROM recall_traces WHERE id IN "
                           "(SELECT unnest(?::VARCHAR[]))", [ids[i:i + 200]]).fetchall()
        con.executemany("INSERT INTO recall_traces_v9 VALUES (?,?,?,?,?)",
                        [[tid, u, q, at, zlib.compress(doc.encode(), 6)] for tid, u, q, at, doc in rows])
    con.execute("DROP TABLE recall_traces")
    con.execute("ALTER TABLE recall_traces_v9 RENAME TO recall_traces")


def _v10_bm25_tables(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    """BM25 postings in TiMem's own tables, kept up to date by each write (:mod:`timem.store.bm25`), built once
    from the existing nodes; the fts extension's index (rebuilt after every write before) is dropped."""
    from timem.store.bm25 import rebuild
    from timem.store.search import drop_fts

    rebuild(con)
    drop_fts(con)
    con.execute("DELETE FROM meta WHERE key IN ('fts_dirty', 'postings_version')")


def _v11_consolidation_jobs(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    """``consolidation_jobs``: the durable consolidation queue (:mod:`timem.store.jobs`). A chat write inserts its
    job in its turns' transaction; a worker consolidates it later (L1 segments, memory items, L2-L5, segment tree).
    ``state`` is pending / running / done / failed (``error`` says why), ``attempts`` counts claims, ``l1_done``
    says the job's L1 segments are written. Holds ids, never text; erased with the user. Empty at first: files
    written before kept consolidating in the write. Ids
    are ``max(id) + 1`` (one writer per file; a sequence would restart after a compaction's copy)."""
    con.execute("""
        CREATE TABLE IF NOT EXISTS consolidation_jobs (
            id BIGINT NOT NULL, user_id VARCHAR NOT NULL, session_ids VARCHAR[] NOT NULL, turn_ids VARCHAR[] NOT NULL,
            state VARCHAR NOT NULL, l1_done BOOLEAN NOT NULL, attempts INTEGER NOT NULL, enqueued_at TIMESTAMP NOT NULL,
            claimed_at TIMESTAMP, finished_at TIMESTAMP, error VARCHAR)""")


def _v12_node_mentions(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    """``node_mentions``: the calendar periods each L1 node's relative-date annotations name ("yesterday [= 7 May
    2023]"), one row each, what the TIDER time channel looks up by date (:mod:`timem.store.mentions`), kept in step
    by every write; filled once here from the existing L1 nodes (0.6 s at 100k leaves, 10 % annotated)."""
    from timem.store.mentions import rebuild

    rebuild(con)


def _v13_bm25_digits(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    """BM25 terms keep their digits (:data:`timem.store.bm25.IGNORE`: "LH1234" is the term ``lh1234``, not ``lh``;
    "room 214" holds ``214``) and typographic punctuation separates words ("Sarah’s" is ``sarah``, ``s``): the file's
    tokenizer macro is replaced and every node's postings are made again with
    it (:func:`timem.store.bm25.rebuild`: one pass over ``nodes``, ~3 s at 31k nodes on 2 busy cores), so no file mixes
    tokenizations. Term ids are renumbered; the in-memory copies are loaded again (a new nodes version)."""
    import uuid

    from timem.store.bm25 import rebuild

    rebuild(con)
    con.execute("INSERT OR REPLACE INTO meta VALUES ('nodes_version', ?)", [uuid.uuid4().hex])


def _v14_written_dates(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    """``node_mentions`` also holds the days of a month written in a turn ("on 7 May", "May 7th", "7 May 2024";
    :func:`timem.written_dates.mentioned_periods`): the table is written again from every L1 node, so a file of
    schema 13 is not left with rows that ``timem check`` reports stale (one scan of the L1 texts)."""
    from timem.store.mentions import rebuild

    rebuild(con)


MIGRATIONS: list[Callable[[duckdb.DuckDBPyConnection, int], None]] = [_v1, _v2, _v3, _v4, _v5, _v6_idempotency,
                                                                     _v7_memory_items, _v8_segtree_summaries,
                                                                     _v9_trace_bodies, _v10_bm25_tables,
                                                                     _v11_consolidation_jobs, _v12_node_mentions,
                                                                     _v13_bm25_digits, _v14_written_dates]


def migrate(con: duckdb.DuckDBPyConnection, dim: int) -> int:
    """Apply pending migrations inside one transaction each; returns the schema version."""
    con.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    current = one_row(con.execute("SELECT max(version) FROM schema_version"))[0] or 0
    for version, step in enumerate(MIGRATIONS, start=1):
        if version <= current:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            step(con, dim)
            con.execute("INSERT INTO schema_version VALUES (?)", [version])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        current = version
    return current
