"""A new-user trial with no LLM: "I love coffee in the morning" liked "coffee in the morning". A trailing time
adverbial is no part of a like's value."""

from __future__ import annotations

import pytest

from timem.memory.rules import extract_statements


@pytest.mark.parametrize(("text", "value"), [
    ("I love coffee in the morning.", "coffee"),
    ("I like jazz at night.", "jazz"),
    ("I love pancakes on weekends.", "pancakes"),
    ("I enjoy jazz every day.", "jazz"),
    ("I love tea in the evenings.", "tea"),
    ("I hate traffic in the mornings.", "traffic"),
    ("I love jazz and soul on Sundays.", "jazz|soul"),
])
def test_a_trailing_time_adverbial_is_no_part_of_a_likes_value(text, value):
    got = [s.value for s in extract_statements(text) if s.attribute in ("likes", "dislikes")]
    assert got == value.split("|"), (text, got)
