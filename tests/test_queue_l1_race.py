"""The queue worker's L1 pass and a recall's read-your-writes write the same segments: each exactly once.

Found by trying the service (new-user trial): four ``POST …/turns`` in a row (one session each) and a recall right
after; the service log then said ``consolidation jobs [14] of user acme/dan failed: ConstraintException: … Duplicate
key "id: L1-…" violates primary key constraint``. The worker's second step (:meth:`MemoryWrites.consolidate_online`)
writes the missing L1 segments of every session of the user: it listed them, embedded them (outside any
transaction), and meanwhile the recall's read-your-writes (:meth:`ConsolidationQueue.read_your_writes`, in a request
thread) wrote the same segments; the worker's insert then failed and its job was marked failed. The check and the
insert are now one writer transaction (:meth:`Consolidator.write_segments`).

The interleaving is made deterministic: the embedder runs the recall's read-your-writes at the worker's first call.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from trial_support import T0, held_back

from timem.models import Level


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    return fake_embedder


busy = held_back()


def test_segments_a_recall_writes_during_the_workers_l1_pass_are_not_written_twice(busy, embedder, monkeypatch):
    eng = busy
    eng.add_exchange("mia", "s1", "I moved to Galway.", "Nice!", T0 + timedelta(days=2), user_name="Mia")
    eng.add_exchange("mia", "s2", "I work at Acme.", "Cool.", T0 + timedelta(days=3), user_name="Mia")
    assert eng.queue_status()["pending"] == 2
    real = embedder.embed
    recalled: list[int] = []

    def embed(texts):
        if not recalled:  # the worker embeds the segments it found missing; a recall writes them meanwhile
            recalled.append(-1)  # (the recall's own embedding comes back here)
            recalled[0] = len(eng.read_your_writes("mia"))
        return real(texts)

    monkeypatch.setattr(embedder, "embed", embed)
    eng.writes.consolidate_online("mia", sync_tree=False)  # the worker's step after the L1 of its claimed jobs
    assert recalled == [4]  # the recall wrote both sessions' segments (turn and reply each) first
    segments = eng.store.nodes("mia", Level.SEGMENT)
    assert len(segments) == 6 and len({n.window_key for n in segments}) == 6
    monkeypatch.setattr(embedder, "embed", real)
    eng.drain_queue("mia")
    assert eng.queue_status()["failed"] == 0
