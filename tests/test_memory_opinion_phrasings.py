"""Phrasings of likes, dislikes, hobbies and hometowns that a new user (no LLM) found the rules misread
(:mod:`timem.memory.rules`, :mod:`timem.memory.likes`, :mod:`timem.memory.opinions`)."""

from __future__ import annotations

import pytest
from test_memory_items import _engine, _say

from timem.memory.grounding import check_statement
from timem.memory.rules import extract_statements


def _read(text: str) -> list[tuple[str | None, str, bool]]:
    got = extract_statements(text)
    assert all(check_statement(s.attribute, s.value, s.text) is None for s in got), text
    return [(s.attribute, s.value, s.ends_only) for s in got]


@pytest.mark.parametrize(("text", "expected"), [
    # a time word closing the opinion is no part of the thing ("techno anymore", "techno any")
    ("I love jazz lately.", [("likes", "jazz", False)]),
    ("I hate techno these days.", [("dislikes", "techno", False)]),
    ("I don't like techno nowadays.", [("dislikes", "techno", False)]),
    ("I really like jazz now.", [("likes", "jazz", False)]),
    ("I'm a big fan of jazz lately.", [("likes", "jazz", False)]),
])
def test_a_time_word_after_an_opinion_is_not_part_of_its_value(text, expected):
    assert _read(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # a like said to be over ends it and is no dislike: no longer liking is not disliking
    ("Actually I don't like techno anymore.", [("likes", "techno", True)]),
    ("I don't like techno any more.", [("likes", "techno", True)]),
    ("I no longer like techno.", [("likes", "techno", True)]),
    ("I'm not into techno anymore.", [("likes", "techno", True)]),
    ("I don't love jazz anymore.", [("likes", "jazz", True)]),
    ("I'm no longer a fan of jazz.", [("likes", "jazz", True)]),
    ("I don't love the Rolling Stones any more.", [("likes", "Rolling Stones", True)]),
    ("I don't hate jazz anymore.", [("dislikes", "jazz", True)]),
    ("I no longer like techno, but I love jazz.", [("likes", "techno", True), ("likes", "jazz", False)]),
    # not an end: no time word, or "can't stand … anymore" (it still holds, and more)
    ("I'm not into techno.", []), ("I can't stand techno anymore.", [("dislikes", "techno", False)]),
])
def test_an_opinion_said_to_be_over_ends_it(text, expected):
    assert _read(text) == expected


def test_no_longer_liking_ends_the_like_and_leaves_no_dislike(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder, memory_extractor="rules")
    held = _say(eng, store, ["I love techno.", "I love jazz.", "I love soul.", "I hate country music.",
                             "I no longer like techno.", "I'm not into jazz anymore.", "I don't love soul any more.",
                             "I don't hate country music anymore."])
    assert held == {("likes", "techno"): False, ("likes", "jazz"): False, ("likes", "soul"): False,
                    ("dislikes", "country music"): False}
