"""A new-user trial of the rule reader: a time adverbial after the thing of "I used to love X", "I'm no longer a fan
of X" or "I'm a big fan of X" was kept in its value ("likes: coffee at night", "jazz every day"), as it was after
"I love X" before 3e56118. They now end at :data:`timem.memory.opinions.TIME_ADVERBIAL` too; the items written
from them are checked on a real DuckDB file with the rules and no LLM."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from trial_support import fixtures

from timem.memory.rules import extract_statements

embedder, eng = fixtures()


@pytest.mark.parametrize(("line", "expected"), [
    ("I used to love coffee at night.", ("likes", "coffee", True)),
    ("I used to love coffee every morning.", ("likes", "coffee", True)),
    ("I used to love jazz on weekends.", ("likes", "jazz", True)),
    ("I used to hate coffee in the evenings.", ("dislikes", "coffee", True)),
    ("I no longer like coffee at night.", ("likes", "coffee", True)),
    ("I don't love coffee at night anymore.", ("likes", "coffee", True)),
    ("I'm no longer a fan of jazz on weekends.", ("likes", "jazz", True)),
    ("I'm a big fan of jazz on weekends.", ("likes", "jazz", False)),
    ("I'm a big fan of jazz every day.", ("likes", "jazz", False)),
    ("I'm a big fan of jazz after work.", ("likes", "jazz", False)),
    ("I'm a fan of jazz during the summer.", ("likes", "jazz", False)),
    ("I'm a huge fan of coffee first thing in the morning.", ("likes", "coffee", False)),
    ("I'm a big fan of Miles Davis at night.", ("likes", "Miles Davis", False)),
])
def test_a_time_adverbial_is_no_part_of_the_value(line, expected):
    assert [(s.attribute, s.value, s.ends_only) for s in extract_statements(line)] == [expected]


def test_used_to_love_with_a_time_ends_the_like_held(eng):
    """"I love coffee", then "I used to love coffee at night": the like of coffee ends (it named "coffee at night",
    which no item held, and ended nothing)."""
    t0 = datetime(2024, 5, 1, 9, tzinfo=UTC)
    for k, line in enumerate(["I love coffee.", "I'm a big fan of jazz every day.", "I used to love coffee at night."]):
        eng.remember("mia", f"s{k}", line, t0 + timedelta(days=k), reply="Noted.", user_name="Mia")
    eng.extract_items(["mia"])
    likes = {i.value: i.is_open for i in eng.memory_items("mia") if i.attribute == "likes"}
    assert likes == {"coffee": False, "jazz": True}
