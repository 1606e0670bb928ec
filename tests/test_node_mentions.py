"""The table of the dates L1 texts mention (``node_mentions``, :mod:`timem.store.mentions`), which the TIDER time
channel looks up instead of reading every L1 text: it follows every write to ``nodes`` (insert, edit, forget,
hard erase, erase-user, a rewritten turn, a merge), a file made without it gets it when opened, and ``timem
check`` finds rows out of step (``--repair`` rebuilds them). Real DuckDB files, no LLM."""

from __future__ import annotations

from datetime import UTC, date, datetime

import numpy as np
from trial_support import fixtures

from timem.models import Level, MemoryNode
from timem.store import Store
from timem.store.check import check_store
from timem.store.mentions import mention_rows

embedder, eng = fixtures()

MAY8 = datetime(2024, 5, 8, 18, tzinfo=UTC)
MAY7 = (date(2024, 5, 7), date(2024, 5, 7), 2)  # the days of "on 7 May" (max. period: two days)


def _rows(store, user_id: str | None = None) -> list[tuple]:
    sql, args = "SELECT user_id, node_id, first_day, last_day FROM node_mentions", []
    if user_id is not None:
        sql, args = sql + " WHERE user_id = ?", [user_id]
    return sorted(store.con.execute(sql, args).fetchall())


def _expected(store) -> list[tuple]:
    """What every L1 text of the file mentions, read from the texts."""
    nodes = store.con.execute("SELECT id, user_id, content FROM nodes WHERE level = 1").fetchall()
    return sorted(mention_rows(nodes))


def _hiking(eng, user: str = "mia") -> MemoryNode:
    eng.remember(user, "s0", "Yesterday I went hiking up Mount Rigi.", MAY8, user_name="Mia")
    return next(n for n in eng.nodes(user, 1) if "hiking" in n.content)


def test_a_leaf_gets_the_dates_it_mentions_and_an_edit_writes_them_again(eng):
    leaf = _hiking(eng)
    store = eng.store
    assert _rows(store) == [("mia", leaf.id, date(2024, 5, 7), date(2024, 5, 7))]
    assert [i for i, _ in store.segments_mentioning("mia", [MAY7])] == [leaf.id]
    eng.edit_memory(leaf.id, "Last week [= week of 29 April 2024] I went hiking; 上周末[=2024年5月4日至5日周末]")
    assert _rows(store) == [("mia", leaf.id, date(2024, 4, 29), date(2024, 5, 5)),
                            ("mia", leaf.id, date(2024, 5, 4), date(2024, 5, 5))]
    assert store.segments_mentioning("mia", [MAY7]) == []  # a week is longer than the day asked about
    assert [i for i, _ in store.segments_mentioning("mia", [(date(2024, 4, 29), date(2024, 5, 5), 8)])] == [leaf.id]
    eng.edit_memory(leaf.id, "I went hiking.")
    assert _rows(store) == []
    assert not [v for v in check_store(store, eng.config) if v.rule == "mentions"]


def test_forget_hides_a_leaf_and_a_hard_erase_removes_its_rows(eng):
    leaf = _hiking(eng)
    store = eng.store
    eng.delete_memories([leaf.id])  # forget: the rows stay, the lookup reads active leaves only
    assert _rows(store) and store.segments_mentioning("mia", [MAY7]) == []
    eng.restore_memory(leaf.id)
    assert [i for i, _ in store.segments_mentioning("mia", [MAY7])] == [leaf.id]
    eng.delete_memories([leaf.id], hard=True)
    assert _rows(store) == [] and store.segments_mentioning("mia", [MAY7]) == []
    assert store.con.execute("SELECT count(*) FROM node_mentions WHERE node_id = ?", [leaf.id]).fetchone()[0] == 0


def test_erase_user_leaves_no_row_naming_the_user(eng):
    _hiking(eng, "mia")
    bob = _hiking(eng, "bob")
    eng.erase_user("mia")
    store = eng.store
    assert store.con.execute("SELECT count(*) FROM node_mentions WHERE user_id = 'mia' OR node_id NOT IN "
                             "(SELECT id FROM nodes)").fetchone()[0] == 0
    assert _rows(store) == [("bob", bob.id, date(2024, 5, 7), date(2024, 5, 7))]


def test_a_rewritten_turn_takes_the_rows_of_its_segments(eng):
    leaf = _hiking(eng)
    store = eng.store
    turn = store.turns("mia", ids=leaf.source_turn_ids[:1])[0]
    with store.transaction():
        gone = store.update_turn_text(turn.model_copy(update={"text": "I went hiking."}))
    assert leaf.id in {i for i, _ in gone}
    assert _rows(store) == []


def test_a_file_made_without_the_table_gets_it_when_opened(eng, embedder):
    from timem.store.migrations import MIGRATIONS

    _hiking(eng, "mia")
    eng.remember("bob", "s0", "上周末我们去了海边。Last month I started the cello.", MAY8, user_name="Bob")
    store = eng.store
    want = _rows(store)
    assert len(want) == 3 and want == _expected(store)
    path = store.path
    store.con.execute("DROP TABLE node_mentions")  # a file of schema 11, before the table
    store.con.execute("DELETE FROM schema_version WHERE version >= 12")
    store.close()
    with Store(path, embedder.model_id, embedder.dim) as reopened:
        assert reopened.schema_version == len(MIGRATIONS)
        assert _rows(reopened) == want
        assert [i for i, _ in reopened.segments_mentioning("mia", [MAY7])] == [r[1] for r in want if r[0] == "mia"]


def test_check_finds_rows_out_of_step_and_repair_rebuilds_them(eng):
    leaf = _hiking(eng)
    store = eng.store
    store.con.execute("DELETE FROM node_mentions")
    store.con.execute("INSERT INTO node_mentions VALUES ('mia', 'nobody', DATE '2024-01-01', DATE '2024-01-01')")
    found = [v for v in eng.check() if v.rule == "mentions"]
    assert sorted(v.node_id for v in found) == sorted([leaf.id, "nobody"])
    assert "timem check --repair" in found[0].detail
    assert not [v for v in eng.check(repair=True) if v.rule == "mentions"]
    assert _rows(store) == [("mia", leaf.id, date(2024, 5, 7), date(2024, 5, 7))]


def test_a_merged_file_brings_the_rows_of_its_leaves(eng, embedder, tmp_path):
    from trial_support import engine

    _hiking(eng, "mia")
    with Store(tmp_path / "other.duckdb", embedder.model_id, embedder.dim) as other:
        bob = _hiking(engine(tmp_path / "o", other, embedder), "bob")
        other.checkpoint()
    eng.store.merge_file(tmp_path / "other.duckdb")
    assert ("bob", bob.id, date(2024, 5, 7), date(2024, 5, 7)) in _rows(eng.store, "bob")
    assert _rows(eng.store) == _expected(eng.store)


def test_a_typed_date_past_year_9999_is_stored_not_raised(store):
    """Every L1 text is read when it is stored: a bracket that names a week past the last date Python knows (typed
    by a user, never written by the annotator) is skipped, as an impossible date is, instead of failing the write."""
    from timem.written_dates import annotated_periods

    text = "See you then [= week of 27 December 9999] or [= 31 February 2023], on [= 7 May 2024]."
    assert annotated_periods(text) == [(date(2024, 5, 7), date(2024, 5, 7))]
    at = datetime(2024, 5, 8, tzinfo=UTC)
    node = MemoryNode(id="n1", user_id="mia", level=Level.SEGMENT, window_key="segment:t1", span_start=at, span_end=at,
                      content=text, source_turn_ids=["t1"], model_id="verbatim", prompt_version="v")
    vec = np.zeros(store.dim, dtype=np.float32)
    vec[0] = 1.0
    store.add_nodes([node], vec[None, :])
    assert _rows(store) == [("mia", "n1", date(2024, 5, 7), date(2024, 5, 7))]
