"""Found by trying the command line: "I have a dog called Biscuit" forgotten with `timem forget … --yes` left the
assistant's later question "How is Biscuit taking the move?", so a recall for "Biscuit" still gave the dog's name.
The line was reached (by the name the user gave the dog) and then spared as "someone else's": the rule that finds a
clause about another person read the question word "How" as a person's name before "is" (as in "Tom is a nurse").
A question word is no name (:mod:`timem.memory.grounding`). Real DuckDB file, real CLI, no LLM."""

from __future__ import annotations

import json

from test_cli import cli_env, run  # noqa: F401  (fixture)

from timem.memory.grounding import about_speaker

TURNS = [
    ("s1", "user", "My dog Biscuit, a beagle, kept me up all night barking.", "2024-03-04T09:03:00+01:00"),
    ("s1", "assistant", "Poor you. Is Biscuit okay?", "2024-03-04T09:04:00+01:00"),
    ("s2", "user", "Hi again. I moved to Lisbon last week.", "2024-05-12T21:00:00+01:00"),
    ("s2", "assistant", "How is Biscuit taking the move?", "2024-05-12T21:01:00+01:00"),
    ("s2", "assistant", "What does Biscuit think of the beach?", "2024-05-12T21:02:00+01:00"),
    ("s2", "user", "He loves the sun.", "2024-05-12T21:03:00+01:00"),
]


def test_forgetting_the_dog_takes_the_assistants_questions_about_it(cli_env):  # noqa: F811
    chat, db = cli_env / "sam.jsonl", str(cli_env / "sam.duckdb")
    chat.write_text("".join(json.dumps({"user_id": "sam", "session_id": s, "role": r, "text": t, "timestamp": ts})
                            + "\n" for s, r, t, ts in TURNS))
    assert run("ingest", str(chat), "--llm", "none", "--db", db)[0] == 0
    code, out = run("forget", "I have a dog called Biscuit", "--user", "sam", "--db", db, "--yes")
    assert code == 0, out
    assert "How is Biscuit taking the move?" in out and "What does Biscuit think of the beach?" in out, out
    code, out = run("ask", "Biscuit", "--user", "sam", "--db", db, "--recall-only")
    assert code == 0 and "Biscuit" not in out, out


def test_a_question_word_is_no_persons_name():
    assert about_speaker("How is  taking the move?") and about_speaker("What does  think of the beach?")
    assert not about_speaker("Tom is a nurse") and not about_speaker("Anna works at Google")
