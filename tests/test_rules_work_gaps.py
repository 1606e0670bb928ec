"""Gaps of the employer and home rules a helper's trial found (:mod:`timem.memory.work`, :mod:`timem.memory.rules`):
"I now work remotely for Spotify", "We both work for the NHS" and "My wife and I work for the NHS" read nothing; "I am
from Brazil but live in Porto" read the hometown and no home city; "I joined Google yesterday, officially, as a product
manager" read Google and no job, so a job said before stayed open; "I joined Sarah." read the employer Sarah. Each is
checked on the rule reader, and where the items matter through a :class:`~timem.engine.MemoryEngine` on a real DuckDB
file with the scripted LLM (consolidation) and the rules (items)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from helpers import scripted_llm
from trial_support import T0, say_lines

from timem.config import load_config
from timem.engine import MemoryEngine
from timem.memory.rules import extract_statements


@pytest.fixture(scope="module")
def embedder(fake_embedder):
    return fake_embedder


@pytest.fixture()
def eng(tmp_path, store, embedder):
    cfg = load_config(env={}, db_path=store.path, llm_backend="none", cache_dir=tmp_path / "cache",
                      memory_extractor="rules")
    llm, _ = scripted_llm(store)
    return MemoryEngine(cfg, store, embedder, llm)


def _read(text: str) -> list[tuple[str | None, str]]:
    return [(s.attribute, s.value) for s in extract_statements(text)]


def _held(eng) -> dict[str, str]:
    return {i.attribute: i.value for i in eng.memory_items("mia") if i.is_open}


@pytest.mark.parametrize(("text", "expected"), [
    ("I now work remotely for Spotify", [("employer", "Spotify")]),
    ("I work part-time for Spotify now.", [("employer", "Spotify")]),
    ("I work from home for Spotify as a data analyst", [("employer", "Spotify"), ("job", "data analyst")]),
    ("I work for the NHS", [("employer", "NHS")]),
    ("We both work for the NHS", [("employer", "NHS")]),
    ("My wife and I work for the NHS", [("employer", "NHS")]),
    ("My wife and I both work for the NHS.", [("employer", "NHS")]),
    ("We all work at the BBC", [("employer", "BBC")]),
    # a plain "we" may be a firm's voice; lower case names no employer
    ("We work for Acme", []),
    ("My wife and I work for the council", []),
])
def test_how_one_works_and_who_works_with_the_speaker(text, expected):
    assert _read(text) == expected


def test_working_remotely_for_a_new_employer_supersedes_the_old_one(eng):
    say_lines(eng, ["I work at Acme", "I now work remotely for Spotify"])
    assert _held(eng) == {"employer": "Spotify"}
    items = {i.value: i for i in eng.memory_items("mia")}
    assert items["Acme"].superseded_by == items["Spotify"].id
    assert items["Acme"].valid_to == items["Spotify"].valid_from == T0 + timedelta(days=1)


@pytest.mark.parametrize("text", ["I am from Brazil but live in Porto", "I'm from Brazil but live in Porto.",
                                  "I'm originally from Brazil but now live in Porto"])
def test_where_one_is_from_and_where_one_lives_in_one_sentence(text):
    assert sorted(_read(text)) == [("home city", "Porto"), ("hometown", "Brazil")]


@pytest.mark.parametrize(("text", "expected"), [
    ("I want to retire and live in Spain", []),
    ("I'd love to travel and live in Paris", []),
    ("My parents, who live in Leeds and work at Asda, are fine", []),
    ("I love Lisbon and live in Porto", [("home city", "Porto"), ("likes", "Lisbon")]),
    ("I grew up in Berlin and moved to Porto", [("home city", "Porto"), ("hometown", "Berlin")]),
])
def test_the_left_out_i_is_the_speakers_only_in_a_statement(text, expected):
    assert sorted(_read(text)) == expected


def test_from_brazil_living_in_porto_is_two_items_not_brazil_as_the_city(eng):
    say_lines(eng, ["I am from Brazil but live in Porto"])
    assert _held(eng) == {"hometown": "Brazil", "home city": "Porto"}


@pytest.mark.parametrize("text", ["I joined Google yesterday, officially, as a product manager",
                                  "I joined Google last week as a product manager"])
def test_joined_with_a_job_later_in_the_sentence(text):
    assert _read(text) == [("employer", "Google"), ("job", "product manager")]


def test_joined_names_no_job_for_an_as_that_is_no_occupation():
    assert _read("I joined Google last week, as a surprise to everyone") == [("employer", "Google")]


def test_joining_as_a_product_manager_ends_the_old_job(eng):
    """A job said with no employer stayed open beside the new employer: only a change of employer ends it."""
    say_lines(eng, ["I'm a nurse.", "I joined Google yesterday, officially, as a product manager"])
    assert _held(eng) == {"employer": "Google", "job": "product manager"}
    (nurse,) = [i for i in eng.memory_items("mia") if i.value == "nurse"]
    assert not nurse.is_open


@pytest.mark.parametrize("text", ["I joined Sarah.", "I joined Sarah", "I joined Tom!",
                                  "I joined Sarah and Tom for lunch", "I joined Sarah for lunch",
                                  "I joined Sarah's team.", "I joined Sarah's team as a designer"])
def test_joining_a_person_names_no_employer(text):
    assert not [v for a, v in _read(text) if a == "employer"]


@pytest.mark.parametrize(("text", "expected"), [
    ("I joined Google.", [("employer", "Google")]),
    ("I joined Morgan Stanley", [("employer", "Morgan Stanley")]),  # Morgan is a first name; two words are no person
    ("I joined Chase as an analyst", [("employer", "Chase"), ("job", "analyst")]),  # the job says it is a workplace
    ("I joined Wendy's as a cashier", [("employer", "Wendy's"), ("job", "cashier")]),
    ("I joined the NHS last month", [("employer", "NHS")]),
])
def test_joining_a_company_still_names_the_employer(text, expected):
    assert _read(text) == expected


def test_joining_sarah_keeps_the_employer(eng):
    say_lines(eng, ["I work at Acme", "I joined Sarah."])
    assert _held(eng) == {"employer": "Acme"}


def test_a_lost_job_says_it_was_the_job():
    (lost,) = extract_statements("Lost my job as a banker yesterday, so I'm gonna take a shot at starting a business.")
    assert (lost.attribute, lost.replaces, lost.ends_only, lost.held) == ("job", "banker", True, True)


def test_a_lost_job_no_item_held_is_history_ending_when_it_was_lost(eng):
    """LoCoMo conv-30 (D1:2): "When Jon has lost his job as a banker?" had no item: the end of a job no item held
    wrote nothing, where "I quit my job at Google" writes the employer as history."""
    say_lines(eng, ["Hi!", "Lost my job as a banker yesterday, so I'm gonna take a shot at starting my own business."])
    (banker,) = [i for i in eng.memory_items("mia") if i.attribute == "job"]
    assert banker.value == "banker" and not banker.is_open
    assert banker.valid_to == T0.replace(hour=0)  # the start of "yesterday" (said a day after T0; UTC)
