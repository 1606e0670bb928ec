"""A new-user trial of the memory layer with no LLM: ends said with no new value were not read. "I live in Madrid."
then "I don't live in Madrid anymore." left Madrid the home city; "I work at Google." then "I quit Google." left
Google the employer; "I hate Radiohead now lol" disliked "Radiohead now lol"; "我不喜欢咖啡了" (no longer like coffee)
stored a dislike. Also "I dont eat meat" and "i realy love jazz" read nothing. Real DuckDB file, the rules, no LLM."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from trial_support import T0, fixtures, say

from timem.memory.rules import extract_statements

embedder, eng = fixtures()


def _items(eng, *attributes):
    return [i for i in eng.memory_items("mia") if i.attribute in attributes]


@pytest.mark.parametrize("line", ["I don't live in Madrid anymore.", "I no longer live in Madrid.",
                                  "I moved out of Madrid.", "I'm not living in Madrid any more."])
def test_a_home_city_said_over_ends_at_the_statement(eng, line):
    say(eng, [("I live in Madrid.", "Nice."), (line, "Oh, where to?")])
    (city,) = _items(eng, "home city")
    assert city.value == "Madrid" and city.valid_to == T0 + timedelta(days=1) and city.superseded_by is None


def test_a_home_city_said_over_with_none_held_is_history(eng):
    say(eng, [("I love jazz.", "Cool."), ("I don't live in Madrid anymore.", "Oh.")])
    (city,) = _items(eng, "home city")
    assert city.value == "Madrid" and not city.is_open and city.valid_to == T0 + timedelta(days=1)


def test_a_trip_away_is_no_end():
    assert extract_statements("I moved out of the hotel in Madrid.") == []


@pytest.mark.parametrize("line", ["I quit Google.", "I left Google.", "I resigned from Google.",
                                  "I don't work at Google anymore.", "I no longer work for Google.",
                                  "I stopped working at Google."])
def test_an_employer_said_over_ends_and_the_job_stays(eng, line):
    """Decided: quitting an employer ends the employer only; the job is an occupation it does not end."""
    say(eng, [("I work at Google as an engineer.", "Nice."), (line, "Oh!")])
    items = {i.attribute: i for i in _items(eng, "employer", "job")}
    assert items["employer"].value == "Google" and items["employer"].valid_to == T0 + timedelta(days=1)
    assert items["job"].is_open


def test_leaving_an_employer_last_month_ends_at_its_start(eng):
    first, said = datetime(2024, 1, 10, 9, tzinfo=UTC), datetime(2024, 3, 15, 9, tzinfo=UTC)
    eng.remember("mia", "s0", "I work at Google.", first, reply="Nice.", user_name="Mia")
    eng.remember("mia", "s1", "I left Google last month.", said, reply="Oh!", user_name="Mia")
    eng.extract_items(["mia"])
    (employer,) = _items(eng, "employer")
    assert employer.valid_to == datetime(2024, 2, 1, tzinfo=UTC), employer


def test_leaving_a_place_is_no_employer_end():
    assert [s for s in extract_statements("I left Madrid last week.") if s.attribute == "employer"] == []


@pytest.mark.parametrize(("line", "value"), [("I hate Radiohead now lol", "Radiohead"),
                                             ("I love jazz haha", "jazz"), ("I love jazz tbh!!", "jazz"),
                                             ("I'm a big fan of Radiohead lol", "Radiohead")])
def test_slang_after_a_value_is_no_part_of_it(line, value):
    assert [s.value for s in extract_statements(line)] == [value]


def test_a_chinese_like_said_over_ends_it_and_stores_no_dislike(eng):
    say(eng, [("我喜欢咖啡", "好的"), ("我不喜欢咖啡了", "好吧")])
    opinions = [(i.attribute, i.value, i.valid_to) for i in _items(eng, "likes", "dislikes")]
    assert opinions == [("likes", "咖啡", T0 + timedelta(days=1))]


def test_a_plain_chinese_dislike_is_still_one():
    assert [(s.attribute, s.value) for s in extract_statements("我不喜欢咖啡")] == [("dislikes", "咖啡")]


def test_a_missing_apostrophe_and_a_misspelling_are_read():
    assert [(s.attribute, s.value) for s in extract_statements("I dont eat meat")] == [("diet", "vegetarian")]
    assert [(s.attribute, s.value) for s in extract_statements("i realy love jazz")] == [("likes", "jazz")]


def test_a_dislike_ends_a_favourite_of_its_value(eng):
    say(eng, [("My favourite band is Radiohead", "Nice."), ("I hate Radiohead now lol", "Oh.")])
    items = {i.attribute: i for i in eng.memory_items("mia")}
    assert items["favourite band"].valid_to == T0 + timedelta(days=1), items
    assert items["dislikes"].value == "Radiohead" and items["dislikes"].is_open
