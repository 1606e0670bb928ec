"""A new-user trial with no LLM: ``timem forget "Will"`` took "I will start a new job soon", and ``"Rose"`` "The
sun rose over the hills". A capitalised request word that the memories also write as a common word matches only
its capitalised occurrences within a sentence (:mod:`timem.memory.forget_scope`). Real DuckDB file, no LLM."""

from __future__ import annotations

import pytest
from trial_support import fixtures, going

EXCHANGES = [
    ("I had lunch with Will yesterday.", "Sounds fun."),
    ("I will start a new job soon.", "Good luck!"),
    ("The sun rose over the hills this morning.", "Lovely."),
    ("My neighbour Rose sent me a postcard.", "How kind."),
    ("Will you remind me to call the bank?", "Sure."),
    ("I love jazz.", "Me too."),
]


embedder, eng = fixtures(EXCHANGES)


@pytest.mark.parametrize(("text", "reached", "kept"), [
    ("Will", ["lunch with Will"], ["I will start", "remind me", "rose"]),
    ("Rose", ["neighbour Rose"], ["sun rose", "Will"]),
    ("my neighbour Rose", ["neighbour Rose"], ["sun rose"]),
    ("lunch with Will", ["lunch with Will"], ["I will start"]),
    ("Jazz", ["I love jazz"], ["Will", "Rose"]),  # never written as a name: the word, as before
])
def test_a_name_that_is_also_a_word_matches_only_the_name(eng, text, reached, kept):
    took = going(eng.forget("mia", text))
    for r in reached:
        assert r in took, (text, took)
    for k in kept:
        assert k not in took, (text, took)
