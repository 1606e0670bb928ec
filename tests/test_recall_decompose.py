"""LLM aspect queries (``aspect_queries = "llm"``, :func:`timem.recall.aspects.llm_aspect_queries`, issue 23's
"LLM-assisted recall"): a scripted LLM splits a question the rules cannot split, on the hand-built case
``tests/data/cases/channels/aspects.jsonl`` (Ana's stamps in six sessions; Ben's coins once, "my shelf of old coins
keeps growing, I bring one home from every country I visit"). Real MiniLM, real DuckDB, scripted LLM."""

from __future__ import annotations

import json

import pytest
from channel_support import case_engine

from timem.engine import MemoryEngine
from timem.llm.client import LLM
from timem.llm.fake import ScriptedBackend

Q = "What do the two of them collect?"  # no names joined by "and": the rules give no split
WHO = ("Ana", "Ben")
SPLIT = json.dumps({"sub_questions": ["What does Ana collect?", "What does Ben bring home from every trip?"]})


@pytest.fixture(scope="module")
def folder(tmp_path_factory, embedder):
    path = tmp_path_factory.mktemp("decompose")
    case_engine(path, embedder, "aspects").close()
    return path


def _with_llm(folder, embedder, answers, **settings) -> tuple[MemoryEngine, ScriptedBackend]:
    plain = case_engine(folder, embedder, "aspects", token_budget=170, channel_slot=1, second_hop=0, **settings)
    backend = ScriptedBackend(answers)
    return MemoryEngine(plain.config, plain.store, embedder, LLM(backend, None)), backend


def test_the_llm_split_reaches_the_turn_the_question_shares_no_word_with(folder, embedder):
    with case_engine(folder, embedder, "aspects", token_budget=170, channel_slot=1, second_hop=0) as eng:
        before = eng.recall("duo", Q, participants=WHO, persist=False, complexity="hybrid")
    eng, backend = _with_llm(folder, embedder, [SPLIT], aspect_queries="llm")
    with eng:
        after = eng.recall("duo", Q, participants=WHO, persist=False, complexity="hybrid")
    assert "coins" not in before.context, before.context  # Ana's stamps fill the budget without the split
    assert "coins" in after.context and "stamp" in after.context, after.context
    assert len(backend.calls) == 1 and Q in backend.calls[0].messages[-1].content
    placed = [c for c in after.trace.candidates if c.channel]
    assert any(c.channel == "aspect: What does Ben bring home from every trip?" for c in placed), placed
    assert any(n.startswith("aspect queries (LLM): What does Ana collect?") for n in after.trace.notes)


def test_a_simple_question_is_not_sent_to_the_llm(folder, embedder):
    eng, backend = _with_llm(folder, embedder, [SPLIT], aspect_queries="llm")
    with eng:
        eng.recall("duo", "What does Ana collect?", participants=WHO, persist=False, complexity="simple")
    assert backend.calls == []


@pytest.mark.parametrize(("answer", "note"), [
    ("not json at all", "LLM decomposition failed"),
    (json.dumps({"sub_questions": [Q]}), "LLM decomposition gave no split"),
])
def test_a_failed_or_empty_split_falls_back_to_the_rules_and_says_so(folder, embedder, answer, note):
    eng, _ = _with_llm(folder, embedder, [answer] * 3, aspect_queries="llm")
    with eng:
        got = eng.recall("duo", "What do Ana and Ben both collect?", participants=WHO, persist=False,
                         complexity="complex")
    assert any(n.startswith(note) for n in got.trace.notes), got.trace.notes
    rules = [c.channel for c in got.trace.candidates if c.channel]
    assert any(ch.startswith("aspect: ") and "Ben" in ch for ch in rules), rules  # the rules' person parts


def test_without_an_llm_the_rules_run_and_the_trace_says_so(folder, embedder):
    with case_engine(folder, embedder, "aspects", token_budget=170, channel_slot=1, second_hop=0,
                     aspect_queries="llm") as eng:
        got = eng.recall("duo", "What do Ana and Ben both collect?", participants=WHO, persist=False,
                         complexity="complex")
    assert "aspect queries 'llm' configured but no LLM available; rules used" in got.trace.notes
    assert "coins" in got.context, got.context


def test_only_real_new_sub_questions_are_searched():
    from timem.prompts.decompose import usable

    got = usable(["Melanie does yoga to destress.",  # a guessed answer, not a question
                  "What does Pat like doing?",  # the prompt's example, copied
                  "What does Melanie do to destress?",  # the question itself
                  "  Where did   Melanie camp? ", "Where did Melanie camp?", "Which book did Melanie read?"],
                 "What does Melanie do to destress?")
    assert got == ["Where did Melanie camp?", "Which book did Melanie read?"]
    assert usable(["What does Pat like?", "What does Sam like?"], "What do Pat and Sam like?") == [
        "What does Pat like?", "What does Sam like?"]  # the names are the question's own here
