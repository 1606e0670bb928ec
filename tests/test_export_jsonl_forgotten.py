"""Found by trying it: `timem export --format jsonl` left the forgotten turns out without a word (the JSON export lists
them, marked "forgotten": true). Now it says so on stderr, with the three ways to have them (restore their segments
first, --include-forgotten, the JSON export), and --include-forgotten writes them too, so that export -> import is
exact: turn ids, speakers as stored (a role-only line is stored with the role as its speaker, "assistant"), roles,
texts, captions, references, event times and the speaker's offset. Real CLI entry, real DuckDB files."""

from __future__ import annotations

import json
import re

import pytest
from test_cli import cli_env, run  # noqa: F401  (fixture)
from typer.testing import CliRunner

from timem.cli import app

LINES = [  # a role-only line is stored with the role as its speaker; offsets of several zones; a caption, a reference
    {"session_id": "s1", "role": "user", "text": "I adopted a rescue dog called Rex yesterday.",
     "timestamp": "2024-05-02T09:00:00"},
    {"session_id": "s1", "role": "assistant", "text": "Congratulations on adopting Rex!",
     "timestamp": "2024-05-02T09:00:30"},
    {"session_id": "s1", "speaker": "Zoe", "role": "user", "text": "  Two lines\nthe second  ",
     "timestamp": "2024-05-02T16:01:00+09:00", "source_ref": "msg-3"},
    {"session_id": "s1", "speaker": "Bot", "text": "A picture!", "timestamp": "2024-05-02T09:02:00Z",
     "image_caption": "a dog on grass"},
    {"session_id": "s2", "speaker": "ASSISTANT", "text": "Capitals kept", "timestamp": "2024-05-03T10:00:00-07:00"},
    {"session_id": "s2", "speaker": "Kai", "role": "other", "text": "我昨天去了公园",
     "timestamp": "2024-05-03T10:05:00-07:00"},
]


@pytest.fixture()
def db(cli_env, monkeypatch):  # noqa: F811
    monkeypatch.setenv("TIMEM_TIMEZONE", "Europe/Berlin")
    chat = cli_env / "chat.jsonl"
    chat.write_text("".join(json.dumps({"user_id": "zoe", **line}, ensure_ascii=False) + "\n" for line in LINES),
                    encoding="utf-8")
    path = str(cli_env / "t.duckdb")
    assert run("ingest", str(chat), "--format", "jsonl", "--llm", "none", "--mode", "extractive", "--db", path)[0] == 0
    return path


def _export(*args: str):
    res = CliRunner().invoke(app, ["export", "--user", "zoe", "--format", "jsonl", *args], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res


def _turns(path: str) -> list[tuple]:
    from timem.store import Store

    store = Store(path, "sentence-transformers/all-MiniLM-L6-v2", 384)
    try:
        return [(t.id, t.speaker, t.role, t.text, t.event_time, t.utc_offset_minutes, t.image_caption, t.source_ref)
                for t in store.turns("zoe")]
    finally:
        store.close()


def test_export_then_import_is_exact(db, cli_env):  # noqa: F811
    out = cli_env / "zoe.jsonl"
    res = _export("--out", str(out), "--db", db)
    assert res.stdout.strip() == f"wrote 6 turn(s) of zoe to {out}" and res.stderr == ""
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["speaker"] for r in rows] == ["user", "assistant", "Zoe", "Bot", "ASSISTANT", "Kai"]
    assert [r["timestamp"][19:] for r in rows] == ["+02:00", "+02:00", "+09:00", "+02:00", "-07:00", "-07:00"]
    again = str(cli_env / "again.duckdb")
    assert run("ingest", str(out), "--format", "jsonl", "--llm", "none", "--mode", "extractive", "--db", again)[0] == 0
    assert _turns(again) == _turns(db)


def test_forgotten_turns_left_out_are_named_on_stderr(db, cli_env):  # noqa: F811
    code, said = run("forget", "rescue dog", "--user", "zoe", "--db", db, "--yes")
    assert code == 0, said
    segments = re.findall(r"^segment (L1-[0-9a-f]+)", said, flags=re.M)
    out = cli_env / "zoe.jsonl"
    res = _export("--out", str(out), "--db", db)
    assert res.stdout.strip() == f"wrote 4 turn(s) of zoe to {out}"
    assert res.stderr.startswith("left out 2 forgotten turn(s) of zoe (a re-import would remember them again): "
                                 f"`timem restore {' '.join(segments)} --user zoe --db {db}` brings them back first, "
                                 "--include-forgotten writes them too"), res.stderr
    assert "Rex" not in out.read_text(encoding="utf-8")

    res = _export("--out", str(out), "--db", db, "--include-forgotten")
    assert res.stdout.strip() == f"wrote 6 turn(s) of zoe to {out} (2 forgotten among them)" and res.stderr == ""
    again = str(cli_env / "again.duckdb")
    assert run("ingest", str(out), "--format", "jsonl", "--llm", "none", "--mode", "extractive", "--db", again)[0] == 0
    assert _turns(again) == _turns(db)

    code, restored = run("restore", *segments, "--user", "zoe", "--db", db)  # the hint's command works
    assert code == 0, restored
    res = _export("--out", str(out), "--db", db)
    assert res.stdout.strip() == f"wrote 6 turn(s) of zoe to {out}" and res.stderr == ""


def test_include_forgotten_is_for_jsonl_only(db):
    res = CliRunner().invoke(app, ["export", "--user", "zoe", "--include-forgotten", "--db", db])
    assert res.exit_code == 2 and "--include-forgotten is for --format jsonl" in res.output, res.output


def test_many_forgotten_segments_are_named_six_at_a_time(cli_env):  # noqa: F811
    chat = cli_env / "many.jsonl"
    chat.write_text("".join(json.dumps({"user_id": "zoe", "session_id": f"s{k}", "role": "user",
                                        "text": f"Rex chewed shoe number {k}.",
                                        "timestamp": f"2024-05-0{k + 1}T09:00:00"}) + "\n" for k in range(8)))
    db = str(cli_env / "many.duckdb")
    assert run("ingest", str(chat), "--format", "jsonl", "--llm", "none", "--mode", "extractive", "--db", db)[0] == 0
    code, said = run("forget", "Rex", "--user", "zoe", "--db", db, "--yes")
    segments = re.findall(r"^segment (L1-[0-9a-f]+)", said, flags=re.M)
    assert code == 0 and len(segments) == 8, said
    res = _export("--out", str(cli_env / "zoe.jsonl"), "--db", db)
    assert f"`timem restore {' '.join(segments[:6])} … --user zoe --db {db}` brings them back first (the first 6 " \
           "of 8 segments)" in res.stderr, res.stderr
