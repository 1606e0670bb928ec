"""A new-user trial of the memory layer with no LLM: a curly apostrophe, a trailing emoji, quotes or accented letters
dropped the item ("I don’t like mushrooms.", "I love pizza 🍕", "I love crème brûlée."). They now give the items of
the plain ASCII sentence; a value keeps its accents and loses its quotes and emoji. Real DuckDB file, no LLM."""

from __future__ import annotations

import pytest
from trial_support import fixtures, say

embedder, eng = fixtures()


@pytest.mark.parametrize(("line", "item"), [("I don’t like mushrooms.", ("dislikes", "mushrooms")),
                                            ("I can’t stand jazz.", ("dislikes", "jazz")),
                                            ("I love pizza 🍕", ("likes", "pizza")),
                                            ("I love jazz 🎷.", ("likes", "jazz")),
                                            ("I work as a nurse 👩‍⚕️", ("job", "nurse")),
                                            ("I love crème brûlée.", ("likes", "crème brûlée")),
                                            ("I love jalapeños.", ("likes", "jalapeños")),
                                            ('I love "jazz".', ("likes", "jazz")),
                                            ("I love “jazz”.", ("likes", "jazz")),
                                            ("I love ‘jazz’.", ("likes", "jazz"))])
def test_typography_gives_the_item_of_the_plain_sentence(eng, line, item):
    say(eng, [(line, "Noted.")])
    assert [(i.attribute, i.value) for i in eng.memory_items("mia")] == [item]
