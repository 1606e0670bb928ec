"""A new-user trial: "I work as a nurse at St James's." then "I just started at Google." The memory layer ends the job
title at the change of employer (:func:`timem.memory.history.end_old_job`), but recall for "Am I still a nurse?" gave
no item line (the job ended at another attribute's change, so it was neither open nor "ended, nothing since"): only
the old excerpt "I work as a nurse", nothing saying it ended; "What was my job before Google?" gave the employer
history and never "nurse". A value ended by a change of a related single-valued attribute is now given with its
validity and that change, and the chain that ended it comes with it. Real DuckDB file, MiniLM, rules, no LLM."""

from __future__ import annotations

from datetime import timedelta

import pytest
from trial_support import T0, engine, say_lines

NURSE = "[fact, valid 2024-05-01 – 2024-05-03] Mia's job: nurse (ended 2024-05-03, at the change of employer to Google)"
GOOGLE = "[fact, valid 2024-05-03 – now] Mia's employer: Google (superseded: St James's, until 2024-05-03)"


@pytest.fixture()
def eng(tmp_path, store, embedder):
    e = engine(tmp_path, store, embedder)  # embedder: the conftest's MiniLM
    say_lines(e, ["I work as a nurse at St James's.", "I live in Dublin.", "I just started at Google."])
    return e


def _items_block(eng, question: str) -> list[str]:
    context = eng.recall("mia", question, T0 + timedelta(days=10)).context
    return context.split("Conversation excerpts:")[0].strip().splitlines()


@pytest.mark.parametrize("question", ["Am I still a nurse?", "What was my job before Google?",
                                      "What do I do for a living?", "Where do I work?"])
def test_a_job_ended_by_a_new_employer_is_given_with_its_end_and_the_new_employer(eng, question):
    block = _items_block(eng, question)
    assert NURSE in block and GOOGLE in block, block
    assert not any("home city" in line for line in block), block  # no other chain comes with them


def test_a_question_on_another_attribute_gets_neither(eng):
    assert _items_block(eng, "Where do I live?") == ["[fact, valid 2024-05-02 – now] Mia's home city: Dublin"]


def test_a_job_that_holds_brings_no_employer_line(tmp_path, store, embedder):
    e = engine(tmp_path, store, embedder)
    say_lines(e, ["I work as a nurse at St James's.", "I live in Dublin."])
    block = _items_block(e, "Am I still a nurse?")
    assert block == ["[fact, valid 2024-05-01 – now] Mia's job: nurse"], block
