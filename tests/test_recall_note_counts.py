"""Recall trace notes say "1 leaf" and "1 candidate", not "1 leaves" (seen in the studio: "channels placed 1 leaves
after rank 4", "1 candidates after the question time dropped"). Fake embedder, real DuckDB, no LLM."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from service_support import engine_factory

from timem.tokens import counted

T0 = datetime(2024, 5, 2, 9, 0, tzinfo=UTC)


def test_counted_says_one_and_many():
    assert [counted(n, "leaf", "leaves") for n in (0, 1, 2)] == ["0 leaves", "1 leaf", "2 leaves"]


def test_one_candidate_after_the_question_time_is_one(tmp_path, fake_embedder):
    eng = engine_factory(tmp_path / "n.duckdb", fake_embedder, memory_extractor="rules")()
    try:
        eng.remember("mia", "s1", "I adopted a grey cat called Pixel.", T0)
        eng.remember("mia", "s2", "Pixel chased a mouse across the kitchen.", T0 + timedelta(days=2))
        res = eng.recall("mia", "What do you know about Pixel?", T0 + timedelta(days=1), persist=False)
        assert "1 candidate after the question time dropped" in res.trace.notes, res.trace.notes
        assert "Pixel chased" not in res.context
    finally:
        eng.close()
