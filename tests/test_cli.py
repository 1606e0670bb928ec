"""The ``timem`` CLI as a user runs it: ingest, tree, stats, check, ask — real DuckDB, real embedder, real HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import typer
from service_support import free_port
from test_llm_openai import FakeServer, completion
from typer.testing import CliRunner

from timem.cli import app

TURNS = [
    ("s1", "user", "I adopted a rescue dog called Rex yesterday.", "2024-05-02T09:00:00"),
    ("s1", "assistant", "Congratulations on adopting Rex!", "2024-05-02T09:00:30"),
    ("s2", "user", "Rex and I ran 5 km along the river this morning.", "2024-05-09T07:30:00"),
    ("s2", "assistant", "Great pace for a first run together.", "2024-05-09T07:31:00"),
]


@pytest.fixture()
def chat_file(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps({"user_id": "zoe", "session_id": s, "role": r, "text": t, "timestamp": ts})
                            + "\n" for s, r, t, ts in TURNS))
    return path


@pytest.fixture()
def cli_env(tmp_path, monkeypatch):
    """No config file, no stray TIMEM_* settings; a private cache dir."""
    import os

    for var in [v for v in os.environ if v.startswith(("TIMEM_", "OPENAI_"))]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("TIMEM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture()
def ingested_db(cli_env, chat_file):
    """``chat_file`` ingested by ``timem ingest`` (extractive, no LLM) into a new DuckDB file; its path."""
    path = str(cli_env / "t.duckdb")
    assert run("ingest", str(chat_file), "--format", "jsonl", "--llm", "none", "--mode", "extractive",
               "--db", path)[0] == 0
    return path


def run(*args: str) -> tuple[int, str]:
    """Like the ``timem`` entry point (:func:`timem.cli.main`): a TimemError is one line, exit code 1."""
    from timem.errors import TimemError

    res = CliRunner().invoke(app, list(args), catch_exceptions=True)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        if not isinstance(res.exception, TimemError):
            raise res.exception
        return 1, res.output + f"error: {res.exception}"
    return res.exit_code, res.output


def test_ingest_tree_stats_check_and_idempotent_rerun(cli_env, chat_file):
    db = str(cli_env / "t.duckdb")
    code, out = run("ingest", str(chat_file), "--format", "jsonl", "--llm", "none", "--db", db)
    assert code == 0 and "4 new turns" in out, out
    code, out = run("ingest", str(chat_file), "--format", "jsonl", "--llm", "none", "--db", db)
    assert code == 0 and "0 new turns" in out and "new nodes none" in out, out

    code, out = run("tree", "--user", "zoe", "--db", db)
    assert code == 0 and out.count("L1") >= 2 and "2024-05-02" in out and "[= 1 May 2024]" in out, out  # resolved date

    code, out = run("stats", "--json", "--db", db)
    stats = json.loads(out[out.index("{"):])
    # without an LLM the default mode is extractive: one L1 per turn, and the whole tree (two sessions on two
    # Thursdays a week apart: two days, two weeks, one month)
    assert stats["turns"] == 4 and stats["nodes_per_level"] == {"L1": 4, "L2": 2, "L3": 2, "L4": 2, "L5": 1}

    code, out = run("check", "--db", db)
    assert code == 0 and out.startswith("ok"), out
    con = duckdb.connect(db)  # break an invariant behind the engine's back: an L1 loses its source turns
    con.execute("DELETE FROM turns WHERE session_id = 's2'")
    con.close()
    code, out = run("check", "--db", db)
    assert code == 2 and "VIOLATION" in out, out


def test_ask_recall_only_and_answer_over_http(cli_env, chat_file):
    db = str(cli_env / "t.duckdb")
    assert run("ingest", str(chat_file), "--format", "jsonl", "--llm", "none", "--db", db)[0] == 0
    code, out = run("ask", "What is the name of my dog?", "--user", "zoe", "--db", db, "--recall-only")
    assert code == 0 and "Rex" in out and "Mem Len" in out, out
    code, out = run("ask", "  ", "--user", "zoe", "--db", db, "--recall-only")  # names the argument, not 'query'
    assert code == 1 and "the QUESTION argument" in out and "'query'" not in out, out

    server = FakeServer()
    try:
        server.replies.append((200, completion("Rex, adopted on 1 May 2024."), 0.0))
        cli_env.joinpath("timem.toml").write_text(
            f'llm_backend = "openai"\nopenai_base_url = "{server.url}"\nopenai_model = "served-model"\n'
            'openai_api_key = "k"\n'
            'gate = "score"\n')
        code, out = run("ask", "When did I adopt my dog?", "--user", "zoe", "--db", db, "--trace")
    finally:
        server.close()
    assert code == 0, out
    assert "answer: Rex, adopted on 1 May 2024." in out and "plan (centroid)" in out and "Mem Len" in out, out
    prompt = json.dumps(server.requests[0]["body"]["messages"])
    assert "Rex" in prompt and "2024" in prompt  # the answer model saw the dated context

    code, out = run("ask", "Who?", "--user", "nobody", "--db", db, "--recall-only")
    assert code == 1 and "zoe" in out  # names the users that exist
    code, out = run("ask", "   ", "--user", "zoe", "--db", db, "--recall-only")
    assert code == 1 and "question is empty" in out, out
    long = "What is the name of my dog? " * 4  # 112 characters
    code, out = run("ask", long, "--user", "zoe", "--db", db, "--recall-only", "--config", str(limit_config(cli_env)))
    assert code == 1 and "question has 112 characters, more than max_turn_chars = 100" in out, out


@pytest.mark.parametrize("at, says", [("9999-12-31T23:00:00-05:00", "outside the years 1-9999 in UTC"),
                                      ("0001-01-01T01:00:00+05:00", "outside the years 1-9999 in UTC"),
                                      ("31/02/2024", "cannot read --at"), ("tomorrowish", "cannot read --at")])
def test_a_bad_at_is_one_error_line_that_says_what_is_wrong(cli_env, chat_file, at, says):
    """A new-user trial: a valid ISO time past year 9999 in UTC was "cannot read --at", and bad --at values printed a
    boxed usage error instead of the one ``error:`` line of every other bad input."""
    db = str(cli_env / "t.duckdb")
    assert run("ingest", str(chat_file), "--format", "jsonl", "--llm", "none", "--db", db)[0] == 0
    out = _usage_error("ask", "What is the name of my dog?", "--user", "zoe", "--db", db, "--recall-only", "--at", at)
    assert says in out, out  # a usage error (exit code 2), one line from the entry point (timem.cli.main)


def limit_config(folder) -> Path:
    """A TOML config whose ``max_turn_chars`` (the limit of any text, questions included) is 100."""
    path = folder / "limit.toml"
    path.write_text("[store]\nmax_turn_chars = 100\n")
    return path


def test_read_only_commands_refuse_a_missing_database_and_create_nothing(cli_env, chat_file):
    missing = cli_env / "typo" / "none.duckdb"
    for args in (["ask", "Who?", "--user", "zoe", "--recall-only"], ["stats"], ["check"], ["tree", "--user", "zoe"]):
        code, out = run(*args, "--db", str(missing))
        assert code == 1 and "no database at" in out, (args, out)
    assert not missing.parent.exists()
    db = str(cli_env / "t.duckdb")
    assert run("ingest", str(chat_file), "--format", "jsonl", "--llm", "none", "--db", db)[0] == 0
    for cmd in ("check", "tree", "erase-user", "segtree build"):
        args = [*cmd.split(), "--db", db] + (["nobody"] if cmd == "erase-user" else ["--user", "nobody"])
        code, out = run(*args)
        assert code == 1 and "no user 'nobody'" in out and "users:" in out, (cmd, out)
    code, out = run("erase-user", "zoe", "--db", db, "--yes")
    assert code == 0 and "turns" in out and "file rewritten in" in out and "MB" in out, out


def test_eval_recall_names_every_missing_user_before_any_work(cli_env, locomo_dev):
    db = cli_env / "e.duckdb"
    from timem.store import Store

    Store(db, "sentence-transformers/all-MiniLM-L6-v2", 384).close()  # exists, holds nobody
    code, out = run("eval-recall", str(locomo_dev), "--format", "locomo", "--db", str(db))
    assert code == 1 and "not in" in out and "ingest first" in out, out


def test_eval_recall_reports_coverage_per_category(cli_env):
    """The documented `timem eval-recall` on an ingested file (it crashed with a TypeError once: the CLI
    passed keyword names the engine facade does not take)."""
    data = str(Path(__file__).parent / "fixtures" / "locomo_tiny.json")
    db = str(cli_env / "t.duckdb")
    assert run("ingest", data, "--format", "locomo", "--llm", "none", "--mode", "extractive", "--db", db)[0] == 0
    code, out = run("eval-recall", data, "--format", "locomo", "--db", db, "--json", "--gate", "score")
    assert code == 0, out
    report = json.loads(out[out.index("[\n"):])  # after the progress bars (stderr, mixed in by CliRunner)
    assert [r["user_id"] for r in report] == ["conv-a", "conv-b"] and all(r["n"] > 0 for r in report), out


def test_eval_recall_scores_longmemeval_per_question_type(cli_env):
    """LongMemEval's categories are question types (text); eval-recall crashed reading them as numbers."""
    path = Path(__file__).parent / "fixtures" / "longmemeval_tiny.json"
    types = {q["question_id"]: q["question_type"] for q in json.loads(path.read_text())}
    db = str(cli_env / "t.duckdb")
    assert run("ingest", str(path), "--format", "longmemeval", "--llm", "none", "--mode", "extractive",
               "--db", db)[0] == 0
    code, out = run("eval-recall", str(path), "--format", "longmemeval", "--db", db, "--json", "--gate", "score")
    assert code == 0, out
    report = {r["user_id"]: r for r in json.loads(out[out.index("[\n"):])}
    assert set(report) == set(types), out
    for qid, qtype in types.items():
        assert report[qid]["n"] == 1 and list(report[qid]["per_category"]) == [qtype], report[qid]
    # evidence is the answer turns (source_ref "answer_…:0"), not the session ids it used to be compared as
    overall = report["tiny0001"]["overall"]
    assert overall["n_evidence"] == 1 and overall["evidence_recall"] == 1.0, report["tiny0001"]


def test_eval_recall_takes_the_gate_from_the_settings_unless_a_flag_gives_one(cli_env):
    """--gate defaulted to "score" and so overrode `[recall] gate` of the config file and TIMEM_GATE."""
    data = str(Path(__file__).parent / "fixtures" / "longmemeval_tiny.json")
    db = str(cli_env / "t.duckdb")
    assert run("ingest", data, "--format", "longmemeval", "--llm", "none", "--db", db)[0] == 0
    (cli_env / "off.toml").write_text('[recall]\ngate = "off"\n')

    def mem_len(*args: str) -> float:
        code, out = run("eval-recall", data, "--format", "longmemeval", "--db", db, "--json", *args)
        assert code == 0, out
        return sum(r["overall"]["mean_mem_len"] for r in json.loads(out[out.index("[\n"):]))

    by_file, by_flag, scored = (mem_len("--config", str(cli_env / "off.toml")), mem_len("--gate", "off"),
                                mem_len("--gate", "score"))
    assert by_file == by_flag != scored
    assert mem_len("--config", str(cli_env / "off.toml"), "--gate", "score") == scored  # the flag wins


def test_eval_recall_progress_counts_only_the_questions_it_evaluates(cli_env, monkeypatch):
    """The bar's total used to count the adversarial (category 5) questions that eval-recall skips."""
    import timem.cli_recall as cli_recall

    totals: dict[str, int | None] = {}
    real_progress = cli_recall.terminal_progress

    def spy(items, desc, total):
        totals[desc] = total
        return real_progress(items, desc, total)

    monkeypatch.setattr(cli_recall, "terminal_progress", spy)
    path = Path(__file__).parent / "fixtures" / "locomo_tiny.json"
    cats = {s["sample_id"]: [q["category"] for q in s["qa"]] for s in json.loads(path.read_text())}
    assert 5 in cats["conv-a"]  # the fixture has an adversarial question to skip
    db = str(cli_env / "t.duckdb")
    assert run("ingest", str(path), "--format", "locomo", "--llm", "none", "--mode", "extractive", "--db", db)[0] == 0
    code, out = run("eval-recall", str(path), "--db", db, "--json")
    assert code == 0, out
    report = {r["user_id"]: r for r in json.loads(out[out.index("[\n"):])}
    for user, categories in cats.items():
        assert totals[user] == report[user]["n"] == sum(c != 5 for c in categories), (user, totals, out)


def test_an_unknown_llm_backend_is_refused_even_with_recall_only(cli_env, chat_file):
    """`ask --recall-only` replaced any --llm by "none", so `--llm foo` passed unnoticed."""
    db = str(cli_env / "t.duckdb")
    assert run("ingest", str(chat_file), "--format", "jsonl", "--llm", "none", "--db", db)[0] == 0
    assert run("ask", "What is my dog called?", "--user", "zoe", "--db", db, "--recall-only")[0] == 0
    for args in (["ask", "What is my dog called?", "--user", "zoe", "--recall-only"], ["consolidate"],
                 ["ingest", str(chat_file), "--format", "jsonl"]):
        out = _usage_error(*args, "--db", db, "--llm", "foo")  # exit code 2: a usage error, as docs/cli.md says
        assert "unknown --llm 'foo'; use one of local, openai, none" in out, (args, out)


def test_export_json_and_jsonl_that_imports_back(cli_env, chat_file):
    """`timem export`: the README's promise that an exported JSONL can be read back, at each speaker's offset."""
    db, again = str(cli_env / "t.duckdb"), str(cli_env / "again.duckdb")
    assert run("ingest", str(chat_file), "--format", "jsonl", "--llm", "none", "--db", db)[0] == 0
    code, out = run("export", "--user", "zoe", "--db", db)
    assert code == 0 and json.loads(out)["user_id"] == "zoe" and json.loads(out)["turns"], out
    path = cli_env / "zoe.jsonl"
    code, out = run("export", "--user", "zoe", "--format", "jsonl", "--out", str(path), "--db", db)
    assert code == 0 and f"wrote {len(TURNS)} turn(s)" in out, out
    assert run("ingest", str(path), "--format", "jsonl", "--llm", "none", "--db", again)[0] == 0
    from timem.store import Store

    a, b = (Store(p, "sentence-transformers/all-MiniLM-L6-v2", 384) for p in (db, again))
    try:
        assert [(t.id, t.text, t.event_time) for t in a.turns("zoe")] == \
            [(t.id, t.text, t.event_time) for t in b.turns("zoe")]
    finally:
        a.close()
        b.close()
    assert run("export", "--user", "nobody", "--db", db)[0] == 1
    for bad in (cli_env / "missing" / "x.json", cli_env):  # a usage error (exit code 2), not a traceback
        out = _usage_error("export", "--user", "zoe", "--out", str(bad), "--db", db)
        assert "give a file path in an existing folder" in out, out
    for level in ("9", "0", "-1"):  # a usage error (exit code 2) with the valid range
        out = _usage_error("tree", "--user", "zoe", "--level", level, "--db", db)
        assert f"--level {level} is not a level of the tree; use 1 to 5" in out, out
    code, out = run("tree", "--user", "zoe", "--level", "5", "--db", db)
    assert code == 0 and "L5" in out and "L1" not in out, out


def test_progress_piped_to_a_file_is_plain_lines_not_one_long_redrawn_line(cli_env, chat_file):
    """A trial piped `timem ingest` into a log: the bars' carriage-return redraws ran into one long line. Off a
    terminal the stages now write plain lines (``desc: n/total, done``), and no carriage return."""
    res = subprocess.run([sys.executable, "-m", "timem.cli", "ingest", str(chat_file), "--format", "jsonl", "--llm",
                          "none", "--db", str(cli_env / "t.duckdb")], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert res.returncode == 0 and "4 new turns" in res.stdout, (res.stdout, res.stderr)
    assert "\r" not in res.stderr, res.stderr
    done = [line for line in res.stderr.splitlines() if line.endswith(", done")]
    assert done and all(": " in line and "/" in line for line in done), res.stderr
    assert "zoe · L1 segments, by session: 2/2, done" in done and " items" not in res.stderr, res.stderr


def test_consolidate_of_one_user_names_the_user_in_its_progress_lines(cli_env, chat_file):
    """A new-user trial: `timem consolidate --user zoe` wrote its stages unnamed ("L2 session: 2/2, done") while
    docs/cli.md says every stage names its user, as ingest's do."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    db = str(cli_env / "t.duckdb")
    res = subprocess.run([sys.executable, "-m", "timem.cli", "ingest", str(chat_file), "--format", "jsonl", "--llm",
                          "none", "--l1-only", "--db", db], capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr
    res = subprocess.run([sys.executable, "-m", "timem.cli", "consolidate", "--user", "zoe", "--flush", "--llm",
                          "none", "--mode", "extractive", "--db", db], capture_output=True, text=True, timeout=300,
                         env=env)
    assert res.returncode == 0, res.stderr
    done = [line for line in res.stderr.splitlines() if line.endswith(", done")]
    assert done and all(line.startswith("zoe · ") for line in done), res.stderr


def test_an_out_of_range_tree_level_is_one_error_line_from_the_entry_point(cli_env):
    """The ``timem`` entry point itself, in a subprocess: stderr is the one line, no box, exit code 2 (a usage error,
    as docs/cli.md says of the command line's mistakes; it was 1)."""
    res = subprocess.run([sys.executable, "-m", "timem.cli", "tree", "--user", "zoe", "--level", "9",
                          "--db", str(cli_env / "none.duckdb")], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert res.returncode == 2 and res.stdout == "", (res.returncode, res.stdout, res.stderr)
    assert res.stderr.splitlines() == ["error: --level 9 is not a level of the tree; use 1 to 5 (1 segments, "
                                       "2 sessions, 3 days, 4 weeks, 5 months), or omit it for every level (see "
                                       "'python -m timem.cli tree --help')"], res.stderr


def test_the_command_lines_own_errors_are_one_error_line_from_the_entry_point(cli_env):
    """A value that is not a number, an unknown option or command, a missing argument or option (click's usage
    errors) were typer's boxed panel, or 3 lines; now one ``error:`` line naming the --help to read, exit code 2."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    db = str(cli_env / "none.duckdb")
    cases = {("tree", "--user", "zoe", "--level", "x", "--db", db): "Invalid value for '--level'",
             ("tree", "--user", "zoe", "--levl", "3", "--db", db): "No such option: --levl",
             ("frobnicate",): "No such command 'frobnicate'",
             ("ask",): "Missing argument 'question'",
             ("tree", "--db", db): "Missing option '--user'",
             ("ingest", "f.jsonl", "--format", "csv"): "'csv' is not one of 'locomo', 'longmemeval', 'jsonl'",
             ("ask", "q", "--user", "zoe", "--db", db, "--set", "token_budget=0"):
                 "--set KEY=VALUE got 'token_budget=0': token_budget takes an integer",
             ("ask", "q", "--user", "zoe", "--db", db, "--llm", "foo"):
                 "unknown --llm 'foo'; use one of local, openai, none",
             ("ask", "q", "--user", "zoe", "--db", db, "--complexity", "hard"):
                 "unknown --complexity 'hard'; use one of simple, hybrid, complex",
             ("ask", "q", "--user", "zoe", "--db", db, "--gate", "maybe"):
                 "unknown --gate 'maybe'; use one of llm, score, off"}
    for args, said in cases.items():
        res = subprocess.run([sys.executable, "-m", "timem.cli", *args], capture_output=True, text=True, timeout=120,
                             env=env)
        lines = res.stderr.splitlines()
        assert res.returncode == 2 and res.stdout == "" and len(lines) == 1, (args, res.returncode, res.stderr)
        assert lines[0].startswith("error: ") and said in lines[0] and "Value error" not in lines[0], lines
        assert "--help" in lines[0] and "│" not in lines[0], lines
    assert not (cli_env / "none.duckdb").exists()


def test_l1_only_ingest_makes_no_llm_call(cli_env, chat_file):
    server = FakeServer()  # answers 500 to anything: a call would fail the ingest
    try:
        cli_env.joinpath("timem.toml").write_text(
            f'llm_backend = "openai"\nopenai_base_url = "{server.url}"\nopenai_api_key = "k"\n')
        code, out = run("ingest", str(chat_file), "--format", "jsonl", "--db", str(cli_env / "t.duckdb"),
                        "--l1-only")
    finally:
        server.close()
    assert code == 0 and "new nodes {'L1': 4}" in out and server.requests == [], out  # one L1 per turn, L1 only


def test_an_empty_sample_list_is_refused(cli_env, chat_file):
    out = _usage_error("ingest", str(chat_file), "--format", "jsonl", "--llm", "none", "--sample", " , ",
                       "--db", str(cli_env / "s.duckdb"))
    assert "names no conversation" in out, out  # a usage error, exit code 2


def test_segtree_build(cli_env, chat_file):
    db = str(cli_env / "t.duckdb")
    assert run("ingest", str(chat_file), "--format", "jsonl", "--llm", "none", "--db", db)[0] == 0
    code, out = run("segtree", "build", "--user", "zoe", "--db", db)
    assert code == 0 and "zoe: extended, 0 utterance(s) added" in out, out  # built online by the ingest
    code, out = run("segtree", "build", "--user", "zoe", "--rebuild", "--db", db)
    assert code == 0 and "zoe: rebuilt, 4 utterance(s) added" in out, out
    code, out = run("segtree", "build", "--user", "nobody", "--db", db)
    assert code == 1 and "no user 'nobody'" in out, out


def test_unrepresentable_event_times_and_reserved_user_ids_write_nothing(cli_env):
    """A year-9999 timestamp used to crash in the calendar windows after L1/L2 were written; a user id with
    '/' would have been readable by the memory service's tenant of that name."""
    db = str(cli_env / "y.duckdb")
    for user, ts, needle in (("zoe", "9999-12-31T23:59:00+00:00", "outside the years"),
                             ("acme/eve", "2024-05-01T10:00:00", "reserved for the memory service")):
        f = cli_env / f"{user.replace('/', '_')}.jsonl"
        f.write_text(json.dumps({"user_id": user, "session_id": "s1", "role": "user", "text": "My PIN is 4711.",
                                 "timestamp": ts}) + "\n")
        code, out = run("ingest", str(f), "--format", "jsonl", "--llm", "none", "--db", db)
        assert code == 1 and needle in out and "Traceback" not in out, out
        if user == "acme/eve":  # named where it is, as every other import error (a new-user trial: it was not)
            assert f"(file {f}, record line 1, field 'user_id')" in out, out
    code, out = run("consolidate", "--user", "ghost", "--db", db, "--llm", "none")
    assert code == 1 and "no user 'ghost'" in out, out


def test_mcp_refuses_a_user_id_with_a_slash_before_opening_anything(cli_env):
    """'/' separates a service tenant from its user; `timem mcp --user a/b` created such a user in a local file."""
    db = cli_env / "m.duckdb"
    code, out = run("mcp", "--user", "acme/bob", "--db", str(db))
    assert code == 1 and "reserved for the memory service" in out and not db.exists(), out



def test_studio_takes_a_config_file_checked_before_it_starts(cli_env, monkeypatch):
    """`timem studio --config FILE` was "No such option"; the studio reads the file through TIMEM_CONFIG."""
    import os

    seen: dict = {}
    monkeypatch.setattr(os, "execve", lambda exe, args, env: seen.update(args=args, env=env))
    good = cli_env / "good.toml"
    good.write_text('[recall]\ntoken_budget = 400\n')
    code, out = run("studio", "--config", str(good))
    assert code == 0 and seen["env"]["TIMEM_CONFIG"] == str(good.resolve()), out
    # a new-user trial saw "Collecting usage statistics" when the studio started outside the checkout
    stats = seen["args"].index("--browser.gatherUsageStats")
    assert seen["args"][stats + 1] == "false", seen["args"]
    seen.clear()
    bad = cli_env / "bad.toml"
    bad.write_text('[llm]\ntoken_budget = 400\n')
    code, out = run("studio", "--config", str(bad))
    assert code == 1 and "token_budget belongs in [recall]" in out and not seen, out


def test_serve_warns_of_a_new_database_and_its_key_hint_names_the_keys_file(cli_env, monkeypatch):
    """A new-user trial: `timem serve --keys /elsewhere/keys.json` advised `timem keys add TENANT --db …` without
    `--keys`, so following it wrote the key to another file; and a mistyped `--db` started on a new empty file
    without a word."""
    import uvicorn

    served = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(kw))
    db, keys = cli_env / "typo.duckdb", cli_env / "elsewhere" / "keys.json"
    port = ["--port", str(free_port())]  # serve checks that its port is free (8600 may be taken on this machine)
    code, out = run("serve", "--db", str(db), "--keys", str(keys), "--llm", "none", *port)
    assert code == 0 and served, out
    assert f"--keys {keys}" in out and f"{db} did not exist" in out
    code, out = run("serve", "--db", str(db), "--llm", "none", *port)  # the file exists now; the default keys file
    assert "did not exist" not in out and "--keys" not in out


def test_duckdb_out_of_memory_is_one_line_naming_the_setting(monkeypatch, capsys, tmp_path):
    """A trial: ``TIMEM_DUCKDB_MEMORY_MB=1 timem stats`` printed a full traceback ending in DuckDB's advice to ``SET
    memory_limit``. The entry point says which TiMem setting to raise, in one line, exit code 1; a limit below 64 MiB
    is refused by the settings."""
    import duckdb

    from timem import cli
    from timem.config import Config

    def exhausted(*args, **kwargs):
        raise duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block of size 256.0 KiB\n"
                                          "Possible solutions: SET memory_limit='...GB'")

    monkeypatch.setattr(cli, "app", exhausted)
    monkeypatch.setattr(cli, "_mount_bench", lambda: None)
    monkeypatch.setattr(sys, "argv", ["timem", "stats"])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    err = capsys.readouterr().err
    assert stop.value.code == 1 and err.count("\n") == 1, err
    assert err.startswith("error: DuckDB ran out of memory") and "TIMEM_DUCKDB_MEMORY_MB" in err
    assert "could not allocate" in err and "SET memory_limit" not in err
    for bad in (0.5, 32, float("inf"), float("nan"), 1e30, 2**24 + 1):
        with pytest.raises(ValueError):
            Config(duckdb_memory_mb=bad)
    for env in ("inf", "1e30"):  # a typing slip in the env var: one line naming the setting, no traceback
        proc = subprocess.run([sys.executable, "-m", "timem", "stats", "--db", str(tmp_path / "x.duckdb")],
                              env={**os.environ, "TIMEM_DUCKDB_MEMORY_MB": env}, capture_output=True, text=True)
        err = proc.stderr
        assert proc.returncode != 0 and "duckdb_memory_mb" in err and "Traceback" not in err, err


def test_ask_loads_the_embedder_before_the_recall_it_times(cli_env, chat_file, monkeypatch):
    """A new-user trial: the first ``timem ask`` of a process showed plan 4-5 s in its trace, the embedder's load.
    The command now warms the recall up first, so the trace times the recall alone."""
    from timem.engine import MemoryEngine

    db = str(cli_env / "t.duckdb")
    assert run("ingest", str(chat_file), "--format", "jsonl", "--llm", "none", "--db", db)[0] == 0
    calls: list[str] = []
    warm, recall = MemoryEngine.warm_recall, MemoryEngine.recall
    monkeypatch.setattr(MemoryEngine, "warm_recall", lambda self: (calls.append("warm"), warm(self))[1])
    monkeypatch.setattr(MemoryEngine, "recall",
                        lambda self, *a, **kw: (calls.append("recall"), recall(self, *a, **kw))[1])
    code, out = run("ask", "What is the name of my dog?", "--user", "zoe", "--db", db, "--recall-only")
    assert code == 0 and "Rex" in out, out
    assert calls == ["warm", "recall"]


def test_ask_and_the_other_commands_take_set_like_bench(cli_env, chat_file):
    """A new-user trial: `timem ask "…" --set token_budget=200` was "No such option: --set", though `timem bench` takes
    it and the docs show it; the same parser (and its messages) now serves ask, eval-recall, ingest, consolidate,
    serve."""
    db = str(cli_env / "t.duckdb")
    code, out = run("ingest", str(chat_file), "--format", "jsonl", "--llm", "none", "--db", db,
                    "--set", "consolidation_mode=extractive")
    assert code == 0, out
    q = ("ask", "What is the name of my dog?", "--user", "zoe", "--db", db, "--recall-only", "--json")
    code, out = run(*q, "--set", "token_budget=200", "--set", "gate=off")
    assert code == 0, out
    assert json.loads(out)["trace"]["settings"]["token_budget"] == 200, out
    code, out = run(*q, "--set", "nope=1")  # a --set mistake: a usage error (below), not a TiMem error
    assert code == 2, out


def _usage_error(*args: str, of: typer.Typer = app) -> str:
    """The one message of a usage error (exit code 2) that typer's runner draws in a box, as one line."""
    res = CliRunner().invoke(of, list(args), terminal_width=400)
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit), (res.exit_code, res.output)
    return " ".join(res.output.replace("│", " ").replace("╭", " ").replace("╰", " ").replace("─", " ").split())


@pytest.mark.parametrize(("pair", "said"), [
    ("nope=1", "--set KEY=VALUE got 'nope=1': 'nope' is not a setting name; KEY is a setting's plain name, e.g. "
               "token_budget (every one in docs/configuration.md)"),
    ("token_budgt=3", "'token_budgt' is not a setting name (did you mean token_budget?)"),
    ("token_budget", "--set KEY=VALUE got 'token_budget', which has no '='; write the setting's name, '=' and its "
                     "value, e.g. --set token_budget=500"),
    ("token_budget=abc", "--set KEY=VALUE got 'token_budget=abc': token_budget takes an integer: Input should be a "
                         "valid integer"),
    ("token_budget=0", "--set KEY=VALUE got 'token_budget=0': token_budget takes an integer: Input should be greater "
                       "than or equal to 1 (docs/configuration.md)"),
    ("gate=maybe", "--set KEY=VALUE got 'gate=maybe': gate takes one of llm, score, off"),
    ("timezone=Mars/Base", "timezone takes text: unknown time zone 'Mars/Base'; use an IANA name"),
])
@pytest.mark.parametrize("command", [
    ("ask", "Where do I work?", "--user", "zoe"), ("eval-recall", "x.json"), ("ingest", "x.jsonl", "--format", "jsonl"),
    ("consolidate",), ("serve",), ("bench", "locomo", "x.json")])
def test_a_set_mistake_is_a_usage_error_naming_set(cli_env, command, pair, said):
    """A second trial: a --set mistake exited 1 (a TiMem error) though the docs say the command line's own mistakes
    exit 2, and a bad value's message was the setting's ("recall.token_budget: ...") without naming --set. Every one
    is now a usage error as the command line is parsed (nothing is opened or read), naming --set KEY=VALUE and what
    to give instead."""
    from timem.bench.cli import bench_app

    of, args = (bench_app, command[1:]) if command[0] == "bench" else (app, command)
    out = _usage_error(*args, "--db", str(cli_env / "t.duckdb"), "--set", "token_budget=300", "--set", pair, of=of)
    assert said in out and "Value error" not in out, out
    assert not (cli_env / "t.duckdb").exists()


def test_a_set_of_what_a_flag_gives_is_a_usage_error(cli_env):
    """``--set db_path=...`` with ``--db``, ``--set llm_backend=...`` with ``--llm`` (``timem bench`` gave a TypeError
    traceback for the latter, even without ``--llm``)."""
    db = str(cli_env / "t.duckdb")
    out = _usage_error("ask", "q", "--user", "zoe", "--db", db, "--set", f"db_path={db}")
    assert "--set KEY=VALUE sets db_path, and so does a flag of the command; give only one" in out, out
    from timem.bench.cli import bench_app

    res = CliRunner().invoke(bench_app, ["locomo", "x.json", "--llm", "none", "--set", "llm_backend=none"],
                             terminal_width=400)
    assert res.exit_code == 2 and "--set KEY=VALUE sets llm_backend" in res.output, res.output


def test_a_set_of_a_setting_with_a_flag_holds_when_the_flag_is_not_given(cli_env):
    """`--set consolidation_mode=hybrid` without `--mode`, `--set db_path=...` without `--db`, and `timem bench ...
    --set llm_backend=none` without `--llm` were dropped: the flag's ``None`` (not given) replaced the --set value
    before the settings were built (bench raised a TypeError instead)."""
    from timem.cli_common import _config
    from timem.cli_options import with_flags

    cfg = _config(None, None, {"consolidation_mode": "hybrid", "db_path": "x.duckdb"}, llm_backend=None,
                  consolidation_mode=None)
    assert cfg.consolidation.consolidation_mode == "hybrid" and str(cfg.store.db_path) == "x.duckdb"
    assert with_flags({"llm_backend": "none"}, {"llm_backend": None}) == {"llm_backend": "none"}
    assert with_flags({}, {"llm_backend": "local"}) == {"llm_backend": "local"}


def test_set_reads_a_number_as_text_for_a_text_setting():
    """``--set openai_api_key=12345`` was refused ("Input should be a valid string": 12345 read as JSON)."""
    from timem.cli_options import SetOptionError, setting_overrides
    from timem.errors import ConfigError

    assert setting_overrides(["openai_api_key=12345", "token_budget=500"]) == {"openai_api_key": "12345",
                                                                               "token_budget": 500}
    with pytest.raises(ConfigError, match="--set KEY=VALUE"):  # a TiMem error too, for code that calls it
        setting_overrides(["token_budget=-5"])
    assert issubclass(SetOptionError, ConfigError)


@pytest.mark.parametrize("args", [[], ["forget"], ["ask"], ["ingest"], ["keys", "add"]])
def test_help_shows_flags_as_flags_without_a_value_type(args):
    """A new-user trial: help read `--yes <bool>` / `--trace <bool>` (typer 0.29's rich help types every option), and
    `--yes true` is refused: a flag takes no value. Options that take one keep their type."""
    res = CliRunner().invoke(app, [*args, "--help"], terminal_width=100)
    assert res.exit_code == 0, res.output
    assert "<bool>" not in res.output and "--help" in res.output, res.output
    if args == ["forget"]:
        assert "--yes" in res.output and "<path>" in res.output and "<str>" in res.output, res.output
    if args == ["ask"]:  # not "<list[str]>"
        assert "KEY=VALUE" in res.output and "list[str]" not in res.output, res.output


def test_forget_help_reads_its_sentences_whole():
    """A new-user trial: `timem forget --help` broke a sentence after "with no answer" (the docstring's line break:
    typer 0.29's rich help keeps the line breaks of every paragraph but the first)."""
    res = CliRunner().invoke(app, ["forget", "--help"], env={"COLUMNS": "250"})  # rich reads COLUMNS
    assert res.exit_code == 0, res.output
    assert ("When nothing matches, the error says why and what to try (exit code 1). As `timem erase`, it asks only at "
            "a terminal: with stdin not a terminal (a script, a pipe, </dev/null) and no --yes it is a usage error "
            "(exit code 2) and nothing is forgotten.") in res.output, res.output


def _commands(group, path=()):
    """Every command of a click group (typer's), with its path, groups included. A group is told by its ``commands``:
    typer carries its own copy of click, so ``isinstance(cmd, click.Group)`` was never true and the subcommands of
    ``keys``, ``memories`` and ``segtree`` were left out."""
    for name, cmd in sorted(group.commands.items()):
        yield (*path, name), cmd
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, (*path, name))


def test_every_help_wraps_its_paragraphs_and_shows_no_python_types():
    """Every command's help (bench's included): each paragraph is one line (the terminal wraps it), no rST ``double
    backticks`` from a docstring, and no Python type (`<bool>`, `<list[str]>`) in the type column."""
    import typer.main

    from timem.bench.cli import bench_app

    root = typer.main.get_command(app)
    bench = typer.main.get_command(bench_app)
    for path, cmd in [*_commands(root), *((("bench", *p), c) for p, c in _commands(bench))]:
        for para in (cmd.help or "").split("\n\n"):
            assert "\n" not in para.strip(), (path, para)
        runner_app = bench_app if path[0] == "bench" else app
        res = CliRunner().invoke(runner_app, [*path[path[0] == "bench":], "--help"], env={"COLUMNS": "250"})
        assert res.exit_code == 0, (path, res.output)
        for fault in ("``", "<bool>", "<list[", "<int range>"):
            assert fault not in res.output, (path, fault, res.output)


@pytest.mark.parametrize(("args", "said"), [
    (("ask", "q", "--user", "zoe", "--complexity", "hard"),
     "unknown --complexity 'hard'; use one of simple, hybrid, complex, or omit it for the planner to decide"),
    (("ask", "q", "--user", "zoe", "--gate", "maybe"),
     "unknown --gate 'maybe'; use one of llm, score, off, or omit it for the gate setting"),
    (("ask", "q", "--user", "zoe", "--llm", "gpt"), "unknown --llm 'gpt'; use one of local, openai, none"),
    (("ask", "q", "--user", "zoe", "--at", "tomorrowish"), "cannot read --at 'tomorrowish' as a date and time"),
    (("eval-recall", "x.json", "--complexity", "hard"), "unknown --complexity 'hard'; use one of simple, hybrid"),
    (("eval-recall", "x.json", "--gate", "maybe"), "unknown --gate 'maybe'; use one of llm, score, off"),
    (("eval-recall", "x.json", "--sample", " , "), "--sample ' , ' names no conversation"),
    (("ingest", "x.jsonl", "--format", "jsonl", "--mode", "summary"),
     "unknown --mode 'summary'; use one of extractive, hybrid, abstractive"),
    (("ingest", "x.jsonl", "--format", "jsonl", "--l1-mode", "raw"),
     "unknown --l1-mode 'raw'; use one of verbatim, llm"),
    (("ingest", "x.jsonl", "--format", "jsonl", "--ray", "local", "--no-flush"),
     "--ray ingests new users as the file holds them; leave out --update-changed and --no-flush"),
    (("consolidate", "--mode", "summary"), "unknown --mode 'summary'; use one of extractive, hybrid, abstractive"),
    (("tree", "--user", "zoe", "--level", "6"), "--level 6 is not a level of the tree; use 1 to 5"),
    (("export", "--user", "zoe", "--format", "jsonl"), "--format jsonl writes a file; pass --out PATH"),
    (("segtree", "summarise", "--user", "zoe", "--llm", "gpt"), "unknown --llm 'gpt'"),
    (("serve", "--llm", "gpt"), "unknown --llm 'gpt'"),
])
def test_a_bad_option_value_is_a_usage_error_naming_the_flag_and_its_values(cli_env, args, said):
    """A trial: --llm, --complexity, --gate, --level (and --mode, --l1-mode, --at, --sample, and flags that need
    another) were checked after parsing and exited 1, a TiMem error, though docs/cli.md says a command-line mistake
    exits 2. Each is now a usage error naming the flag and what it takes, before any file is opened or written."""
    out = _usage_error(*args, "--db", str(cli_env / "t.duckdb"))
    assert said in out and "Invalid value" not in out, out
    assert not (cli_env / "t.duckdb").exists()


def test_studio_with_both_service_and_db_is_a_usage_error(cli_env):
    """`timem studio --service URL --db FILE` exited 1; two flags that exclude each other are a usage error."""
    from timem.cli_options import OptionValueError
    from timem.cli_service import studio_service_env

    with pytest.raises(OptionValueError, match="give --service URL or --db FILE, not both") as caught:
        studio_service_env("http://127.0.0.1:9", "k", cli_env / "t.duckdb", {})
    assert caught.value.exit_code == 2


def _leaf_commands(command, path=("timem",)):
    """Every leaf command under a group, with its path, the groups' subcommands included (typer carries its own copy
    of click, so a group is told by its ``commands``, not by ``isinstance(cmd, click.Group)``)."""
    subs = getattr(command, "commands", None)
    if subs is None:
        yield " ".join(path), command
        return
    for name, sub in subs.items():
        yield from _leaf_commands(sub, (*path, name))


def test_every_option_and_argument_of_every_command_has_a_help():
    """`timem ask --help` showed QUESTION, the FILE arguments, --json, --host/--port, `keys add TENANT`,
    `bench suite --limit` with no word on what they are; every option and argument now says what it is."""
    from timem.bench.cli import bench_app

    root = typer.main.get_command(app)
    commands = [*_leaf_commands(root), *_leaf_commands(typer.main.get_command(bench_app), ("timem", "bench"))]
    assert {"timem keys add", "timem memories pin", "timem bench suite"} <= {c for c, _ in commands}
    assert len(commands) > 25, [c for c, _ in commands]
    missing = [f"{path} {param.human_readable_name}" for path, command in commands for param in command.params
               if param.name != "help" and not (getattr(param, "help", None) or "").strip()]
    assert missing == [], missing
    for path in ("ask", "keys add", "bench suite", "serve"):  # the help draws them (typer's rich help, as users see it)
        res = CliRunner().invoke(app if not path.startswith("bench") else bench_app,
                                 [*path.split()[1 if path.startswith("bench") else 0:], "--help"], terminal_width=200)
        assert res.exit_code == 0, res.output
        flat = " ".join(res.output.split())
        for said in {"ask": ("the question to answer",), "keys add": ("the tenant the key belongs to",),
                     "bench suite": ("LongMemEval: the first N instances",),
                     "serve": ("address to listen on", "TCP port to listen on")}[path]:
            assert said in flat, (path, res.output)


@pytest.mark.parametrize(("command", "port"), [("serve", "99999"), ("serve", "-1"), ("serve", "0"),
                                                ("studio", "70000")])
def test_a_port_outside_1_to_65535_is_a_usage_error(cli_env, command, port):
    """A trial: `timem serve --port 99999` printed "Uvicorn running on http://127.0.0.1:99999" and listened on 34463
    (99999 mod 65536); --port -1 started, then logged an error. A port must be 1-65535, checked before anything."""
    out = _usage_error(command, "--port", port, "--db", str(cli_env / "t.duckdb"))
    assert "--port" in out and ("less than or equal to 65535" in out or "greater than or equal to 1" in out), out
    assert not (cli_env / "t.duckdb").exists()
