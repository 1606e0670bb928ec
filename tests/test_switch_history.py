"""A new-user trial of the memory layer with no LLM (``timem remember`` / ``memories list``): "I switched from espresso
to green tea", with nothing known of espresso, recorded green tea only. Real DuckDB file, the rules, no LLM."""

from __future__ import annotations

from datetime import timedelta

import pytest
from trial_support import fixtures, say_lines

embedder, eng = fixtures()


@pytest.mark.parametrize("line", ["I switched from espresso to green tea.",
                                  "I've switched from espresso to green tea.",
                                  "I moved from espresso to green tea."])
def test_a_switch_from_a_value_no_item_held_records_it_as_history(eng, line):
    """Nothing was known of espresso: it is written as a preference that ended when the switch was said (superseded
    by green tea), and green tea holds."""
    (_, said) = say_lines(eng, ["I live in Lisbon.", line])
    drinks = {i.value: i for i in eng.memory_items("mia") if i.attribute == "drink"}
    assert set(drinks) == {"espresso", "green tea"}, drinks
    espresso, tea = drinks["espresso"], drinks["green tea"]
    assert tea.is_open and tea.valid_from == said
    assert espresso.valid_to == said and espresso.superseded_by == tea.id
    assert espresso.valid_from < said  # it held before the switch (since the start of what the memory knows)
    assert espresso.valid_at(said - timedelta(hours=1)) and not espresso.valid_at(said)


def test_a_switch_from_a_held_value_writes_no_second_history_item(eng):
    say_lines(eng, ["I drink espresso every day.", "I switched from espresso to green tea."])
    drinks = sorted((i.value, i.is_open) for i in eng.memory_items("mia") if i.attribute in ("drink", "morning drink"))
    assert drinks == [("espresso", False), ("green tea", True)]
