"""Found by trying the command line on a chat of a move and a new job (`timem ingest`, `timem memories list`, no LLM):

* "I moved to Lisbon last week, we live in Alfama now." made the home city Alfama (a quarter of Lisbon): of the home
  patterns of a sentence the first in the list won ("live in"), whatever it named. A name the gazetteer knows as a
  place now wins over one it does not, in a sentence and in a turn ("I moved to Lisbon. We live in Alfama now.").
* "I live in Manchester and work as a nurse at Salford Royal hospital." read the city and no job or employer: the
  "I" left out before "work" is the speaker's (not after a relative clause or another subject: "my parents who live in
  Leeds and work at Asda" stays unread).
* "I've been living in Porto since 2021." read nothing (only "I live / I'm living in" were read).
* "I joined Google as a UX researcher." read nothing at all (neither employer nor job): a job may start with an
  acronym in capitals ("UX researcher", "QA engineer"), as "I work at Google as a UX designer" may.

Real DuckDB file, real CLI."""

from __future__ import annotations

import json

import pytest
from test_cli import cli_env, run  # noqa: F401  (fixture)

from timem.memory.rules import extract_statements


def _held(cli_env, lines: list[str]) -> str:  # noqa: F811
    chat, db = cli_env / "chat.jsonl", str(cli_env / "t.duckdb")
    chat.write_text("".join(json.dumps({"user_id": "sam", "session_id": f"s{k}", "role": "user", "speaker": "Sam",
                                        "text": t, "timestamp": f"2024-0{k + 3}-04T09:00:00+01:00"}) + "\n"
                            for k, t in enumerate(lines)))
    assert run("ingest", str(chat), "--llm", "none", "--db", db)[0] == 0
    code, out = run("memories", "list", "--user", "sam", "--db", db)
    assert code == 0, out
    return "\n".join(line for line in out.splitlines() if "superseded by" not in line)


@pytest.mark.parametrize("moved", ["Hi again. I moved to Lisbon last week, we live in Alfama now.",
                                   "I moved to Lisbon last week. We live in Alfama now."])
def test_a_quarter_of_the_city_moved_to_is_no_home_city(cli_env, moved):  # noqa: F811
    held = _held(cli_env, ["I live in Berlin and I love my job.", moved])
    assert "Sam's home city: Lisbon" in held and "Alfama" not in held, held


def test_been_living_in_is_a_home_city(cli_env):  # noqa: F811
    held = _held(cli_env, ["I live in Berlin.", "I've been living in Porto since 2021, I love it."])
    assert "Sam's home city: Porto" in held and "Berlin" not in held, held


def test_the_i_left_out_before_work(cli_env):  # noqa: F811
    held = _held(cli_env, ["I live in Manchester and work as a nurse at Salford Royal hospital."])
    assert "Sam's employer: Salford Royal hospital" in held and "Sam's job: nurse" in held, held


def test_joined_as_a_job_with_an_acronym(cli_env):  # noqa: F811
    held = _held(cli_env, ["I work as a nurse at St James's.", "I joined Google as a UX researcher."])
    assert "Sam's employer: Google" in held and "Sam's job: UX researcher" in held, held


@pytest.mark.parametrize("text, expected", [
    ("I joined Google as a UX researcher.", [("employer", "Google"), ("job", "UX researcher")]),
    ("I work at Acme as a QA engineer.", [("employer", "Acme"), ("job", "QA engineer")]),
    ("I moved to New York, I live in Brooklyn now.", [("home city", "Brooklyn")]),  # both places: as before
    ("I live in London, in Shoreditch.", [("home city", "London")]),
    ("I'm a UK citizen.", []),
    ("I have been living in Porto since 2021.", [("home city", "Porto")]),
    ("We have been based in Lyon since May.", [("home city", "Lyon")]),
    ("I have been living in hope.", []),
    ("I live in Leeds and work at Asda.", [("home city", "Leeds"), ("employer", "Asda")]),
    ("I moved to Porto and now work as a nurse.", [("home city", "Porto"), ("job", "nurse")]),
    ("I visited my parents who live in Leeds and work at Asda.", []),
    ("My parents live in Leeds and work at Asda.", []),
    # a move to a town the gazetteer does not know, and a correction, still count
    ("I live in Leeds. I moved to Otley last week.", [("home city", "Leeds"), ("home city", "Otley")]),
    ("I live in Porto. Sorry, I meant I live in Vila Nova.", [("home city", "Porto"), ("home city", "Vila Nova")]),
])
def test_rules(text, expected):
    assert [(s.attribute, s.value) for s in extract_statements(text)] == expected
