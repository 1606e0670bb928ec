"""The users' working sets (:mod:`timem.store.working_set`): node rows read by id from memory give what DuckDB gives,
follow every write, and stay within the store's budget (least recently used user out first). Real DuckDB file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from timem.models import Level, MemoryNode, NodeStatus, Role, Turn
from timem.store.duckdb_store import Store

DIM = 8
T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def _vecs(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _l1(user: str, i: int, session: str = "S1") -> MemoryNode:
    # equal span starts inside a session: the order falls to the first turn's seq, then the id
    return MemoryNode(id=f"{user}:L1:{i:03d}", user_id=user, level=Level.SEGMENT, window_key=f"segment:{user}:{i}",
                      span_start=T0 + timedelta(hours=i // 3), span_end=T0 + timedelta(hours=i // 3, minutes=5),
                      content=f"{user} segment {i}: we talked about item {i % 7}", session_id=session,
                      source_turn_ids=[f"{user}:{session}:{(37 * i) % 101}", f"{user}:{session}:{(37 * i) % 101}b"],
                      model_id="verbatim",
                      prompt_version="test")


def _parent(user: str, key: str, kids: list[str], level: Level = Level.SESSION) -> MemoryNode:
    return MemoryNode(id=f"{user}:L{int(level)}:{key}", user_id=user, level=level, window_key=f"x:{key}",
                      span_start=T0, span_end=T0 + timedelta(days=1), content=f"summary {key}", child_ids=kids,
                      session_id="S1" if level == Level.SESSION else None, model_id="extractive",
                      prompt_version="test")


def _turns(nodes: list[MemoryNode], skip: int = -1) -> list[Turn]:
    """The source turns of L1 nodes (their seq from the id; the ``skip``-th node's last turn left out)."""
    return [Turn(id=t, user_id=x.user_id, session_id=x.session_id or "", seq=int(t.rsplit(":", 1)[1].rstrip("b")),
                 speaker="A",
                 role=Role.USER, text="hi", event_time=x.span_start)
            for k, x in enumerate(nodes) for t in x.source_turn_ids[: 1 if k == skip else 2]]


def _fill(store: Store, user: str, n: int, seed: int) -> list[str]:
    l1 = [_l1(user, i) for i in range(n)]
    store.add_turns(_turns(l1, skip=2))
    store.add_nodes(l1, _vecs(n, seed))
    ids = [x.id for x in l1]
    store.add_nodes([_parent(user, "a", ids[: n // 2]), _parent(user, "b", ids[n // 2:])], _vecs(2, seed + 1))
    store.add_nodes([_parent(user, "d", [f"{user}:L2:a", f"{user}:L2:b"], Level.DAY)], _vecs(1, seed + 2))
    return ids


def _both(store: Store, fn):
    budget = store.memory_index.budget_bytes
    with_ws = fn()
    store.memory_index.budget_bytes = 0  # working_set() is None: the SQL paths
    try:
        without = fn()
    finally:
        store.memory_index.budget_bytes = budget
    return with_ws, without


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "ws.duckdb", "test-model", DIM, working_set_mb=64)
    yield s
    s.close()


def test_reads_by_id_equal_duckdb_and_follow_every_write(store: Store) -> None:
    ids = _fill(store, "u1", 30, 1)
    _fill(store, "u2", 10, 5)
    asked = [*ids[::-1], "u1:L2:a", "u1:L3:d", "u2:L1:003", "nope"]  # another user's id and a missing one

    def reads() -> tuple:
        return (store.nodes(user_id="u1", ids=asked), store.nodes(user_id="u1", ids=asked, status=None),
                store.lineage("u1", ids[:5] + ids[-3:], 5), store.lineage("u1", ids[:4], 2),
                store.adjacent_segments("u1", asked))

    def check() -> tuple:
        got, sql = _both(store, reads)
        assert got == sql
        return got

    first = check()
    assert [n.id for n in first[0]] != sorted(n.id for n in first[0])  # the conversation order, not the ids'
    assert "u2:L1:003" not in {n.id for n in first[1]}
    assert sum(1 for p, n in first[4].values() if p and n) > 20 and ids[2] not in first[4]  # no last turn: absent
    assert store.memory_index.loads["rows"] == 1

    # a write, then a read: each sees the write (patched from the recorded step, not loaded again)
    new = [_l1("u1", 100 + i, "S2") for i in range(3)]
    store.add_turns(_turns(new, skip=2))  # the last one without its last turn, as at the load
    store.add_nodes(new, _vecs(3, 9))
    asked += [x.id for x in new]
    assert check()[4][new[1].id] != (None, None)  # neighbours in the new session
    store.add_nodes([_parent("u1", "c", [x.id for x in new])], _vecs(1, 10))  # links the new L1 to a parent
    assert {n.id: n for n in check()[0]}[new[0].id].id == new[0].id
    assert store.lineage("u1", [new[1].id], 5)[1][new[1].id] == "u1:L2:c"
    store.update_node(ids[3], stale=True)
    assert {n.id: n for n in check()[0]}[ids[3]].stale
    store.update_node(ids[4], content="an edited segment", embedding=_vecs(1, 11)[0])
    assert {n.id: n for n in check()[0]}[ids[4]].content == "an edited segment"
    store.update_node(ids[5], status=NodeStatus.DELETED)
    assert ids[5] not in {n.id for n in check()[0]} and ids[5] in {n.id for n in check()[1]}
    store.delete_nodes(["u1:L2:a"])  # its children lose their parent
    got = check()
    assert "u1:L2:a" not in {n.id for n in got[1]} and got[2][1][ids[0]] is None
    store.relink(ids[0], "u1:L2:b")  # not listed by that parent: no change, but a recorded one
    store.relink(ids[-1], "u1:L2:b")
    check()
    assert store.memory_index.loads["rows"] == 1 and store.memory_index.patches["rows"] >= 6
    # a rolled-back write changes nothing
    with pytest.raises(RuntimeError), store.transaction():
        store.update_node(ids[6], stale=True)
        raise RuntimeError("roll back")
    assert not {n.id: n for n in check()[0]}[ids[6]].stale
    # a version reached without a step (a user erased) is loaded again
    store.erase_user("u2")
    check()
    assert store.memory_index.loads["rows"] == 2
    # the patched copy equals a fresh load
    ws = store.working_set("u1")
    assert ws is not None
    store.memory_index.clear()
    fresh = store.working_set("u1")
    assert fresh is not None and fresh.rows == ws.rows and fresh.active_l1 == ws.active_l1
    assert fresh.seqs == ws.seqs and ws.seqs[new[2].id][1] is None and ws.seqs[new[1].id][1] is not None


def test_the_budget_evicts_the_least_recently_used_user(store: Store) -> None:
    _fill(store, "u1", 40, 1)
    _fill(store, "u2", 40, 2)
    _fill(store, "u3", 40, 3)
    one = store.working_set("u1")
    assert one is not None
    size = one.nbytes
    store.memory_index.clear()
    store.memory_index.reset_counts()
    store.memory_index.budget_bytes = int(2.5 * size)  # two users' rows fit, not three
    idx = store.memory_index
    for u in ("u1", "u2", "u1", "u3"):  # u2 is the least recently used when u3 arrives
        store.working_set(u)
    cached = {k[1] for k, _ in idx._entries.items()}
    assert cached == {"u1", "u3"} and idx.evictions["rows"] == 1
    assert idx.stats()["bytes"] <= idx.budget_bytes
    assert idx.stats()["rows"]["hits"] == 1 and idx.stats()["rows"]["loads"] == 3
    store.working_set("u2")  # back: loaded again, and u1 (now least recent) goes
    assert {k[1] for k, _ in idx._entries.items()} == {"u3", "u2"} and idx.loads["rows"] == 4
    assert store.nodes(user_id="u1", ids=["u1:L1:001"])[0].id == "u1:L1:001"  # an evicted user is read again
    store.memory_index.budget_bytes = 0  # off: reads go to DuckDB, nothing more is loaded
    loads = idx.loads["rows"]
    assert store.working_set("u1") is None and store.nodes(user_id="u1", ids=["u1:L1:002"])[0].id == "u1:L1:002"
    assert idx.loads["rows"] == loads


def test_a_user_s_vectors_come_from_its_copy_in_memory_and_equal_duckdb_s(store: Store) -> None:
    ids = _fill(store, "u1", 30, 1)
    _fill(store, "u2", 10, 5)
    store.update_node(ids[5], status=NodeStatus.DELETED)  # not in the copy of active nodes: read from DuckDB
    asked = [*ids[::-1], "u1:L2:a", "u2:L1:003", "nope"]  # an L2 node, another user's node, a missing one
    sql = store.embeddings(asked)  # without a user: DuckDB
    assert set(sql) == {*ids, "u1:L2:a", "u2:L1:003"}

    def same(got: dict[str, np.ndarray]) -> None:
        assert set(got) == set(sql) - {"u2:L1:003"}  # the user's nodes only
        for i, v in got.items():
            assert v.dtype == np.float32 and v.shape == (DIM,) and v.tobytes() == sql[i].tobytes(), i

    idx = store.memory_index
    same(store.embeddings(asked, user_id="u1"))  # no copy yet: all from DuckDB, none loaded
    assert idx.loads["vec"] == 0 and idx.hits["vec"] == 0
    store.search_vector("u1", _vecs(1, 7)[0], int(Level.SEGMENT), 5)  # the leaf search loads the L1 copy
    served: list[set[str]] = []
    real = idx.cached_vectors

    def spy(*args: object) -> dict[str, np.ndarray]:
        got = real(*args)  # type: ignore[arg-type]
        served.append(set(got))
        return got

    idx.cached_vectors = spy  # type: ignore[method-assign]
    same(store.embeddings(asked, user_id="u1"))
    assert served == [set(ids) - {ids[5]}] and idx.hits["vec"] == 1 and idx.loads["vec"] == 1
    store.update_node(ids[7], content="an edited segment", embedding=_vecs(1, 12)[0])  # a write: the copy is older
    sql = store.embeddings(asked)
    same(store.embeddings(asked, user_id="u1"))  # the older copy is not used (nor patched): DuckDB
    assert served[-1] == set() and idx.patches["vec"] == 0


def test_a_loaded_working_set_leaves_the_cyclic_garbage_collector_nothing_to_track(store: Store) -> None:
    """A user's rows hold no mutable container (id lists become tuples), so after two collections none of them is
    tracked; with the lists as fetched, a 10k-node user kept ~46k tracked objects and full collections took up to
    ~1 s of a recall over 17 users (bench/results/recall-latency-many-users.md)."""
    import gc

    ids = _fill(store, "u", 30, 1)
    ws = store.working_set("u")
    assert ws is not None and set(ids) <= set(ws.rows)
    gc.collect()
    gc.collect()  # a row's id tuples are untracked in the first pass, the row (which holds them) in the next
    tracked = [i for i, r in ws.rows.items() if gc.is_tracked(r)]
    assert tracked == []
    row = ws.rows[ids[0]]
    assert all(not isinstance(x, list) for x in row)
    # what a read builds from the rows is unchanged: lists in the models, as DuckDB gives them
    assert _both(store, lambda: store.nodes(user_id="u", ids=ids[:3]))[0] == \
        _both(store, lambda: store.nodes(user_id="u", ids=ids[:3]))[1]


def test_gc_paused_restores_the_collector_as_it_found_it() -> None:
    import gc

    from timem.store.memory_index import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("a load that fails")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # it was off before: left off
    finally:
        gc.enable()


def test_a_patched_copy_starts_in_the_oldest_generation(store: Store) -> None:
    """A write's patch makes new long-lived containers (the row dict, the vector copy's ids and positions); built
    young, the next young collections walked them: 10-35 ms of the first recall after a write at 100k L1 nodes. They
    are moved to the oldest generation as they are made (gc_paused), so a young collection does not see them."""
    import gc

    _fill(store, "u", 30, 1)
    store.search_vector("u", _vecs(1, 3)[0], int(Level.SEGMENT), 5)  # the vector copy, loaded
    assert store.working_set("u") is not None
    new = [_l1("u", 200, "S9")]
    store.add_turns(_turns(new))
    store.add_nodes(new, _vecs(1, 4))
    ws = store.working_set("u")  # patched from the step
    store.search_vector("u", _vecs(1, 3)[0], int(Level.SEGMENT), 5)
    assert ws is not None and new[0].id in ws.rows and store.memory_index.patches["rows"] >= 1
    young = {id(o) for g in (0, 1) for o in gc.get_objects(generation=g)}
    assert id(ws.rows) not in young and id(ws.seqs) not in young
    vec = store.memory_index.latest(("vec", "u", int(Level.SEGMENT)))
    assert vec is not None and id(vec[1].where) not in young and id(vec[1].ids) not in young


def test_duckdb_memory_limit_follows_the_setting_from_the_config_to_the_file(tmp_path: Path) -> None:
    """``StoreSettings.duckdb_memory_mb`` bounds DuckDB's buffer pool of the file the engine opens (and of a file
    reopened after it), and leaves DuckDB's default when unset."""
    from timem.config import Config
    from timem.engine import MemoryEngine
    from timem.store import open_store

    cfg = Config(db_path=tmp_path / "m.duckdb", duckdb_memory_mb=300, llm_backend="none")
    engine = MemoryEngine.open(cfg, with_llm=False)  # the path the CLI, studio and service take
    try:
        assert engine.store.con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == "300.0 MiB"
    finally:
        engine.close()
    s = open_store(tmp_path / "d.duckdb", "test-model", DIM)
    try:
        assert s.con.execute("SELECT current_setting('memory_limit')").fetchone()[0] != "300.0 MiB"
    finally:
        s.close()
    with pytest.raises(ValueError):
        Config(duckdb_memory_mb=0)
