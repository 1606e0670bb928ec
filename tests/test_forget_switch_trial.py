"""A new-user trial with no LLM: after "I switched from espresso to green tea" (one message), ``timem forget "I drink
green tea"`` took the espresso history said in the same message ("also goes") instead of reopening it. The earlier
value that a forgotten fact had replaced holds again, as it does when it was said in a message of its own
(:attr:`timem.memory.forget.ForgetPreview.reopened`); it stays though its line goes. Real DuckDB file, no LLM."""

from __future__ import annotations

from trial_support import fixtures, going

from timem.models import Level

EXCHANGES = [
    ("I love jazz.", "Great."),
    ("I switched from espresso to green tea.", "Healthy!"),
]


embedder, eng = fixtures(EXCHANGES)


def _drinks(eng):
    return [(i.value, i.valid_to) for i in eng.memory_items("mia") if i.attribute in ("drink", "morning drink")]


def test_forgetting_the_new_drink_reopens_the_one_it_replaced_in_the_same_message(eng):
    assert sorted(v for v, _ in _drinks(eng)) == ["espresso", "green tea"]
    plan = eng.forget("mia", "I drink green tea")
    assert [i.value for i in plan.items] == ["green tea"] and not plan.collateral, plan.describe()
    assert [i.value for i in plan.reopened] == ["espresso"], plan.describe()
    assert "holds again: Mia's drink: espresso" in plan.describe() and "also goes" not in plan.describe()
    assert "I switched from espresso to green tea." in going(plan)  # the line goes whole

    eng.forget("mia", "I drink green tea", confirm=True)
    assert _drinks(eng) == [("espresso", None)]  # holds again, no end
    assert "jazz" in " ".join(i.value for i in eng.memory_items("mia"))
    assert not any("green tea" in n.content for n in eng.store.nodes("mia", Level.SEGMENT))


def test_forgetting_the_switch_itself_takes_both(eng):
    plan = eng.forget("mia", "I switched from espresso to green tea", confirm=True)
    assert sorted(i.value for i in plan.items) == ["espresso", "green tea"] and not plan.reopened, plan.describe()
    assert _drinks(eng) == []
