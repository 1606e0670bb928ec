"""The per-user cache of segment-tree internal nodes (timem.store.segtree_index) never serves a stale tree: after
every kind of write (chat turn added, memory edited, soft-deleted, erased, a rolled-back write) the next
recall uses an index equal to a fresh load and recalls exactly what a cold cache recalls; and the
shortlist-then-exact scoring equals the per-height SQL it replaced (real DuckDB file, real MiniLM, no LLM)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from test_segtree_store import _user

from timem.config import Config
from timem.engine import MemoryEngine
from timem.models import Level
from timem.recall import recall
from timem.recall.options import RecallOptions
from timem.store import segtree_index as segindex
from timem.store import segtree_tables as segstore
from timem.store import segtree_view as segview

QT = datetime(2024, 6, 1, tzinfo=UTC)
@pytest.fixture()
def eng(store, embedder):
    cfg = Config(db_path=store.path, llm_backend="none", gate="score", gate_threshold=0.0, recall_index="segtree",
                 segtree_threshold=0.3, segtree_max_children=3)
    engine = MemoryEngine(cfg, store, embedder, None)
    engine.ingest([_user("u1"), _user("u2")])
    return engine


def _recall(eng: MemoryEngine, question: str) -> list[tuple]:
    res = recall(eng.store, eng.embedder, None, eng.config, "u1", question, QT, options=RecallOptions(persist=False))
    return [(c.node_id, c.fused, c.local, c.propagated, c.kept) for c in res.trace.candidates]


def _cached(eng: MemoryEngine) -> segindex.SegIndex:
    hit = eng.store.memory_index.latest(("seg", "u1", eng.config.recall.propagation_hops))
    assert hit is not None
    return hit[1]


def _same_index(a: segindex.SegIndex, b: segindex.SegIndex) -> None:
    """Equal node by node (an index patched after an append lists its new and rewritten nodes last, and keeps the
    rewritten ones' old rows, dead)."""
    live = [i for k, i in enumerate(a.ids) if a.alive is None or a.alive[k]]
    assert sorted(live) == sorted(b.ids) and len(live) == len(set(live))
    assert all(a.ids[a.pos[i]] == i and (a.alive is None or a.alive[a.pos[i]]) for i in live)
    assert sorted(i for h in a.by_height() for i in np.asarray(a.ids)[h]) == sorted(b.ids)
    for i in b.ids:
        x, y = a.pos[i], b.pos[i]
        assert (a.parent[x], a.height[x], a.n_children[x], a.start[x]) == (b.parent[y], b.height[y], b.n_children[y],
                                                                           b.start[y])
        assert np.array_equal(a.centroids[x], b.centroids[y])
    assert a.leaves == b.leaves and a.children == b.children  # the leaves' rows, patched like the nodes


def _assert_fresh(eng: MemoryEngine, question: str) -> list[tuple]:
    """Recall through the cache; the index it used equals a fresh load, and a cold cache recalls the same."""
    warm = _recall(eng, question)
    _same_index(_cached(eng), segindex.load_index(eng.store, "u1", eng.config.recall.propagation_hops))
    eng.store.memory_index.clear()
    assert _recall(eng, question) == warm
    return warm


def _leaf_ids(eng: MemoryEngine) -> set[str]:
    return {n.id for n in segstore.load(eng.store, "u1") if n.is_leaf}


def test_a_chat_turn_after_a_recall_is_seen_by_the_next_recall(eng, monkeypatch):
    _assert_fresh(eng, "What is the puppy called?")
    before = _cached(eng)
    eng.add_exchange("u1", "chat", "I bought a red kayak for the lake trips.", "A kayak sounds fun!",
                     datetime(2024, 4, 1, 9, tzinfo=UTC))
    with monkeypatch.context() as m:  # an append is patched into the cached index, not reloaded
        m.setattr(segindex, "load_index", lambda *a: pytest.fail("the whole index was reloaded after an append"))
        _recall(eng, "What colour is the kayak?")
        after = _cached(eng)
        assert after is not before and len(after.ids) > len(before.ids)
        assert after.alive is not None and not after.alive.all()  # the rewritten frontier nodes' old rows are dead
        kept = (list(after.ids), after.centroids.copy(), after.alive.copy())
        eng.add_exchange("u1", "chat", "The kayak is red with a yellow paddle.", "Nice!",
                         datetime(2024, 4, 2, 9, tzinfo=UTC))
        _recall(eng, "What colour is the paddle?")
        second = _cached(eng)
    assert second.spare is after.spare and np.shares_memory(second.centroids, after.centroids)  # appended in place
    assert (after.ids, after.centroids.tolist(), after.alive.tolist()) == (kept[0], kept[1].tolist(),
                                                                           kept[2].tolist())  # copy on write
    cands = _assert_fresh(eng, "What colour is the kayak?")
    new = [n.id for n in eng.store.nodes("u1", int(Level.SEGMENT)) if "kayak" in n.content]
    assert new and set(new) <= _leaf_ids(eng) and any(c[0] in new for c in cands)


def test_an_edit_after_a_recall_is_seen_by_the_next_recall(eng):
    _assert_fresh(eng, "When is the cello recital?")
    before = _cached(eng).centroids.copy()
    victim = next(n for n in eng.store.nodes("u1", int(Level.SEGMENT)) if "recital is next Friday" in n.content)
    eng.edit_memory(victim.id, "Ann: The cello recital moved to Sunday afternoon in the old church.")
    _assert_fresh(eng, "When is the cello recital?")
    assert not np.array_equal(_cached(eng).centroids, before)  # the edited vector reached the centroids


@pytest.mark.parametrize("hard", [False, True], ids=["soft-delete", "erase"])
def test_a_delete_or_erase_after_a_recall_is_seen_by_the_next_recall(eng, hard):
    _assert_fresh(eng, "Where is the wedding?")
    victim = next(n for n in eng.store.nodes("u1", int(Level.SEGMENT)) if "married in Lisbon" in n.content)
    assert victim.id in _leaf_ids(eng)
    eng.delete_memories([victim.id], hard=hard)
    cands = _assert_fresh(eng, "Where is the wedding?")
    assert victim.id not in _leaf_ids(eng) and victim.id not in {c[0] for c in cands}


def test_a_rolled_back_write_is_not_served_from_the_cache(eng):
    question = "What does Biscuit chew?"
    _assert_fresh(eng, question)
    with pytest.raises(RuntimeError), eng.store.transaction():
        eng.add_exchange("u1", "chat", "Biscuit now chews the garden hose too.", "Oh no, Biscuit!",
                         datetime(2024, 4, 2, 9, tzinfo=UTC))
        inside = _recall(eng, question)  # cached at the uncommitted version
        hose = [n.id for n in eng.store.nodes("u1", int(Level.SEGMENT)) if "hose" in n.content]
        assert hose and _cached(eng).ids == segindex.load_index(eng.store, "u1", eng.config.recall.propagation_hops).ids
        assert any(c[0] in hose for c in inside)
        raise RuntimeError("abort")
    assert not any("hose" in n.content for n in eng.store.nodes("u1", int(Level.SEGMENT)))
    after = _assert_fresh(eng, question)
    assert after != inside


def test_versions_differ_for_every_sync_that_writes(eng):
    v1 = segstore.version(eng.store, "u1", 0.3, 3)
    segstore.sync(eng.store, "u1", 0.3, 3, rebuild=True)  # the same tree, rewritten
    v2 = segstore.version(eng.store, "u1", 0.3, 3)
    assert v1 is not None and v2 is not None and v1 != v2
    assert segstore.version(eng.store, "u1", 0.4, 3) is None  # other settings: not current


def _sql_top(store, user, qv, max_height, per_height, until):
    """The per-height query the shortlist replaced (DuckDB's own ranking)."""
    rows = store.con.execute(
        f"SELECT id, height, array_cosine_similarity(centroid, ?::FLOAT[{store.dim}]) AS cos FROM segtree_nodes "
        f"WHERE user_id = ? AND height BETWEEN 1 AND ? AND span_start <= ? "
        f"QUALIFY row_number() OVER (PARTITION BY height ORDER BY cos DESC, id) <= {int(per_height)}",
        [np.asarray(qv, dtype=np.float32).tolist(), user, max_height, until.replace(tzinfo=None)]).fetchall()
    return sorted((r[0], int(r[1]), float(r[2])) for r in rows)


@pytest.mark.parametrize("per_height", [1, 2, 5, 100])
def test_shortlist_then_exact_equals_the_sql_ranking(eng, per_height):
    index = segindex.load_index(eng.store, "u1", 3)
    assert len(index.ids) > per_height or per_height == 100
    for q, until in [("puppy vet vaccine", QT), ("wedding suit Lisbon", QT), ("cello Bach", QT),
                     ("cello Bach", datetime(2024, 3, 9, tzinfo=UTC))]:
        qv = eng.embedder.embed([q])[0]
        view = segview.TreeView(index, {}, qv, per_height, until)
        assert sorted(view.top) == _sql_top(eng.store, "u1", qv, 3, per_height, until)
        sql_cos = dict(eng.store.con.execute(
            f"SELECT id, array_cosine_similarity(centroid, ?::FLOAT[{eng.store.dim}]) FROM segtree_nodes "
            "WHERE user_id = 'u1' AND height >= 1", [qv.tolist()]).fetchall())
        assert view.cos and all(c == sql_cos[i] for i, c in view.cos.items())  # bit-identical to DuckDB's


def _leaf_dots(eng: MemoryEngine, qv: np.ndarray) -> tuple:
    eng.store.search_vector("u1", qv, int(Level.SEGMENT), 5)  # computes, and keeps, the L1 dot products
    dots = eng.store.memory_index.leaf_dots("u1", qv)
    assert dots is not None
    return dots


@pytest.mark.parametrize("per_height", [1, 2, 5, 100])
def test_the_shortlist_read_from_the_leaves_dot_products_equals_the_sql_ranking(eng, per_height):
    """A centroid is the mean of its leaves: the shortlist from prefix sums of the leaves' dot products is within
    MARGIN / 4 of the product with the centroids, and the exact ranking is DuckDB's."""
    index = segindex.load_index(eng.store, "u1", 3)
    for q, until in [("puppy vet vaccine", QT), ("wedding suit Lisbon", QT), ("cello Bach", QT),
                     ("cello Bach", datetime(2024, 3, 9, tzinfo=UTC))]:
        qv = eng.embedder.embed([q])[0]
        dots = _leaf_dots(eng, qv)
        assert index.rows_in(dots[0]) is not None
        (from_leaves, bound), (product, zero) = segview._approx(index, qv, dots), segview._approx(index, qv, None)
        assert from_leaves.dtype == np.float64 and product.dtype == np.float32 and zero == 0  # each path taken
        assert np.all(np.abs(from_leaves - product) <= bound + 1e-5)
        assert 0 < np.max(bound) <= segview.LOOSE
        view = segview.TreeView(index, {}, qv, per_height, until, dots)
        assert sorted(view.top) == _sql_top(eng.store, "u1", qv, 3, per_height, until)


def test_without_every_leaf_in_the_vector_copy_the_shortlist_uses_the_centroids(eng):
    index = segindex.load_index(eng.store, "u1", 3)
    qv = eng.embedder.embed(["puppy vet vaccine"])[0]
    dots = _leaf_dots(eng, qv)
    leaf = next(iter(index.leaves))
    where = {i: k for i, k in dots.vectors.where.items() if i != leaf}
    partial = dots.vectors.__class__(dots.vectors.ids, where, dots.vectors.buf, dots.vectors.alive)
    assert index.rows_in(partial) is None
    got, product = segview._approx(index, qv, dots._replace(vectors=partial)), segview._approx(index, qv, None)
    assert np.array_equal(got[0], product[0]) and got[1] == 0


def test_a_recall_shortlists_the_segment_tree_from_its_leaf_search(eng, monkeypatch):
    seen = []
    real = segview._approx
    monkeypatch.setattr(segview, "_approx", lambda ix, qv, dots: seen.append(dots) or real(ix, qv, dots))
    _recall(eng, "What is the puppy called?")
    assert seen and seen[0] is not None and segindex.SegIndex.rows_in(_cached(eng), seen[0][0]) is not None


def test_after_an_append_the_leaf_rows_are_extended_and_equal_a_full_match(eng):
    qv = eng.embedder.embed(["What colour is the kayak?"])[0]
    for day in (1, 2):
        eng.add_exchange("u1", "chat", f"Kayak trip number {day} on the lake.", "Fun!",
                         datetime(2024, 4, day, 9, tzinfo=UTC))
        _recall(eng, "What colour is the kayak?")
    index, dots = _cached(eng), _leaf_dots(eng, qv)
    assert index._rows_base is not None and index._rows_base[0] is dots.vectors.space  # a patch, same positions
    extended = index._extended_rows(dots.vectors)
    assert extended is not None and np.array_equal(extended, index._all_rows(dots.vectors))
    assert np.array_equal(index.rows_in(dots.vectors), extended)


def test_a_copy_patched_after_the_leaves_were_matched_reuses_their_rows_while_they_live(eng):
    """A write appends to the L1 copy (same positions) and leaves the tree as it is until the worker syncs it: the
    first recall after it reuses the leaves' rows (no pass over every leaf) while they are live, and they equal a
    full match; a dead leaf's row is matched again (then the copy has no row for it: None)."""
    index = segindex.load_index(eng.store, "u1", 3)
    old = _leaf_dots(eng, eng.embedder.embed(["puppy vet vaccine"])[0]).vectors
    rows = index.rows_in(old)
    assert rows is not None
    n = len(old.ids)
    buf = np.vstack([old.buf[:n], np.ones((1, old.buf.shape[1]), np.float32)])
    appended = old.__class__(old.ids + ["written"], {**old.where, "written": n}, buf,
                             np.append(old.alive[:n], True), None, old.space)
    assert index.rows_in(appended) is rows and np.array_equal(rows, index._all_rows(appended))
    gone = old.ids[int(rows[0])]
    alive = appended.alive.copy()
    alive[int(rows[0])] = False
    removed = old.__class__(appended.ids, {i: k for i, k in appended.where.items() if i != gone}, buf, alive, None,
                            old.space)
    assert index.rows_in(removed) is None
    other_space = old.__class__(appended.ids, appended.where, buf, appended.alive, None)
    assert index.rows_in(other_space) is not rows and np.array_equal(index.rows_in(other_space), rows)
