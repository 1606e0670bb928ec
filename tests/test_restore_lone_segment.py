"""Restoring the only segment of a session (a message sent without a reply, forgotten, then restored) failed with a
DuckDB duplicate key: forgetting it cascade-deleted its L2 session (and the day, week and profile above it, left
with no active child), and the restore re-consolidated the same window with the same child and text, so the new
node got the deleted node's id. The service answered 500 to POST .../memories/{id}/restore, after the segment and
its items were back but before the tree was. Now the restore brings the deleted parents back. Real DuckDB file, the
rules, no LLM."""

from __future__ import annotations

from datetime import timedelta

from trial_support import T0, fixtures

from timem.models import Level, NodeStatus

embedder, eng = fixtures()


def _active(eng, level: Level) -> list[str]:
    return sorted(n.id for n in eng.store.nodes("mia", level))


def test_restoring_the_lone_segment_of_a_session_rebuilds_its_tree(eng):
    eng.remember("mia", "s1", "I live in Dublin.", T0, user_name="Mia")
    eng.remember("mia", "s2", "I just started at Google.", T0 + timedelta(days=40), user_name="Mia")
    eng.extract_items(["mia"])
    eng.consolidate("mia", flush=True)
    before = {lvl: _active(eng, lvl) for lvl in (Level.SESSION, Level.DAY, Level.WEEK)}
    assert len(before[Level.SESSION]) == 2
    plan = eng.forget("mia", "Dublin", confirm=True)
    (seg,) = plan.segments
    assert len(_active(eng, Level.SESSION)) == 1  # its session went with it
    eng.restore_memory(seg.id)
    assert eng.store.node(seg.id).status == NodeStatus.ACTIVE
    assert {lvl: _active(eng, lvl) for lvl in (Level.SESSION, Level.DAY, Level.WEEK)} == before  # the same nodes
    assert len(_active(eng, Level.PROFILE)) == 2  # rewritten: Dublin was forgotten by name and stays out
    assert eng.check("mia") == []
