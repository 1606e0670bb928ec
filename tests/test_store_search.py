"""Candidate search in DuckDB on real LoCoMo text: BM25 postings vs the fts extension's own
``match_bm25`` over the user's rows alone (per-user statistics), postings refresh after writes, and the
opt-in HNSW vector index."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import numpy as np
import pytest

from timem.datasets.locomo import load_locomo
from timem.models import Level, MemoryNode, NodeStatus
from timem.store import Store
from timem.store.bm25 import FILE_FTS_OPTIONS, Doc
from timem.store.memory_steps import Change
from timem.store.search import HNSW_INDEX, vector_top

PER_USER = 120  # real turns per user stored as L1 nodes


def _reference_bm25(store: Store, user_id: str, query: str, level: int, limit: int) -> list[tuple[str, float]]:
    """The fts extension's macro over an fts index of this user's rows alone (N, df, avgdl per user),
    user filter after scoring (the pre-postings query)."""
    store.con.execute("CREATE OR REPLACE TABLE ref_nodes AS SELECT id, level, status, search_text FROM nodes "
                      "WHERE user_id = ?", [user_id])
    store.con.execute(f"PRAGMA create_fts_index('ref_nodes', 'id', 'search_text', {FILE_FTS_OPTIONS}, "
                      "overwrite = 1)")
    return store.con.execute(
        "SELECT * FROM (SELECT id, fts_main_ref_nodes.match_bm25(id, ?) AS score FROM ref_nodes "
        "WHERE level = ? AND status = 'active') WHERE score IS NOT NULL "
        "ORDER BY round(score, 9) DESC, id LIMIT ?", [query, level, limit]).fetchall()


@pytest.fixture(scope="module")
def real(tmp_path_factory, embedder, locomo_dev):
    """Two users' first PER_USER real turns as L1 nodes (plus one L2 each), and their real questions."""
    users = load_locomo(locomo_dev, None, ZoneInfo("UTC"))[:2]
    path = tmp_path_factory.mktemp("search") / "timem.duckdb"
    store = Store(path, embedder.model_id, embedder.dim)
    questions: list[str] = []
    for u in users:
        turns = u.turns[:PER_USER]
        leaves = [MemoryNode(id=f"{u.user_id}:L1:{i}", user_id=u.user_id, level=Level.SEGMENT, window_key=t.id,
                             session_id=t.session_id, span_start=t.event_time, span_end=t.event_time,
                             content=f"{t.speaker}: {t.text}", source_turn_ids=[t.id], model_id="verbatim",
                             prompt_version="test") for i, t in enumerate(turns)]
        session = MemoryNode(id=f"{u.user_id}:L2", user_id=u.user_id, level=Level.SESSION, window_key="s",
                             span_start=turns[0].event_time, span_end=turns[-1].event_time,
                             content=" ".join(t.text for t in turns[:10]), child_ids=[n.id for n in leaves],
                             model_id="verbatim", prompt_version="test")
        nodes = [*leaves, session]
        store.add_nodes(nodes, embedder.embed([n.content for n in nodes]))
        questions += [q.question for q in u.questions[:15]]
    yield store, [u.user_id for u in users], questions
    store.close()


def test_bm25_postings_equal_match_bm25_on_real_text(real):
    store, users, questions = real
    compared = hits = 0
    for q in questions:
        for uid in users:
            for level in (1, 2):
                got = store.search_bm25(uid, q, level, 40)
                ref = _reference_bm25(store, uid, q, level, 40)
                assert [i for i, _ in got] == [i for i, _ in ref], q
                assert np.allclose([s for _, s in got], [s for _, s in ref], rtol=0, atol=1e-9)
                assert all(i.startswith(f"{uid}:") for i, _ in got)
                compared += 1
                hits += len(got)
    assert compared == len(questions) * 4 and hits > 200  # real questions do hit real turns


def test_a_users_bm25_scores_do_not_depend_on_other_users(tmp_path, embedder, real):
    src, users, questions = real
    nodes = src.nodes(users[0], status=None)
    with Store(tmp_path / "alone.duckdb", embedder.model_id, embedder.dim) as alone:
        alone.add_nodes(nodes, np.stack([src.embeddings([n.id for n in nodes])[n.id] for n in nodes]))
        for q in questions:
            got, beside = alone.search_bm25(users[0], q, 1, 40), src.search_bm25(users[0], q, 1, 40)
            assert [i for i, _ in got] == [i for i, _ in beside], q
            assert np.allclose([x for _, x in got], [x for _, x in beside], rtol=0, atol=1e-12), q


def test_bm25_postings_follow_writes(real, embedder):
    store, users, _ = real
    uid = users[0]
    top = store.search_bm25(uid, "zanzibar marmalade", 1, 5)
    assert top == []
    node = store.nodes(uid, 1)[0]
    text = node.content + " We flew to Zanzibar and ate marmalade."
    store.update_node(node.id, content=text, embedding=embedder.embed([text])[0])
    assert [i for i, _ in store.search_bm25(uid, "zanzibar marmalade", 1, 5)] == [node.id]
    assert store.search_bm25(users[1], "zanzibar marmalade", 1, 5) == []
    store.update_node(node.id, status=NodeStatus.DELETED)
    assert store.search_bm25(uid, "zanzibar marmalade", 1, 5) == []
    store.update_node(node.id, status=NodeStatus.ACTIVE)
    assert _reference_bm25(store, uid, "zanzibar", 1, 5)[0][0] == node.id


def test_hnsw_vector_index_matches_exact_search(tmp_path, embedder, real):
    src, users, questions = real
    path = tmp_path / "hnsw.duckdb"
    rows = src.con.execute("SELECT id FROM nodes ORDER BY id").fetchall()
    nodes = src.nodes(status=None)
    assert len(nodes) == len(rows)
    with Store(path, embedder.model_id, embedder.dim, vector_index="hnsw") as store:
        store.add_nodes(nodes, np.stack([src.embeddings([n.id for n in nodes])[n.id] for n in nodes]))
        assert store.con.execute("SELECT count(*) FROM duckdb_indexes() WHERE index_name = ?",
                                 [HNSW_INDEX]).fetchone()[0] == 1
        qvecs = embedder.embed(questions[:10])
        overlap = []
        for qv in qvecs:
            for uid in users:
                exact = vector_top(store.con, store.dim, uid, qv, 1, 10)
                approx = store.search_vector(uid, qv, 1, 10)
                # the doubling loop: a tiny first fetch still ends with `limit` of this user's rows
                doubled = vector_top(store.con, store.dim, uid, qv, 1, 10, hnsw=True, overfetch=0.05)
                for got in (approx, doubled):
                    assert len(got) == 10 and all(i.startswith(f"{uid}:L1:") for i, _ in got)
                    overlap.append(len({i for i, _ in got} & {i for i, _ in exact}) / 10)
        assert np.mean(overlap) >= 0.9  # approximate, but on 242 nodes HNSW is near exact
        plan = "\n".join(r[1] for r in store.con.execute(
            f"EXPLAIN SELECT id FROM nodes ORDER BY array_cosine_distance(embedding, ?::FLOAT[{store.dim}]) LIMIT 30",
            [qvecs[0].tolist()]).fetchall())
        assert "HNSW_INDEX_SCAN" in plan
    with Store(path, embedder.model_id, embedder.dim) as store:  # reopened exact: the index is dropped
        assert store.con.execute("SELECT count(*) FROM duckdb_indexes() WHERE index_name = ?",
                                 [HNSW_INDEX]).fetchone()[0] == 0
        assert store.con.execute("SELECT count(*) FROM audit WHERE action = 'hnsw-dropped'").fetchone()[0] == 1
        assert len(store.search_vector(users[0], qvecs[0], 1, 10)) == 10


def test_unknown_vector_index_is_refused(tmp_path, embedder):
    from timem.errors import StoreError

    with pytest.raises(StoreError, match="exact.*hnsw"):
        Store(tmp_path / "x.duckdb", embedder.model_id, embedder.dim, vector_index="faiss")


def test_a_file_from_before_the_bm25_tables_gets_them_when_opened(tmp_path, embedder, real):
    """A file of schema 9 (the fts extension's index, rebuilt after writes) is migrated: the BM25 tables are
    built from its nodes, the extension's index is dropped, and the scores are those of ``match_bm25``."""
    from timem.store.migrations import MIGRATIONS
    from timem.store.search import FTS_SCHEMA

    src, users, _ = real
    path = tmp_path / "old.duckdb"
    nodes = src.nodes(users[0], 1)[:20]
    with Store(path, embedder.model_id, embedder.dim) as store:
        store.add_nodes(nodes, np.stack([src.embeddings([n.id for n in nodes])[n.id] for n in nodes]))
        for table in ("bm25_dict", "bm25_docs", "bm25_postings", "bm25_stopwords"):  # what TiMem 9 left behind
            store.con.execute(f"DROP TABLE {table}")
        store.con.execute("PRAGMA create_fts_index('nodes', 'id', 'search_text', stemmer = 'porter', "
                          "stopwords = 'english', strip_accents = 1, lower = 1)")
        store.con.execute("DELETE FROM schema_version WHERE version >= 10")  # a file of schema 9
    with Store(path, embedder.model_id, embedder.dim) as store:
        assert store.schema_version == len(MIGRATIONS)  # 10 (the BM25 tables) and every later one applied
        assert not store.con.execute("SELECT count(*) FROM duckdb_tables() WHERE schema_name = ?",
                                     [FTS_SCHEMA]).fetchone()[0]
        word = max((w.strip(".,!?'\"") for n in nodes for w in n.content.split()), key=len)  # no stop word
        got, ref = store.search_bm25(users[0], word, 1, 5), _reference_bm25(store, users[0], word, 1, 5)
        assert ref and [i for i, _ in got] == [i for i, _ in ref]
        assert np.allclose([x for _, x in got], [x for _, x in ref], rtol=0, atol=1e-9)


KILLED_AFTER_REBUILD = """
import os, sys
import numpy as np
from timem.store import Store
store = Store(sys.argv[1], "sentence-transformers/all-MiniLM-L6-v2", 384)
nodes = store.nodes(sys.argv[2], 1)
for word, node in (("Zanzibar", nodes[0]), ("Mombasa", nodes[1])):  # two edits, each indexed in its transaction
    store.update_node(node.id, content=node.content + f" We flew to {word}.",
                      embedding=np.asarray(store.embeddings([node.id])[node.id]))
    if word == "Zanzibar":
        store.refresh_fts(force=True)  # a full rebuild (repair) too
        store.con.execute("CHECKPOINT")  # the second edit is only in the write-ahead log
print(nodes[1].id, flush=True)
os._exit(0)  # as kill -9: no checkpoint, no close
"""


def test_a_kill_after_an_indexed_write_leaves_a_file_that_opens(tmp_path, embedder):
    """An edit's postings are written in its transaction: a process killed before the next checkpoint leaves a
    file whose write-ahead log replays them (DuckDB could not replay the fts pragma's ``overwrite``, a DROP
    SCHEMA ... CASCADE, that the store used to run after writes)."""
    import subprocess
    import sys
    from datetime import UTC, datetime

    db = tmp_path / "small.duckdb"
    store = Store(db, embedder.model_id, embedder.dim)
    at = datetime(2024, 5, 1, tzinfo=UTC)
    texts = ["Mia drinks green tea every morning.", "Bo runs on Sundays.", "Mia adopted a cat called Pixel."]
    nodes = [MemoryNode(id=f"u:L1:{i}", user_id="u", level=Level.SEGMENT, window_key=f"w{i}", span_start=at,
                        span_end=at, content=t, model_id="verbatim", prompt_version="test")
             for i, t in enumerate(texts)]
    store.add_nodes(nodes, embedder.embed(texts))
    store.close()  # checkpointed: no log
    out = subprocess.run([sys.executable, "-c", KILLED_AFTER_REBUILD, str(db), "u"], capture_output=True,
                         text=True, timeout=300, check=True)
    assert (tmp_path / "small.duckdb.wal").exists()  # the rebuild is only in the log
    node_id = out.stdout.split()[0]
    reopened = Store(db, embedder.model_id, embedder.dim)
    try:
        assert [i for i, _ in reopened.search_bm25("u", "mombasa", 1, 5)] == [node_id]
    finally:
        reopened.close()


def test_in_memory_search_returns_exactly_what_the_sql_returns(real, embedder):
    """The per-user copies (:mod:`timem.store.memory_index`) give the SQL's rows, scores and order."""
    from timem.store.search import bm25_top

    store, users, questions = real
    qvecs = embedder.embed(questions)
    hits = 0
    for q, qv in zip(questions, qvecs, strict=True):
        for uid in users:
            for level in (1, 2):
                assert store.search_vector(uid, qv, level, 40) == vector_top(store.con, store.dim, uid, qv, level, 40)
                got, ref = store.search_bm25(uid, q, level, 40), bm25_top(store.con, uid, q, level, 40)
                # DuckDB sums a node's terms in scan order (~0.3 % of sums differ from numpy's in the last bit)
                assert [i for i, _ in got] == [i for i, _ in ref], q
                assert np.allclose([s for _, s in got], [s for _, s in ref], rtol=1e-15, atol=0), q
                hits += len(got)
    assert hits > 200


def test_in_memory_copies_follow_appends_edits_deletes_and_rollbacks(tmp_path, embedder, real):
    from timem.store.search import bm25_top

    src, users, _ = real
    nodes = src.nodes(users[0], 1)
    vecs = src.embeddings([n.id for n in nodes])
    q = "What did Caroline research about adoption agencies?"
    qv = embedder.embed([q])[0]

    def same() -> list[str]:
        got = store.search_vector(users[0], qv, 1, 15)
        assert got == vector_top(store.con, store.dim, users[0], qv, 1, 15)
        lex, ref = store.search_bm25(users[0], q, 1, 15), bm25_top(store.con, users[0], q, 1, 15)
        assert [i for i, _ in lex] == [i for i, _ in ref] and np.allclose([s for _, s in lex], [s for _, s in ref])
        return [i for i, _ in got]

    with Store(tmp_path / "follow.duckdb", embedder.model_id, embedder.dim) as store:
        store.add_nodes(nodes[:60], np.stack([vecs[n.id] for n in nodes[:60]]))
        first = same()
        loads = store.memory_index.loads["vec"]
        store.add_nodes(nodes[60:], np.stack([vecs[n.id] for n in nodes[60:]]))  # an append: patched, not reloaded
        after = same()
        assert store.memory_index.loads["vec"] == loads
        assert set(after) - set(first)  # the appended nodes compete
        extra = nodes[0].model_copy(update={"id": f"{users[0]}:L1:zz", "window_key": "zz"})
        with pytest.raises(RuntimeError), store.transaction():  # a rolled-back append is never seen
            store.add_nodes([extra], vecs[nodes[0].id][None, :])
            raise RuntimeError("abort")
        assert extra.id not in same()
        top = after[0]
        bm25_loads = store.memory_index.loads["bm25"]
        store.update_node(top, status=NodeStatus.DELETED)  # patched too: no reload
        assert top not in same() and store.memory_index.loads["vec"] == loads
        store.update_node(top, status=NodeStatus.ACTIVE)
        assert same() == after
        store.update_node(top, content="Caroline researched adoption agencies in Timbuktu.",
                          embedding=vecs[top])  # an edit: its old postings go, the new ones compete
        assert [i for i, _ in store.search_bm25(users[0], "timbuktu", 1, 5)] == [top]
        store.delete_nodes([after[1]])
        assert after[1] not in same()
        assert store.memory_index.loads["vec"] == loads and store.memory_index.loads["bm25"] == bm25_loads
        store.erase_user(users[0])
        assert store.search_vector(users[0], qv, 1, 15) == [] and store.search_bm25(users[0], q, 1, 15) == []


def test_exact_cosines_reproduce_duckdb_bit_for_bit(real, embedder):
    """numpy's in-order float32 sums give DuckDB's array_cosine_similarity exactly (real vectors, random ones,
    a vector equal or opposite to the query, and a zero vector, which DuckDB clamps to -1)."""
    from timem.store.memory_index import exact_cosines

    store, users, questions = real
    rng = np.random.default_rng(7)
    vecs = np.stack(list(store.embeddings([n.id for n in store.nodes(users[0], 1)]).values()))
    for q in [*embedder.embed(questions[:5]), *rng.normal(size=(5, store.dim)).astype(np.float32)]:
        rows = np.concatenate([vecs, rng.normal(size=(50, store.dim)).astype(np.float32),
                               np.stack([q, -q, 3 * q, np.zeros_like(q)])]).astype(np.float32)
        ref = [r[0] for r in store.con.execute(
            f"SELECT array_cosine_similarity(v::FLOAT[{store.dim}], ?::FLOAT[{store.dim}]) "
            "FROM (SELECT unnest(?::FLOAT[][]) AS v, generate_subscripts(?::FLOAT[][], 1) AS k) ORDER BY k",
            [np.asarray(q, np.float32).tolist(), rows.tolist(), rows.tolist()]).fetchall()]
        assert exact_cosines(rows, q) == ref


def test_the_float16_scan_stays_within_its_bound_and_ranks_as_the_float32_one(real, embedder, monkeypatch):
    """A large user's vector copy is scanned over float16 rows (torch, summed in float32); its dot products stay
    within HALF_DOT_ERROR of the exact ones on real vectors, and the exact top k is the float32 scan's."""
    from timem.store import memory_vectors as mv

    store, users, questions = real
    assert mv.half_scan()  # torch is installed and sums in float32 here
    monkeypatch.setattr(mv, "_SCAN", ["float16"])  # as the timing probe finds on a CPU with fast float16 kernels
    small = mv.load(store.con, users[0], 1, store.dim)
    assert small.half is None and len(small.ids) < mv.HALF_SCAN_MIN_ROWS  # a small copy: no float16 rows
    monkeypatch.setattr(mv, "HALF_SCAN_MIN_ROWS", len(small.ids))
    copy = mv.load(store.con, users[0], 1, store.dim)
    assert copy.half is not None and copy.half.dtype == np.float16
    monkeypatch.setattr(mv, "HALF_SCAN_MIN_ROWS", len(small.ids) + 1)
    added = Doc("u:L1:new", users[0], 1, "active", 1)
    grown = mv.patched(small, users[0], 1, [Change((), (added,), small.buf[:1].copy(), ())])
    assert grown.half is not None and np.array_equal(grown.half[: len(grown.ids)],
                                                     grown.buf[: len(grown.ids)].astype(np.float16))
    plain = mv.Vectors(copy.ids, copy.where, copy.buf, copy.alive)
    worst = 0.0
    for qv in embedder.embed(questions):
        half, full = mv.dots(copy, qv), mv.dots(plain, qv)
        assert (half.error, full.error) == (mv.HALF_DOT_ERROR, mv.F32_DOT_ERROR)
        exact = copy.buf.astype(np.float64) @ qv.astype(np.float64)
        worst = max(worst, float(np.max(np.abs(half.values - exact))))
        for k in (1, 10, 40):
            assert mv.top(copy, qv, k) == mv.top(plain, qv, k)
    assert 0 < worst <= mv.HALF_DOT_ERROR


def test_the_scan_probe_runs_once_and_a_float32_choice_keeps_no_low_precision_rows(real, embedder, monkeypatch):
    """The timing probe (``scan_dtype``) runs once per process; where it finds numpy's float32 scan the fastest, a
    large copy gets no float16 or bfloat16 rows, neither on load nor when a write patches it, and its scan and top k
    are the float32 ones."""
    from timem.store import memory_vectors as mv

    store, users, questions = real
    small = mv.load(store.con, users[0], 1, store.dim)
    monkeypatch.setattr(mv, "HALF_SCAN_MIN_ROWS", len(small.ids))
    monkeypatch.setattr(mv, "_SCAN", [])
    probes: list[int] = []
    real_probe = mv.scan_dtype

    def counted(mat, lowered=None):
        probes.append(len(mat))
        return real_probe(mat, lowered)

    monkeypatch.setattr(mv, "scan_dtype", counted)
    mv.load(store.con, users[0], 1, store.dim)
    mv.load(store.con, users[0], 1, store.dim)
    assert len(mv._SCAN) == 1 and mv._SCAN[0] in ("float32", "float16", "bfloat16")  # timed once, remembered
    # asked again only while a low-precision scan wins: after a float32 choice no load converts its rows at all
    assert probes == [len(small.ids)] * (1 if mv._SCAN == ["float32"] else 2)
    monkeypatch.setattr(mv, "_SCAN", ["float32"])
    copy = mv.load(store.con, users[0], 1, store.dim)
    assert copy.half is None
    added = Doc("u:L1:new", users[0], 1, "active", 1)
    assert mv.patched(copy, users[0], 1, [Change((), (added,), copy.buf[:1].copy(), ())]).half is None
    plain = mv.Vectors(copy.ids, copy.where, copy.buf, copy.alive)
    for qv in embedder.embed(questions[:3]):
        assert mv.dots(copy, qv).error == mv.F32_DOT_ERROR
        assert mv.top(copy, qv, 10) == mv.top(plain, qv, 10)


def test_the_bfloat16_scan_stays_within_its_bound_and_ranks_as_the_float32_one(real, embedder, monkeypatch):
    """Where the probe picks bfloat16 (an AVX-512 BF16 CPU), a large copy holds its rows' bfloat16 bits (a write
    appends its rows' bits); the scan's dot products stay within BF16_DOT_ERROR of the exact ones on real vectors,
    and the exact top k is the float32 scan's."""
    from timem.store import memory_vectors as mv

    store, users, questions = real
    assert mv.bf16_scan()  # torch is installed and sums bfloat16 products in float32 here
    small = mv.load(store.con, users[0], 1, store.dim)
    monkeypatch.setattr(mv, "HALF_SCAN_MIN_ROWS", len(small.ids))
    monkeypatch.setattr(mv, "_SCAN", ["bfloat16"])
    copy = mv.load(store.con, users[0], 1, store.dim)
    assert copy.half is not None and copy.half.dtype == np.uint16
    widened = mv._bf16_floats(copy.half[: len(copy.ids)])
    assert np.all(np.abs(widened - copy.buf[: len(copy.ids)]) <= 2.0 ** -8 * np.abs(copy.buf[: len(copy.ids)]))
    added = Doc("u:L1:new", users[0], 1, "active", 1)
    grown = mv.patched(copy, users[0], 1, [Change((), (added,), copy.buf[:1].copy(), ())])
    assert grown.half is not None and grown.half.dtype == np.uint16
    assert np.array_equal(grown.half[len(copy.ids)], copy.half[0])  # the new row's bits, as the load rounds them
    plain = mv.Vectors(copy.ids, copy.where, copy.buf, copy.alive)
    worst = 0.0
    for qv in embedder.embed(questions):
        low = mv.dots(copy, qv)
        assert low.error == mv.BF16_DOT_ERROR
        exact = copy.buf[: len(copy.ids)].astype(np.float64) @ qv.astype(np.float64)
        worst = max(worst, float(np.max(np.abs(low.values - exact))))
        for k in (1, 10, 40):
            assert mv.top(copy, qv, k) == mv.top(plain, qv, k)
    assert 0 < worst <= mv.BF16_DOT_ERROR
