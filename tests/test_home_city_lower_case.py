"""A new-user trial with no LLM: "I live in lisbon" read nothing, while "I'm from berlin" read the hometown Berlin.
A home city in lower case is read under the hometown's rule (:func:`timem.memory.places.lower_place`). Real DuckDB
file, the rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from trial_support import fixtures

from timem.memory.rules import extract_statements

T0 = datetime(2024, 5, 1, 9, tzinfo=UTC)


embedder, eng = fixtures()


@pytest.mark.parametrize(("text", "value"), [
    ("I live in lisbon.", "Lisbon"), ("I live in lisbon now.", "Lisbon"), ("I moved to porto last week.", "Porto"),
    ("We settled in new york.", "New York"), ("Just moved to berlin with my partner.", "Berlin"),
    ("I'm based in london.", "London"),
])
def test_a_home_city_in_lower_case_is_read_in_its_own_case(text, value):
    assert [(s.attribute, s.value) for s in extract_statements(text)] == [("home city", value)]


@pytest.mark.parametrize("text", [
    "I live in hope.", "I live in fear of spiders.", "I moved to reading glasses.", "I live in nice weather.",
    "I moved to a new flat.", "I live in the office these days.", "I moved to marketing.", "I live in cork.",
])
def test_a_lower_case_word_after_live_in_is_no_home_city(text):
    assert [s for s in extract_statements(text) if s.attribute == "home city"] == []


def test_a_lower_case_home_city_is_stored_and_supersedes(eng):
    for k, line in enumerate(["I live in Berlin.", "I live in lisbon now."]):
        eng.remember("mia", f"s{k}", line, T0 + timedelta(days=k), reply="Noted.", user_name="Mia")
    eng.extract_items(["mia"])
    held = {(i.value, i.is_open) for i in eng.memory_items("mia") if i.attribute == "home city"}
    assert held == {("Berlin", False), ("Lisbon", True)}
