"""A new-user trial with no LLM: ``timem forget "I work as a nurse"`` (and "我是护士"), whose only lines were a
sibling's, said "nothing matched" and nothing else. An empty preview always says why (the lines holding its words
are someone else's; no line says that of the sister), what was searched, and what to try; the CLI adds how to list
what is remembered (:mod:`timem.memory.forget_hints`). Real DuckDB file, no LLM."""

from __future__ import annotations

import re

import pytest
from memory_scenario import write
from test_cli import cli_env, run  # noqa: F401  (fixture)
from trial_support import fixtures

EXCHANGES = [
    ("My brother is a nurse at the hospital.", "Tough job."),
    ("我姐姐是护士。", "很辛苦。"),
    ("I love jazz.", "Great."),
    ("I told Tom I'm a baker.", "Nice."),
]
SEARCHED = re.compile(r"Searched \d fact\(s\) and 8 conversation segment\(s\) \(accents ignored\)\.")

embedder, eng = fixtures(EXCHANGES)


@pytest.mark.parametrize(("text", "why"), [
    ("I work as a nurse", 'the lines that hold its words are about someone else, not you, e.g. "My brother is a '
                          "nurse at the hospital.\". To forget such a line, say whose it is (e.g. 'my sister …'). "
                          "Give the word alone (e.g. 'nurse') to reach every line that holds it."),
    ("我是护士", "the lines that hold its words are about someone else, not you, e.g. \"我姐姐是护士。\""),
    ("Tom is a baker", "no line says that of Tom: the lines that hold its words are about someone else or you, "
                       "e.g. \"I told Tom I'm a baker.\". Give the word alone (e.g. 'baker')"),
    ("I lived in Hamburg", "no memory holds 'Hamburg'"),
])
def test_an_empty_preview_says_why_what_was_searched_and_what_to_try(eng, text, why):
    plan = eng.forget("mia", text)
    assert plan.empty and why in plan.hint, (text, plan.hint)
    said = plan.describe()
    assert said.startswith(f"Nothing matched {text!r}, so nothing was forgotten: {plan.hint} "), said
    assert SEARCHED.search(said), said


def test_the_word_alone_that_the_hint_suggests_reaches_the_line(eng):
    assert "My brother is a nurse" in " ".join(n.content for n in eng.forget("mia", "nurse").segments)


def test_cli_forget_that_matches_nothing_says_what_was_searched_and_how_to_list(cli_env):  # noqa: F811
    db = str(cli_env / "t.duckdb")
    path = write(cli_env / "mia.jsonl", "mia", [("s01", "Mia", "My brother is a nurse at the hospital.",
                                                 "2024-03-01T09:00:00")])
    assert run("ingest", str(path), "--format", "jsonl", "--llm", "none", "--mode", "extractive", "--db", db)[0] == 0
    code, out = run("forget", "I work as a nurse", "--user", "mia", "--db", db, "--yes")
    assert code == 1 and "error: nothing matched 'I work as a nurse', so nothing was forgotten: " in out, out
    assert "about someone else" in out and "(e.g. 'nurse')" in out and "Searched 0 fact(s) and 2 conversation" in out
    assert "`timem memories list --user mia`" in out and "`timem tree --user mia --level 1`" in out, out
