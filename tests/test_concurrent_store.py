"""Concurrent readers and one writer on a real DuckDB file (issue 26 §4): each thread reads on its own cursor
(:mod:`timem.store.threads`); the answers equal those of serial use, and a committed write is seen by every
thread's next read."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from timem.models import Level, MemoryNode
from timem.store import Store
from timem.store.search import bm25_top, vector_top

DIM = 8
AT = datetime(2024, 5, 1, tzinfo=UTC)
WORDS = ("tea coffee cat dog garden piano river mountain book train bread violin lake city forest "
         "museum bicycle painting soup rain").split()
UNIQUE = "zebra walrus narwhal pelican otter badger falcon lemur bison heron".split()


def _nodes(user: str, start: int, n: int) -> tuple[list[MemoryNode], np.ndarray]:
    rng = np.random.default_rng(start + len(user))
    nodes = [MemoryNode(id=f"{user}:L1:{i:04d}", user_id=user, level=Level.SEGMENT, window_key=f"w{i}",
                        span_start=AT + timedelta(minutes=i), span_end=AT + timedelta(minutes=i),
                        content=f"{user} talked about {WORDS[i % len(WORDS)]} and {WORDS[(i * 7) % len(WORDS)]} "
                                f"on day {i}", model_id="verbatim", prompt_version="test")
             for i in range(start, start + n)]
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    return nodes, vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


@pytest.fixture()
def store(tmp_path):
    """A real DuckDB file of ``DIM``-dimensional vectors, closed after the test."""
    s = Store(tmp_path / "c.duckdb", "test-model", DIM)
    yield s
    s.close()


def _together(*targets: Callable[[], None]) -> None:
    """Run each of ``targets`` in its own thread and wait for all."""
    threads = [threading.Thread(target=f) for f in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _searches(store: Store, user: str) -> list[list[tuple[str, float]]]:
    qv = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    return [store.search_vector(user, qv, 1, 10)] + [store.search_bm25(user, w, 1, 10) for w in WORDS[:6]]


def test_concurrent_readers_and_a_writer_answer_as_serial_use(store):
    store.add_nodes(*_nodes("still", 0, 60))
    store.add_nodes(*_nodes("busy", 0, 20))
    serial_still = _searches(store, "still")
    seen: list[list[list[tuple[str, float]]]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                got = _searches(store, "still")
                busy = _searches(store, "busy")
                with lock:
                    seen.append(got)
                for hits in busy:  # a write committed mid-load never shows a node twice
                    assert len({i for i, _ in hits}) == len(hits)
        except BaseException as exc:  # noqa: BLE001 -- asserted empty by the main thread
            errors.append(exc)

    def writer() -> None:
        try:
            for k in range(8):
                store.add_nodes(*_nodes("busy", 20 + 5 * k, 5))
                vec = np.zeros(DIM, dtype=np.float32)
                vec[k % DIM] = 1.0
                store.update_node(f"busy:L1:{k:04d}", content=f"busy edited {WORDS[k]} again", embedding=vec)
        except BaseException as exc:  # noqa: BLE001 -- asserted empty by the main thread
            errors.append(exc)

    lock = threading.Lock()
    readers = [threading.Thread(target=reader) for _ in range(4)]
    w = threading.Thread(target=writer)
    for t in readers:
        t.start()
    w.start()
    w.join()
    stop.set()
    for t in readers:
        t.join()
    assert not errors, errors
    assert seen and all(got == serial_still for got in seen)
    assert store.cursors.threads >= 5  # the readers and the writer each had their own cursor
    # after the writer: every thread's answer for the written user equals the SQL's on the main connection
    qv = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    ref = vector_top(store.con, DIM, "busy", qv, 1, 10)
    ref_bm25 = [i for i, _ in bm25_top(store.con, "busy", "edited", 1, 10)]
    assert len(ref_bm25) == 8
    out: list[tuple[list[tuple[str, float]], list[str]]] = []

    def final() -> None:
        bm25 = [i for i, _ in store.search_bm25("busy", "edited", 1, 10)]
        out.append((store.search_vector("busy", qv, 1, 10), bm25))

    _together(final, final, final)
    assert out == [(ref, ref_bm25)] * 3


def test_a_committed_write_is_read_by_another_thread_at_once(store):
    """Read-your-writes across threads: after ``add_nodes`` returns in one thread, a search in another finds it."""
    store.add_nodes(*_nodes("u", 0, 10))
    missed: list[str] = []
    for k in range(10):
        node, vec = _nodes("u", 100 + k, 1)
        word = UNIQUE[k]
        node = [node[0].model_copy(update={"content": f"the word {word} appears once"})]
        done = threading.Event()

        def write(n: list[MemoryNode] = node, v: np.ndarray = vec, d: threading.Event = done) -> None:
            store.add_nodes(n, v)
            d.set()

        def read(k: int = k, d: threading.Event = done, nid: str = node[0].id) -> None:
            d.wait()
            if [i for i, _ in store.search_bm25("u", UNIQUE[k], 1, 5)] != [nid]:
                missed.append(nid)

        _together(write, read)
    assert missed == []


def test_a_compaction_waits_for_readers_and_every_thread_reads_the_new_file(store):
    store.add_nodes(*_nodes("u", 0, 10))
    inside, release, after = threading.Event(), threading.Event(), []

    def reader() -> None:
        with store.reading():
            inside.set()
            release.wait()
            after.append(len(store.nodes(user_id="u")))  # the connection is still open
        with store.reading():  # once the compaction is done: a fresh cursor on the compacted file
            after.append(len(store.nodes(user_id="u")))

    t = threading.Thread(target=reader)
    t.start()
    inside.wait()
    c = threading.Thread(target=store.compact)
    c.start()
    release.set()
    c.join()
    t.join()
    assert after == [10, 10]
