"""A new-user trial with no LLM: ``timem forget "zurich"`` found nothing where the memories said "Zürich" (and
"Zurich" nothing where they said "zürich"). Forget by text folds accents for matching, on both sides
(:func:`timem.memory.forget_words.fold`); what the preview shows is the text as stored. Real DuckDB file, no LLM."""

from __future__ import annotations

import pytest
from trial_support import fixtures, going

EXCHANGES = [
    ("I moved to Zürich last spring.", "Lovely city."),
    ("I love jazz.", "Great."),
    ("The lake in zürich was freezing on Sunday.", "Brr."),
    ("My favourite café is near the station.", "Sounds cosy."),
    ("Ich trinke gern Kaffee.", "Sehr gut."),
]


embedder, eng = fixtures(EXCHANGES)


@pytest.mark.parametrize("text", ["zurich", "Zurich", "ZURICH", "Zürich", "zürich"])
def test_a_request_without_or_with_accents_reaches_both_spellings(eng, text):
    plan = eng.forget("mia", text)
    took = going(plan)
    assert "I moved to Zürich last spring." in took and "The lake in zürich was freezing" in took, (text, took)
    assert "jazz" not in took and "café" not in took, (text, took)
    # shown as stored, not folded
    assert "Zürich" in plan.describe() and "zürich" in plan.describe() and "Zurich last" not in plan.describe()


def test_a_stated_fact_without_accents_names_the_accented_item(eng):
    plan = eng.forget("mia", "I live in Zurich")
    assert [(i.attribute, i.value) for i in plan.items] == [("home city", "Zürich")], plan.describe()
    assert "I moved to Zürich" in going(plan) and "jazz" not in going(plan)


@pytest.mark.parametrize("text", ["cafe", "my favourite cafe"])
def test_cafe_reaches_cafe_with_its_accent(eng, text):
    took = going(eng.forget("mia", text))
    assert "My favourite café is near the station." in took and "Zürich" not in took, (text, took)


def test_an_accent_folded_request_that_matches_nothing_still_says_so(eng):
    plan = eng.forget("mia", "Genève")
    assert plan.empty and "Gen" in plan.hint, plan.describe()


def test_fold_drops_latin_accents_only():
    from timem.memory.forget_words import fold

    assert fold("Zürich café Łódź Øresund straße crème brûlée") == "Zurich cafe Lodz Oresund strasse creme brulee"
    for kept in ("我以前住在柏林", "が好き", "Москва", "plain ascii"):
        assert fold(kept) == kept
