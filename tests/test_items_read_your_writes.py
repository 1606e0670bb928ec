"""A recall right after a queued write reads the write's memory items (read-your-writes of the items).

Found by trying the service: the store held "Mia's home city: Dublin"; ``POST …/turns`` "I moved to Galway" was
acknowledged before the queue worker read it, and a recall right after wrote the new L1 segment (read-your-writes)
but gave the item line "[fact, valid … – now] Mia's home city: Dublin" until the worker ran the item extraction.
With the rules reading the items (no LLM), the recall now reads the items of the user's unread segments itself
(:meth:`timem.engine_queue.ConsolidationQueue.read_items`); the write's acknowledgement is unchanged.

A real DuckDB file, the queue on (``online_queue``) with a worker held back as on a busy service (not woken by
writes, polling every 60 s), so the job is still pending at the recall, whatever the machine's speed.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from trial_support import T0, held_back


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    return fake_embedder


busy = held_back()


def _homes(eng) -> list[tuple[str, bool]]:
    return [(i.value, i.is_open) for i in eng.memory_items("mia") if i.attribute == "home city"]


def test_a_recall_right_after_the_write_gives_the_new_home_city(busy):
    eng = busy
    assert _homes(eng) == [("Dublin", True)]
    assert eng.add_exchange("mia", "s1", "I moved to Galway.", "Nice!", T0 + timedelta(days=2), user_name="Mia") == []
    assert eng.queue_status()["pending"] == 1 and _homes(eng) == [("Dublin", True)]  # queued, not yet read

    context = eng.recall("mia", "Where do I live now?", question_time=T0 + timedelta(days=2, hours=1)).context
    homes = [line for line in context.splitlines() if "home city" in line]
    assert homes and "– now] Mia's home city: Galway" in homes[0], context
    assert not any("home city: Dublin" in line and "– now]" in line for line in homes), context
    assert _homes(eng) == [("Dublin", False), ("Galway", True)]
    assert eng.queue_status()["pending"] == 1  # the worker's job is still due (L2-L5, the tree): nothing is read twice
    eng.drain_queue("mia")
    assert _homes(eng) == [("Dublin", False), ("Galway", True)]
    assert len([i for i in eng.memory_items("mia", status=None, reopen=False) if i.value == "Galway"]) == 1


def test_a_recall_with_nothing_queued_reads_no_item(busy, monkeypatch):
    eng = busy

    def refuse(*a, **kw):
        raise AssertionError("items read with nothing queued")

    monkeypatch.setattr(eng.items.item_writer, "extract", refuse)
    eng.recall("mia", "Where do I live?", question_time=T0 + timedelta(days=1))


def test_the_read_reads_the_new_segments_not_the_whole_history(busy, monkeypatch):
    """The rules read every segment and turn of the user at each extraction (O(history) at every recall with a queued
    write); they now ask for the unread segments and their turns only."""
    eng = busy
    eng.add_exchange("mia", "s1", "I moved to Galway.", "Nice!", T0 + timedelta(days=2), user_name="Mia")
    whole: list[str] = []
    turns, nodes = eng.store.turns, eng.store.nodes

    def turns_of(user_id, session_id=None, ids=None):
        if session_id is None and ids is None:
            whole.append("turns")
        return turns(user_id, session_id, ids)

    def nodes_of(user_id=None, level=None, **kw):
        if kw.get("ids") is None and kw.get("session_id") is None:
            whole.append(f"nodes L{level}")
        return nodes(user_id, level, **kw)

    monkeypatch.setattr(eng.store, "turns", turns_of)
    monkeypatch.setattr(eng.store, "nodes", nodes_of)
    eng.read_your_writes("mia")
    assert _homes(eng) == [("Dublin", False), ("Galway", True)]
    assert whole == [], whole


def test_a_long_backlog_of_unread_segments_is_left_to_the_worker(busy, monkeypatch):
    """A file whose segments' items were never read (the synthetic 10k / 100k bench stores, a file ingested with
    memory items off) made the first recall after a write read them all: 27 s at 10k segments, 354 s at 100k.
    A recall now reads at most ``READ_AT_RECALL_MAX`` unread segments; more are the worker's."""
    import timem.engine_queue as engine_queue

    eng = busy
    monkeypatch.setattr(engine_queue, "READ_AT_RECALL_MAX", 1)  # the write below leaves 2 unread (turn and reply)
    eng.add_exchange("mia", "s1", "I moved to Galway.", "Nice!", T0 + timedelta(days=2), user_name="Mia")
    eng.recall("mia", "Where do I live now?", question_time=T0 + timedelta(days=2, hours=1))
    assert _homes(eng) == [("Dublin", True)]  # not read by the recall
    eng.drain_queue("mia")
    assert _homes(eng) == [("Dublin", False), ("Galway", True)]  # the worker's item step read them


def _commits(eng, monkeypatch) -> list[str]:
    """The outermost store transactions begun from now on (each ends in one commit), by the function that began it."""
    import sys

    begun: list[str] = []
    transaction = type(eng.store).transaction

    def counted(store):
        if not store.cursors.state().in_tx:
            begun.append(sys._getframe(1).f_code.co_name)
        return transaction(store)

    monkeypatch.setattr(type(eng.store), "transaction", counted)
    return begun


def test_a_recall_after_a_write_commits_once_for_the_write_and_once_for_its_trace(busy, monkeypatch):
    """A DuckDB commit syncs the write-ahead log to disk (~2-6 ms on a 2-core VM, and the store's one writer is held
    meanwhile), and the recall right after a queued write made four: its L1 segments, the items of each of the two new
    segments, then its trace, then the items' access. Now two: the write's segments with their items, and the trace
    with the items' access; a recall with nothing queued makes one."""
    eng = busy
    eng.add_exchange("mia", "s1", "I moved to Galway.", "Nice!", T0 + timedelta(days=2), user_name="Mia")
    begun = _commits(eng, monkeypatch)
    context = eng.recall("mia", "Where do I live now?", question_time=T0 + timedelta(days=2, hours=1)).context
    assert "Mia's home city: Galway" in context and _homes(eng) == [("Dublin", False), ("Galway", True)]
    assert begun == ["read_your_writes", "persist"], begun
    begun.clear()
    eng.recall("mia", "Where do I live now?", question_time=T0 + timedelta(days=2, hours=2))
    assert begun == ["persist"], begun  # written and read: no writer taken for the queued job
