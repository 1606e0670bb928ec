"""BM25 terms keep their digits (schema 13, :data:`timem.store.bm25.IGNORE`): a flight number, room number or code
decides between two lines that differ by it alone; the date and time every leaf starts with add no term
(:data:`timem.store.bm25.NUMBER_STOPWORDS`); a file indexed with the old tokenizer ("LH1234" was ``lh``) is indexed
again when opened (migration 13), and ``timem check`` reports an index made with another tokenizer (``--repair``
builds it again). Real DuckDB files, no LLM."""

from __future__ import annotations

from datetime import UTC, datetime

from trial_support import fixtures

from timem.models import Level, MemoryNode
from timem.store import Store, bm25
from timem.store.check import check_store
from timem.store.migrations import MIGRATIONS
from timem.store.search import bm25_top

embedder, eng = fixtures()

POSTINGS = ("SELECT p.user_id, p.level, p.status, d.term, p.node_id, p.tf, p.len FROM bm25_postings p "
            "JOIN bm25_dict d USING (termid) ORDER BY ALL")
AT = datetime(2024, 5, 8, 13, 56, tzinfo=UTC)
#: pairs of lines that differ by a code only; the second of each pair has the larger id, so a tie (the old
#: tokenizer: both lines hold the same terms) puts the first one first
LINES = [("a1", "On 8 May 2024 (Wednesday) 13:56:\nMia: My flight to Lisbon is LH1234, it leaves at 10:30."),
         ("a2", "On 8 May 2024 (Wednesday) 13:56:\nMia: My flight to Lisbon is LH4321, it leaves at 10:30."),
         ("b1", "On 8 May 2024 (Wednesday) 13:56:\nMia: We stayed in room 412 at the Hotel Sol."),
         ("b2", "On 8 May 2024 (Wednesday) 13:56:\nMia: We stayed in room 214 at the Hotel Sol."),
         ("c1", "On 8 May 2024 (Wednesday) 13:56:\nMia: The door code for the flat is 7781 and gate B11."),
         ("c2", "On 8 May 2024 (Wednesday) 13:56:\nMia: The door code for the flat is 5590 and gate B12."),
         ("d1", "On 8 May 2024 (Wednesday) 13:56:\nMia: I booked a table for dinner with Ana."),
         ("d2", "On 8 May 2024 (Wednesday) 13:56:\nMia: Our cat sleeps on the sofa all day.")]
#: question -> the line it asks about
ASKED = {"Was my flight to Lisbon LH4321?": "a2", "Which room was I in, 214?": "b2",
         "What was the door code 5590 for?": "c2", "Which gate, B12?": "c2", "Flight lh1234": "a1"}


def _file(path, embedder) -> Store:
    store = Store(path, embedder.model_id, embedder.dim)
    nodes = [MemoryNode(id=i, user_id="mia", level=Level.SEGMENT, window_key=i, session_id="s0", span_start=AT,
                        span_end=AT, content=text, model_id="verbatim", prompt_version="test") for i, text in LINES]
    store.add_nodes(nodes, embedder.embed([n.content for n in nodes]))
    return store


def _first(store: Store, question: str) -> list[str]:
    """The best line by BM25, through the in-memory copy (ASCII: the Python tokenizer replay) and in SQL."""
    return [store.search_bm25("mia", question, 1, 3)[0][0], bm25_top(store.con, "mia", question, 1, 3)[0][0]]


def _terms(store: Store, node_id: str) -> set[str]:
    return {r[0] for r in store.con.execute("SELECT d.term FROM bm25_postings p JOIN bm25_dict d USING (termid) "
                                            "WHERE p.node_id = ?", [node_id]).fetchall()}


def test_a_code_in_the_question_puts_its_line_first(tmp_path, embedder):
    store = _file(tmp_path / "codes.duckdb", embedder)
    for question, line in ASKED.items():
        assert _first(store, question) == [line, line], question
    # a non-ASCII query goes the SQL way for its words: the same terms
    assert store.search_bm25("mia", "Zimmer 214 – straße?", 1, 3)[0][0] == "b2"
    assert {"lh1234", "lisbon", "flight", "leav"} <= _terms(store, "a1")
    assert {"214", "room"} <= _terms(store, "b2") and {"b12", "5590"} <= _terms(store, "c2")
    # the date and time every leaf starts with, and the time in the text, are no terms
    assert not _terms(store, "d1") & {"8", "2024", "13", "56", "10", "30"}
    assert bm25.tokenizer_current(store.con)
    store.close()


def test_the_old_tokenizer_could_not_tell_the_lines_apart(tmp_path, embedder):
    """What a file of schema 12 held: "LH1234" was ``lh``, "214" nothing (so the test above fails on it)."""
    store = _file(tmp_path / "old.duckdb", embedder)
    with store.transaction():
        bm25.rebuild(store.con, legacy=True)
        store.mark_nodes_written()
    assert "lh" in _terms(store, "a1") and not {"lh1234", "214"} & (_terms(store, "a1") | _terms(store, "b2"))
    assert _first(store, "Was my flight to Lisbon LH4321?") == ["a1", "a1"]  # a tie, broken by id
    assert not bm25.tokenizer_current(store.con)
    store.close()


def test_a_file_indexed_with_the_old_tokenizer_is_indexed_again_when_opened(tmp_path, embedder):
    path = tmp_path / "v12.duckdb"
    store = _file(path, embedder)
    fresh = store.con.execute(POSTINGS).fetchall()
    store.search_bm25("mia", "flight", 1, 3)  # an in-memory copy made before
    with store.transaction():  # the file as schema 12 left it
        bm25.rebuild(store.con, legacy=True)
        store.mark_nodes_written()
    store.con.execute("DELETE FROM schema_version WHERE version >= 13")
    old = store.con.execute(POSTINGS).fetchall()
    assert old != fresh
    store.close()
    with Store(path, embedder.model_id, embedder.dim) as reopened:
        assert reopened.schema_version == len(MIGRATIONS) >= 13
        assert reopened.con.execute(POSTINGS).fetchall() == fresh
        assert bm25.tokenizer_current(reopened.con)
        for question, line in ASKED.items():
            assert _first(reopened, question) == [line, line], question


def test_check_reports_an_index_of_another_tokenizer_and_repair_rebuilds_it(eng):
    eng.remember("mia", "s0", "My flight to Lisbon is LH1234.", AT, user_name="Mia")
    store = eng.store
    assert not [v for v in check_store(store, eng.config) if v.rule == "fts"]
    with store.transaction():
        bm25.rebuild(store.con, legacy=True)
        store.mark_nodes_written()
    found = [v for v in eng.check() if v.rule == "fts"]
    assert len(found) == 1 and "tokenizer" in found[0].detail and "timem check --repair" in found[0].detail
    assert not [v for v in eng.check(repair=True) if v.rule == "fts"]
    assert bm25.tokenizer_current(store.con)
    leaf = next(n for n in eng.nodes("mia", 1) if "LH1234" in n.content)
    assert store.search_bm25("mia", "LH1234", 1, 3)[0][0] == leaf.id


def test_typographic_punctuation_separates_words_as_ascii_punctuation_does(tmp_path, embedder):
    """Phones type "Sarah’s" and "great…": the curly apostrophe, dashes, the ellipsis and curly quotes split words
    as their ASCII forms do, so "Sarah" finds "Sarah’s flight" (it was the one term ``sarah’s``)."""
    from timem.store import Store

    s = Store(tmp_path / "typo.duckdb", embedder.model_id, embedder.dim)
    try:
        tok = lambda t: [w for w in s.con.execute("SELECT bm25_tokenize(?)", [t]).fetchone()[0] if w]  # noqa: E731
        assert tok("Sarah’s flight — great… “yes” well–maybe «x»") == \
            ["sarah", "s", "flight", "great", "yes", "well", "maybe", "x"]
        assert tok("I’m sure Sarah’s") == tok("I'm sure Sarah's")
    finally:
        s.close()
