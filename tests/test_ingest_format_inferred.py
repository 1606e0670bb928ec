"""`timem ingest FILE` without `--format`: found by trying the product, `timem ingest chat.jsonl` failed with
"Missing option '--format'". The format now comes from the file (.jsonl: TiMem JSONL; .json: LoCoMo or LongMemEval
by its records' keys); a file whose name and first bytes do not tell is a usage error naming --format, writing
nothing. The runs are the command line as a user gives it (CliRunner over timem.cli.app), on real DuckDB files.
"""

from __future__ import annotations

import json

import duckdb
import pytest
from conftest import REPO
from test_cli import _usage_error, chat_file, cli_env, run  # noqa: F401  (fixtures)

from timem.datasets.detect import infer_format

FIXTURES = REPO / "tests" / "fixtures"


def _turns(db: str) -> list[tuple[str, str]]:
    with duckdb.connect(db, read_only=True) as con:
        return con.execute("SELECT user_id, text FROM turns ORDER BY user_id, session_id, seq").fetchall()


def test_a_jsonl_file_is_ingested_without_format(cli_env, chat_file, capsys):  # noqa: F811
    db = str(cli_env / "t.duckdb")
    code, out = run("ingest", str(chat_file), "--llm", "none", "--l1-only", "--db", db)
    assert code == 0, out
    assert "reading" in out and "as jsonl (the extension .jsonl)" in out, out  # says what it read it as
    assert [u for u, _ in _turns(db)] == ["zoe"] * 4


def test_a_locomo_json_file_is_ingested_as_locomo_without_format(cli_env):  # noqa: F811
    db = str(cli_env / "t.duckdb")
    code, out = run("ingest", str(FIXTURES / "locomo_tiny.json"), "--llm", "none", "--l1-only", "--db", db)
    assert code == 0 and "as locomo" in out, out
    assert json.loads((FIXTURES / "locomo_tiny.json").read_text())[0]["sample_id"] in {u for u, _ in _turns(db)}


@pytest.mark.parametrize("name, content, says", [
    ("chat.txt", None, "the extension '.txt'"),
    ("chat", None, "no extension"),
    ("other.json", '[{"id": 1, "messages": []}]', "neither LoCoMo's sample_id"),
    ("both.json", '[{"sample_id": "a", "question_id": "b"}]', "keys of both formats"),
])
def test_a_file_that_does_not_tell_its_format_is_a_usage_error_naming_format(cli_env, chat_file, name,  # noqa: F811
                                                                             content, says):
    src = cli_env / name
    src.write_text(content if content is not None else chat_file.read_text())
    db = cli_env / "t.duckdb"
    out = _usage_error("ingest", str(src), "--llm", "none", "--db", str(db))  # exit code 2, one message
    assert says in out and "--format locomo, --format longmemeval or --format jsonl" in out, out
    assert not db.exists()  # refused before the database was opened
    # named, it is read as named
    if content is None:
        assert run("ingest", str(src), "--format", "jsonl", "--llm", "none", "--l1-only", "--db", str(db))[0] == 0


def test_infer_format_reads_the_keys_of_the_records_not_text_inside_them(tmp_path):
    assert infer_format(FIXTURES / "longmemeval_tiny.json")[0] == "longmemeval"
    assert infer_format(FIXTURES / "locomo_tiny.json")[0] == "locomo"
    assert infer_format(REPO / "tests" / "data" / "locomo-dev.json")[0] == "locomo"
    # a LongMemEval turn that quotes a LoCoMo key as text: still LongMemEval (the quote is escaped in JSON)
    quoted = tmp_path / "quoted.json"
    quoted.write_text(json.dumps([{"question_id": "q1", "haystack_sessions": [[
        {"role": "user", "content": 'my config says {"sample_id": 3}'}]]}]))
    assert infer_format(quoted)[0] == "longmemeval"
    # TiMem JSONL saved as .json: its first line is a turn
    turn = tmp_path / "turns.json"
    turn.write_text(json.dumps({"user_id": "mia", "session_id": "s1", "role": "user", "text": "Hi",
                                "timestamp": "2024-05-02T09:00:00"}) + "\n")
    assert infer_format(turn)[0] == "jsonl"
    assert infer_format(tmp_path / "UPPER.JSONL")[0] == "jsonl"
