"""A new user's trial: "My morning drink is espresso." stored nothing, so "I switched from espresso to green tea"
recorded espresso as an earlier value of unknown start; "My name is Leo and I'm a software engineer at Google." stored
no name. Real DuckDB, no LLM."""

from __future__ import annotations

from trial_support import fixtures, say_lines

embedder, eng = fixtures()


def test_the_stated_morning_drink_is_what_the_switch_supersedes(eng):
    times = say_lines(eng, ["My morning drink is espresso.", "I switched from espresso to green tea."])
    drinks = {i.value: i for i in eng.memory_items("mia") if i.attribute in ("drink", "morning drink")}
    assert set(drinks) == {"espresso", "green tea"}
    espresso, tea = drinks["espresso"], drinks["green tea"]
    assert (espresso.valid_from, espresso.event_time) == (times[0], times[0])  # said on day one, not made up later
    assert (espresso.valid_to, espresso.superseded_by) == (tea.valid_from, tea.id) and tea.is_open


def test_a_name_said_with_a_job(eng):
    say_lines(eng, ["My name is Leo and I'm a software engineer at Google."])
    held = {(i.attribute, i.value) for i in eng.memory_items("mia")}
    assert {("name", "Leo"), ("job", "software engineer"), ("employer", "Google")} <= held
