"""A new-user re-trial (no LLM): after "I love Radiohead.", "I love jazz." and "I hate Radiohead now.", recall of
"What music do I like?" printed "likes: jazz (superseded: Radiohead, until …)": every open like was shown replacing
every ended one. A value of a multi-valued attribute (likes, hobbies, dislikes) lists only what it superseded itself.
Real DuckDB file, the rules, no LLM."""

from __future__ import annotations

from datetime import timedelta

from trial_support import T0, fixtures, say

embedder, eng = fixtures()


def test_an_open_like_does_not_claim_another_likes_end(eng):
    say(eng, [("I love Radiohead.", "Great band."), ("I love jazz.", "Nice."), ("I hate Radiohead now.", "Oh!")])
    items = {(i.attribute, i.value): i for i in eng.memory_items("mia")}
    assert not items[("likes", "Radiohead")].is_open and items[("likes", "jazz")].is_open, items
    context = eng.recall("mia", "What music do I like?", question_time=T0 + timedelta(days=5)).context
    jazz = [line for line in context.splitlines() if "likes: jazz" in line]
    assert jazz and "Radiohead" not in jazz[0], context
