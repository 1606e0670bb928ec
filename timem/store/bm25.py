"""BM25 postings kept in TiMem's own tables, maintained in each write's transaction (issue 26 §2).

DuckDB's fts extension builds its index in one pass over the whole table (``PRAGMA create_fts_index``) and has
no way to add or remove one document, so a store that rebuilt it after every write paid O(N) per write (2.3 s
at 23k rows, ~17 s at 100k). These tables hold the same information and are changed row by row:

* ``bm25_dict(termid, term)`` -- every stemmed term ever indexed; a new term gets ``max(termid) + 1``, new
  terms of one write numbered by (first node of the write holding it, term), which is how the extension
  numbers them in a full build (first document, then term), so a file written only by appends has the
  term ids a full build would give it. Terms are never removed by a write (a term no node holds any more
  scores nothing: its postings are gone); :func:`rebuild` (repair, hard erase) renumbers from scratch.
* ``bm25_docs(node_id, user_id, level, status, len)`` -- one row per node of any status; ``len`` is its
  number of indexed terms (0 for an empty text).
* ``bm25_postings(user_id, level, status, termid, node_id, tf, len)`` -- one row per (node, term), the
  shape of the table the store used to derive from the fts index.

Tokens come from the extension itself: the ``bm25_tokenize`` macro and the ``bm25_stopwords`` table are
copied into the file from an fts index the extension builds on a scratch in-memory table with
:data:`FTS_OPTIONS` (:func:`fts_tokenizer`), and ``stem(w, 'porter')`` is the extension's stemmer. A term is
``stem(w, 'porter')`` of each token ``w`` of ``bm25_tokenize(search_text)`` that is not NULL, not empty and
not a stop word, as in the extension's indexing SQL. So ``N``, ``df``, ``len`` and ``avgdl`` per user, and
with them every score (:mod:`timem.store.search`), equal those of a full fts build with the same options and
stop words (a test checks it on LoCoMo text after random writes, edits and deletes).

**Digits are part of words** (schema 13, :data:`IGNORE`): the extension's default separator class holds
``0-9``, so "LH1234" was the term ``lh``, "room 214" only ``room``, and a flight number, room number, order
number or door code added nothing to a score. Now a token is a run of anything but whitespace and the ASCII
punctuation of that class: "LH1234" → ``lh1234``, "room 214" → ``room``, ``214``, "B12", "18th", "3pm".
Numbers of one or two digits and the years 1900-2099 are stop words (:data:`NUMBER_STOPWORDS`: the date and time
every leaf starts with are noise to BM25, measured). Tokens with digits go through the same Porter stemmer (what
``match_bm25`` does): it leaves codes as they are and takes a plural ``s`` off ("1990s" → ``1990``, "mp3s" →
``mp3``). A file's macro and stop words are those it was indexed with: :func:`tokenizer_current` tells whether they
are today's (``timem check`` reports an index made with others; ``--repair`` and migration 13 build it again).

:func:`index_docs` and :func:`unindex_docs` return what they added and removed as :class:`Doc` records, so
that the in-memory copies (:mod:`timem.store.memory_index`) follow the write without reading the tables again.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import duckdb

from timem.errors import StoreError

#: what separates words (the extension's ``ignore``, a regular expression over the lower-cased text): its default
#: class of ASCII punctuation *without* ``0-9``, so digits stay in words ("LH1234", "214"; module docstring), and the
#: typographic punctuation phones and word processors type: curly quotes and apostrophes, dashes, the ellipsis,
#: guillemets ("Sarah’s" was the one term ``sarah’s``, so "Sarah" or "Sarah's" never matched it; "great…" was
#: ``great…``)
IGNORE = r"""[!@#$%^&*()_+={}\[\]:;<>,.?~\\/\|'"`‘’‚‛“”„…–—«»-]+"""
#: the options the store indexes with (the extension's ``create_fts_index`` arguments)
FTS_OPTIONS = ("stemmer = 'porter', stopwords = 'english', strip_accents = 1, lower = 1, "
               f"ignore = '{IGNORE.replace(chr(39), chr(39) * 2)}'")
#: the options of schemas 9-12 (the extension's default separators, digits among them: "LH1234" was ``lh``);
#: migration 13 indexes such a file again with :data:`FTS_OPTIONS`
LEGACY_FTS_OPTIONS = "stemmer = 'porter', stopwords = 'english', strip_accents = 1, lower = 1"
#: numbers that are stop words besides the extension's English list: one or two digits (with a leading zero too)
#: and the years 1900-2099. Every leaf starts "On 8 May 2023 (Monday) 13:56:" and relative dates are resolved
#: in its text ("[= 7 May 2023]"): as terms, they made every leaf longer and moved LoCoMo dev's ranks (one
#: question lost at 1,000 tokens with them, none without); dates are the time channel's. Longer numbers (room
#: 214, flight 2490, order 55231) and every token with a letter ("lh1234", "b12", "18th", "3pm") are terms.
NUMBER_STOPWORDS = (tuple(str(n) for n in range(100)) + tuple(f"0{n}" for n in range(10))
                    + tuple(str(y) for y in range(1900, 2100)))
#: :data:`FTS_OPTIONS` with the file's own stop words (``bm25_stopwords``: the English list and
#: :data:`NUMBER_STOPWORDS`): an fts index built with them over the same text holds the store's terms (tests compare
#: the scores with its ``match_bm25``)
FILE_FTS_OPTIONS = FTS_OPTIONS.replace("stopwords = 'english'", "stopwords = 'bm25_stopwords'")
TABLES = ("bm25_dict", "bm25_docs", "bm25_postings", "bm25_stopwords")

TOKENS_SQL = """
    SELECT k, stem(w, 'porter') AS term FROM (
        SELECT k, unnest(bm25_tokenize(s)) AS w
        FROM (SELECT unnest(?::VARCHAR[]) AS s, unnest(range(?)) AS k))
    WHERE w IS NOT NULL AND w <> '' AND w NOT IN (SELECT sw FROM bm25_stopwords)"""


@dataclass(frozen=True)
class Doc:
    """One node as the BM25 index holds it: ``terms`` maps term id to term frequency; ``length`` is the
    number of its indexed terms."""

    node_id: str
    user_id: str
    level: int
    status: str
    length: int
    terms: dict[int, int] = field(default_factory=dict)
    #: term id -> term for each of ``terms`` (what an index write knows; empty for a removed node)
    names: dict[int, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=2)
def fts_tokenizer(options: str = FTS_OPTIONS) -> tuple[str, tuple[str, ...]]:
    """The fts extension's tokenizer macro body and stop words for ``options`` (``create_fts_index`` arguments,
    :data:`FTS_OPTIONS` unless a test builds an older file's index), as ``(macro definition over parameter s, stop
    words)``: read from an index it builds on a scratch table.

    Raises:
        StoreError: the extension is missing (see :func:`timem.store.extensions.extension_path`).
    """
    from timem.store.extensions import extension_path

    con = duckdb.connect(":memory:")
    try:
        con.load_extension(str(extension_path("fts")))
        con.execute("CREATE TABLE scratch (id VARCHAR, s VARCHAR)")
        con.execute(f"PRAGMA create_fts_index('scratch', 'id', 's', {options})")
        row = con.execute("SELECT macro_definition FROM duckdb_functions() WHERE schema_name = 'fts_main_scratch' "
                          "AND function_name = 'tokenize'").fetchone()
        if row is None or not row[0]:
            raise StoreError(f"the fts extension of duckdb {duckdb.__version__} made no tokenize macro; reinstall "
                             f"duckdb-extension-fts=={duckdb.__version__}")
        words = tuple(r[0] for r in con.execute("SELECT sw FROM fts_main_scratch.stopwords").fetchall())
        return str(row[0]), words
    finally:
        con.close()


def tokenizer(legacy: bool = False) -> tuple[str, tuple[str, ...]]:
    """The tokenizer the store indexes with, as ``(bm25_tokenize macro definition over parameter s, stop words)``:
    the extension's of :data:`FTS_OPTIONS` with :data:`NUMBER_STOPWORDS` added; with ``legacy``, that of schemas
    9-12 (:data:`LEGACY_FTS_OPTIONS`: what an older file holds; tests build one with it).

    Raises:
        StoreError: the extension is missing.
    """
    if legacy:
        return fts_tokenizer(LEGACY_FTS_OPTIONS)
    body, words = fts_tokenizer(FTS_OPTIONS)
    return body, words + NUMBER_STOPWORDS


def create_tables(con: duckdb.DuckDBPyConnection, legacy: bool = False) -> None:
    """Create the BM25 tables, the tokenizer macro and the stop words of :func:`tokenizer` (empty index; call in a
    transaction)."""
    body, words = tokenizer(legacy)
    con.execute(f"CREATE OR REPLACE MACRO bm25_tokenize(s) AS {body}")
    con.execute("CREATE TABLE IF NOT EXISTS bm25_stopwords (sw VARCHAR NOT NULL)")
    con.execute("DELETE FROM bm25_stopwords")
    con.execute("INSERT INTO bm25_stopwords SELECT unnest(?::VARCHAR[])", [list(words)])
    con.execute("CREATE TABLE IF NOT EXISTS bm25_dict (termid BIGINT NOT NULL, term VARCHAR NOT NULL)")
    con.execute("CREATE TABLE IF NOT EXISTS bm25_docs (node_id VARCHAR NOT NULL, user_id VARCHAR NOT NULL, "
                "level TINYINT NOT NULL, status VARCHAR NOT NULL, len BIGINT NOT NULL)")
    con.execute("CREATE TABLE IF NOT EXISTS bm25_postings (user_id VARCHAR NOT NULL, level TINYINT NOT NULL, "
                "status VARCHAR NOT NULL, termid BIGINT NOT NULL, node_id VARCHAR NOT NULL, tf INTEGER NOT NULL, "
                "len BIGINT NOT NULL)")


def index_docs(con: duckdb.DuckDBPyConnection, rows: Sequence[tuple[str, str, int, str, str | None]]
               ) -> list[Doc]:
    """Add nodes ``(node_id, user_id, level, status, search_text)`` to the index (none may be indexed
    already; call inside the write's transaction), in the order given (the order they were inserted).
    Cost: the nodes' own tokens plus one scan of ``bm25_dict``. Returns them as :class:`Doc` records."""
    if not rows:
        return []
    tokens = con.execute(TOKENS_SQL, [[r[4] for r in rows], len(rows)]).fetchall()
    per_doc: list[Counter[str]] = [Counter() for _ in rows]
    first: dict[str, int] = {}
    for k, term in tokens:
        per_doc[k][term] += 1
        if term not in first or k < first[term]:
            first[term] = k
    known: dict[str, int] = dict(con.execute(
        "SELECT term, termid FROM bm25_dict WHERE term IN (SELECT unnest(?::VARCHAR[]))", [list(first)]).fetchall())
    new = sorted((t for t in first if t not in known), key=lambda t: (first[t], t))
    if new:
        start = int(con.execute("SELECT coalesce(max(termid) + 1, 0) FROM bm25_dict").fetchone()[0])  # type: ignore[index]
        ids = list(range(start, start + len(new)))
        con.execute("INSERT INTO bm25_dict SELECT unnest(?::BIGINT[]), unnest(?::VARCHAR[])", [ids, new])
        known.update(zip(new, ids, strict=True))
    docs = [Doc(r[0], r[1], int(r[2]), r[3], sum(c.values()), {known[t]: n for t, n in c.items()},
                {known[t]: t for t in c}) for r, c in zip(rows, per_doc, strict=True)]
    con.execute("INSERT INTO bm25_docs SELECT unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), unnest(?::TINYINT[]), "
                "unnest(?::VARCHAR[]), unnest(?::BIGINT[])",
                [[d.node_id for d in docs], [d.user_id for d in docs], [d.level for d in docs],
                 [d.status for d in docs], [d.length for d in docs]])
    post = [(d, t, n) for d in docs for t, n in d.terms.items()]
    if post:
        con.execute("INSERT INTO bm25_postings SELECT unnest(?::VARCHAR[]), unnest(?::TINYINT[]), "
                    "unnest(?::VARCHAR[]), unnest(?::BIGINT[]), unnest(?::VARCHAR[]), unnest(?::INTEGER[]), "
                    "unnest(?::BIGINT[])",
                    [[d.user_id for d, _, _ in post], [d.level for d, _, _ in post], [d.status for d, _, _ in post],
                     [t for _, t, _ in post], [d.node_id for d, _, _ in post], [n for _, _, n in post],
                     [d.length for d, _, _ in post]])
    return docs


def unindex_docs(con: duckdb.DuckDBPyConnection, node_ids: Sequence[str]) -> list[Doc]:
    """Remove nodes from the index (call inside the write's transaction); returns what was removed (ids not
    indexed are skipped). Cost: one filtered scan of ``bm25_docs`` and ``bm25_postings``."""
    if not node_ids:
        return []
    ids = list(dict.fromkeys(node_ids))
    docs = con.execute("SELECT node_id, user_id, level, status, len FROM bm25_docs "
                       "WHERE node_id IN (SELECT unnest(?::VARCHAR[]))", [ids]).fetchall()
    if not docs:
        return []
    terms: dict[str, dict[int, int]] = {}
    for nid, termid, tf in con.execute("SELECT node_id, termid, tf FROM bm25_postings "
                                       "WHERE node_id IN (SELECT unnest(?::VARCHAR[]))", [ids]).fetchall():
        terms.setdefault(nid, {})[int(termid)] = int(tf)
    con.execute("DELETE FROM bm25_postings WHERE node_id IN (SELECT unnest(?::VARCHAR[]))", [ids])
    con.execute("DELETE FROM bm25_docs WHERE node_id IN (SELECT unnest(?::VARCHAR[]))", [ids])
    return [Doc(r[0], r[1], int(r[2]), r[3], int(r[4]), terms.get(r[0], {})) for r in docs]


def unindex_user(con: duckdb.DuckDBPyConnection, user_id: str) -> None:
    """Remove every node of ``user_id`` from the index (call inside the write's transaction)."""
    con.execute("DELETE FROM bm25_postings WHERE user_id = ?", [user_id])
    con.execute("DELETE FROM bm25_docs WHERE user_id = ?", [user_id])


def rebuild(con: duckdb.DuckDBPyConnection, legacy: bool = False) -> None:
    """Build the index again from ``nodes`` in one pass (repair, hard erase and migration 13 only: it reads every
    node; call inside a transaction), with :func:`tokenizer` (``legacy``: the one of schemas 9-12, for tests that
    make an older file). Term ids are numbered as the extension numbers them
    (first node in ``rowid`` order, then term), the postings sorted by ``(user_id, level, termid)`` so that
    DuckDB's zone maps skip the row groups of other users; terms of erased nodes leave ``bm25_dict``."""
    create_tables(con, legacy)
    for table in ("bm25_dict", "bm25_docs", "bm25_postings"):
        con.execute(f"DELETE FROM {table}")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE bm25_build AS
        SELECT n.rowid AS rid, n.id AS node_id, stem(w, 'porter') AS term
        FROM (SELECT rowid, id, unnest(bm25_tokenize(search_text)) AS w FROM nodes) n
        WHERE w IS NOT NULL AND w <> '' AND w NOT IN (SELECT sw FROM bm25_stopwords)""")
    con.execute("""
        INSERT INTO bm25_dict
        SELECT row_number() OVER (ORDER BY min(rid), term) - 1, term FROM bm25_build GROUP BY term""")
    con.execute("""
        INSERT INTO bm25_docs
        SELECT n.id, n.user_id, n.level, n.status, coalesce(l.len, 0)
        FROM nodes n LEFT JOIN (SELECT node_id, count(*) AS len FROM bm25_build GROUP BY node_id) l
          ON l.node_id = n.id
        ORDER BY n.rowid""")
    con.execute("""
        INSERT INTO bm25_postings
        SELECT d.user_id, d.level, d.status, t.termid, d.node_id, count(*)::INTEGER, d.len
        FROM bm25_build b JOIN bm25_dict t ON t.term = b.term JOIN bm25_docs d ON d.node_id = b.node_id
        GROUP BY ALL ORDER BY d.user_id, d.level, t.termid""")
    con.execute("DROP TABLE temp.bm25_build")


def tokenizer_current(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the file's ``bm25_tokenize`` macro and ``bm25_stopwords`` are those of :func:`tokenizer` (its
    postings were made with today's tokenizer); ``False`` for a file indexed with another (an older TiMem's, or
    another extension version's) or without them. ``timem check`` reports it; ``--repair`` builds the index again."""
    body, words = tokenizer()
    row = con.execute("SELECT macro_definition FROM duckdb_functions() WHERE schema_name = 'main' "
                      "AND function_name = 'bm25_tokenize'").fetchone()
    if row is None or str(row[0]) != body:
        return False
    if not has_tables(con):
        return False
    return {r[0] for r in con.execute("SELECT sw FROM bm25_stopwords").fetchall()} == set(words)


def has_tables(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the file holds every BM25 table."""
    n = con.execute("SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND table_name IN "
                    f"{TABLES}").fetchone()
    return bool(n and n[0] == len(TABLES))


def query_termids(con: duckdb.DuckDBPyConnection, query_text: str) -> list[int]:
    """Term ids of a query (already cut like indexed text, :func:`timem.store.segmenter.search_text`): its
    tokens stemmed as the extension's ``match_bm25`` stems them (stop words are not removed from a query,
    as there: they are never in the dictionary, but their stems may be); terms no node ever held are
    left out."""
    return [int(r[0]) for r in con.execute(
        "SELECT termid FROM bm25_dict WHERE term IN "
        "(SELECT DISTINCT stem(unnest(bm25_tokenize(?)), 'porter'))", [query_text]).fetchall()]
