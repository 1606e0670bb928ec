"""A second new-user trial of the memory layer's rule reader, with no LLM. Each of these read wrongly or not at all:
"I love jazz and my brother loves techno." (nothing), "I work at the hospital as a nurse." (nothing), "I live in St.
Louis." (nothing: grounding cut the clause at "St."), "I love Sex and the City." ("Sex", "City"), "I live in Lisbon's
old town." ("Lisbon's"), and a switch said at the time of the value it ends ("I drink espresso every day." and "I
switched from espresso to green tea." in one message) read as a correction, "corrected: was espresso". ("I hate
coffee in the morning." already disliked "coffee": tests/test_like_time_adverbials.py.) Real DuckDB file, no LLM."""

from __future__ import annotations

from datetime import timedelta

import pytest
from trial_support import T0, fixtures, say

from timem.models import MemoryItem

embedder, eng = fixtures()


def _items(eng) -> list[tuple[str, str]]:
    return sorted((i.attribute, i.value) for i in eng.memory_items("mia"))


@pytest.mark.parametrize(("line", "items"), [
    ("I love jazz and my brother loves techno.", [("likes", "jazz")]),
    ("I hate jazz and my wife hates techno.", [("dislikes", "jazz")]),
    ("I love jazz and techno and my sister loves soul.", [("likes", "jazz"), ("likes", "techno")]),
    ("I love jazz and Tom loves techno.", [("likes", "jazz")]),
    ("I love jazz and she hates it.", [("likes", "jazz")]),
    ("I love jazz and I play guitar.", [("hobby", "guitar"), ("likes", "jazz")]),  # "I play X": a hobby (5da92de)
])
def test_a_like_ends_where_a_clause_of_its_own_starts(eng, line, items):
    """A like ends before "and" and a new subject ("my brother", "Tom loves", "she", "I"): the speaker's like is
    kept, and nothing of the other clause, which is someone else's (or no opinion)."""
    say(eng, [(line, "Noted.")])
    assert _items(eng) == items


@pytest.mark.parametrize(("line", "items"), [
    ("I work at the hospital as a nurse.", [("job", "nurse")]),
    ("I work in a small bakery as a baker.", [("job", "baker")]),
    ("I started working at the local school as a teacher.", [("job", "teacher")]),
    ("I got a job at the hospital as a nurse.", [("job", "nurse")]),
    ("I work at the hospital.", []),
    ("I work at the hospital as well.", []),
    ("My brother works at the hospital as a nurse.", []),
])
def test_a_workplace_in_lower_case_gives_the_job_and_no_employer(eng, line, items):
    """"I work at the hospital as a nurse." stored nothing: the employer must be a name. A kind of place in lower
    case names no employer, so only the job is read, and only when "as a X" names it."""
    say(eng, [(line, "Noted.")])
    assert _items(eng) == items


@pytest.mark.parametrize(("line", "items"), [
    ("I live in St. Louis.", [("home city", "St. Louis")]),
    ("I moved to St. Petersburg last year.", [("home city", "St. Petersburg")]),
    ("I work at St. Mary hospital as a nurse.", [("employer", "St. Mary hospital"), ("job", "nurse")]),
    ("I love St. Louis.", [("likes", "St. Louis")]),
    ("My doctor is Dr. Silva. I live in Porto.", [("home city", "Porto")]),
])
def test_an_abbreviation_inside_a_name_is_no_end_of_the_clause(eng, line, items):
    """"I live in St. Louis." stored nothing: the rules read "St. Louis", but grounding cut the clause at "St." and
    found no clause holding the value (so did "St. Mary hospital"); a like read "St"."""
    say(eng, [(line, "Noted.")])
    assert _items(eng) == items


@pytest.mark.parametrize(("line", "items"), [
    ("I love Sex and the City.", [("likes", "Sex and the City")]),
    ("I love Harry Potter and the Goblet of Fire.", [("likes", "Harry Potter and the Goblet of Fire")]),
    ("I love the Rolling Stones and the Beatles.", [("likes", "Beatles"), ("likes", "Rolling Stones")]),
    ("I love jazz and the Beatles.", [("likes", "Beatles"), ("likes", "jazz")]),
    ("I love Pride and Prejudice and the Beatles.", [("likes", "Beatles"), ("likes", "Pride and Prejudice")]),
])
def test_a_title_joined_by_and_the_stays_whole(eng, line, items):
    """"I love Sex and the City." liked "Sex" and "City": the rule that "the" before each of two names makes them
    two saw the second "the" only (the first is left out before the value is cut). A title has one "and the"."""
    say(eng, [(line, "Noted.")])
    assert _items(eng) == items


@pytest.mark.parametrize(("line", "items"), [
    ("I live in Lisbon's old town.", [("home city", "Lisbon")]),
    ("I moved to Porto's city centre last week.", [("home city", "Porto")]),
    ("I grew up in Berlin's Kreuzberg.", [("hometown", "Berlin")]),
    ("I'm from Lisbon's suburbs.", [("hometown", "Lisbon")]),
    ("I live in St. John's now.", [("home city", "St. John's")]),
])
def test_a_place_before_a_possessive_is_the_place(eng, line, items):
    """"I live in Lisbon's old town." stored the home city "Lisbon's": a possessive that more words follow ends the
    place's name; a name that ends in one ("St. John's") keeps it."""
    say(eng, [(line, "Noted.")])
    assert _items(eng) == items


AT = T0 + timedelta(days=10)


def _drinks(eng) -> dict[str, MemoryItem]:
    return {i.value: i for i in eng.memory_items("mia") if i.attribute in ("drink", "morning drink")}


@pytest.mark.parametrize("turns", [["I drink espresso every day. I switched from espresso to green tea."],
                                   ["I drink espresso every day.", "I switched from espresso to green tea."],
                                   ["I switched from espresso to green tea."]])
def test_a_switch_said_at_the_time_of_the_old_value_supersedes_it_and_corrects_nothing(eng, turns):
    """The item view read "(corrected: was espresso)" for a switch: espresso, said at the time of the switch (one
    message, two turns of one time, or nothing known of it before), closed where it opened, an empty interval, which
    marks a correction (a value that never held). A switch is supersession: espresso held until green tea."""
    for k, line in enumerate(turns):
        eng.remember("mia", "s0", line, T0, reply="Noted." if k else "Nice.", user_name="Mia")
    eng.extract_items(["mia"])
    drinks = _drinks(eng)
    assert set(drinks) == {"espresso", "green tea"}, drinks
    espresso, tea = drinks["espresso"], drinks["green tea"]
    assert espresso.superseded_by == tea.id and tea.is_open
    assert espresso.valid_from < espresso.valid_to == tea.valid_from  # it held: not corrected
    assert timedelta(0) <= tea.valid_from - T0 <= timedelta(seconds=1)  # green tea holds from when it was said
    context = eng.recall("mia", "What do I drink?", AT, persist=False).context
    assert "superseded: espresso" in context and "corrected" not in context, context


def test_a_correction_still_reads_as_one(eng):
    """A correction said at the time of what it corrects keeps its empty interval and reads "corrected"."""
    eng.remember("mia", "s0", "I live in Porto. Sorry, I meant Braga.", T0, reply="Noted.", user_name="Mia")
    eng.extract_items(["mia"])
    cities = {i.value: i for i in eng.memory_items("mia") if i.attribute == "home city"}
    porto, braga = cities["Porto"], cities["Braga"]
    assert porto.valid_to == porto.valid_from and porto.superseded_by == braga.id
    context = eng.recall("mia", "Where do I live?", AT, persist=False).context
    assert "corrected: was Porto" in context, context
