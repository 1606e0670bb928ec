"""A new-user trial of the memory layer with no LLM: "I don't drink espresso anymore" (also "I no longer drink
espresso", "I stopped drinking espresso", "I quit coffee"), with nothing known of espresso, recorded nothing. The past
preference is now written as history that ended when it was said (as a switch's, tests/test_switch_history.py).
Real DuckDB file, the rules, no LLM."""

from __future__ import annotations

from datetime import timedelta

import pytest
from trial_support import fixtures, say_lines

embedder, eng = fixtures()


@pytest.mark.parametrize(("line", "drink"), [("I don't drink espresso anymore.", "espresso"),
                                             ("I no longer drink espresso.", "espresso"),
                                             ("I stopped drinking espresso.", "espresso"),
                                             ("I've stopped drinking espresso.", "espresso"),
                                             ("I quit coffee.", "coffee")])
def test_an_ended_drink_no_item_held_is_recorded_as_history(eng, line, drink):
    """Nothing was known of the drink: it is written as a preference that held until it was said, since the start
    of what the memory knows (the user's first session), and nothing holds now."""
    (first, said) = say_lines(eng, ["I live in Lisbon.", line])
    drinks = [i for i in eng.memory_items("mia") if i.attribute in ("drink", "morning drink")]
    assert [i.value for i in drinks] == [drink], drinks
    (item,) = drinks
    assert not item.is_open and item.valid_to == said and item.valid_from == first
    assert item.valid_at(said - timedelta(hours=1)) and not item.valid_at(said)


def test_the_history_starts_at_the_end_of_the_value_before(eng):
    """Green tea held, then ended; espresso, said to be over later with no item of its own, held since tea ended."""
    (_, stop_tea, said) = say_lines(eng, ["I drink green tea every day.", "I don't drink green tea anymore.",
                                     "I no longer drink espresso."])
    drinks = {i.value: i for i in eng.memory_items("mia") if i.attribute in ("drink", "morning drink")}
    assert set(drinks) == {"green tea", "espresso"}, drinks
    assert drinks["green tea"].valid_to == stop_tea
    assert drinks["espresso"].valid_from == stop_tea and drinks["espresso"].valid_to == said


def test_an_ended_drink_an_item_held_ends_it_and_writes_nothing_more(eng):
    (_, said) = say_lines(eng, ["I drink espresso every day.", "I don't drink espresso anymore."])
    drinks = [(i.value, i.valid_to) for i in eng.memory_items("mia") if i.attribute in ("drink", "morning drink")]
    assert drinks == [("espresso", said)]


@pytest.mark.parametrize("line", ["I don't drink espresso.", "I never drink espresso."])
def test_a_plain_refusal_is_no_history(eng, line):
    """Without "anymore", "no longer", "stopped", "quit" or "gave up" nothing says the drink was ever had."""
    say_lines(eng, ["I live in Lisbon.", line])
    assert not [i for i in eng.memory_items("mia") if i.attribute in ("drink", "morning drink")]


def test_a_like_said_over_still_only_ends_it(eng):
    """"I don't like techno anymore" ends "likes techno" and stores no dislike (kept as it was)."""
    (_, said) = say_lines(eng, ["I love techno.", "I don't like techno anymore."])
    opinions = [(i.attribute, i.value, i.valid_to) for i in eng.memory_items("mia")
                if i.attribute in ("likes", "dislikes")]
    assert opinions == [("likes", "techno", said)]


def test_a_drink_that_ended_leaves_a_like_of_it_holding(eng):
    """A trial: with "I love espresso" held, "I don't drink espresso anymore" ended the like (every open item of
    that value ended). Not drinking it is not disliking it: the like holds, the drink is history."""
    say_lines(eng, ["I love espresso.", "I don't drink espresso anymore."])
    items = eng.memory_items("mia")
    likes = [i for i in items if i.attribute == "likes" and i.value == "espresso"]
    assert len(likes) == 1 and likes[0].valid_to is None, likes
    drinks = [i for i in items if i.attribute in ("drink", "morning drink")]
    assert [i.value for i in drinks] == ["espresso"] and drinks[0].valid_to is not None, drinks


def test_an_opinion_that_ended_still_ends_the_like(eng):
    say_lines(eng, ["I love jazz.", "I don't like jazz anymore."])
    likes = [i for i in eng.memory_items("mia") if i.attribute == "likes" and i.value == "jazz"]
    assert len(likes) == 1 and likes[0].valid_to is not None, likes


def test_a_drink_switch_leaves_a_like_of_the_old_drink_holding(eng):
    say_lines(eng, ["I love espresso.", "I switched from espresso to green tea."])
    items = eng.memory_items("mia")
    assert [i.valid_to for i in items if i.attribute == "likes" and i.value == "espresso"] == [None], items
    assert any(i.value == "green tea" and i.valid_to is None for i in items), items
