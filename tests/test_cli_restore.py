"""A new-user trial: `timem forget` says it can be undone, but no `timem` command undid it (only the studio's Restore
button and the service's restore route). `timem restore ID… --user U` now does, through the engine's
:meth:`~timem.engine.MemoryEngine.restore_memories`: the segment is active again, the facts that went only with it
come back (those forgotten by name stay forgotten, and it says so), and an id that is unknown or not forgotten is
one error line (exit code 1) that restores nothing. Real CLI entry, real DuckDB file, real embedder."""

from __future__ import annotations

import json
import re

import pytest
from test_cli import cli_env, run  # noqa: F401  (fixture)

TURNS = [
    ("s1", "user", "I adopted a rescue dog called Rex yesterday. I live in Porto.", "2024-05-02T09:00:00"),
    ("s1", "assistant", "Congratulations on adopting Rex!", "2024-05-02T09:00:30"),
    ("s2", "user", "Rex and I ran 5 km along the river this morning.", "2024-05-09T07:30:00"),
]


@pytest.fixture()
def db(cli_env):  # noqa: F811
    chat = cli_env / "chat.jsonl"
    chat.write_text("".join(json.dumps({"user_id": "zoe", "session_id": s, "role": r, "text": t, "timestamp": ts})
                            + "\n" for s, r, t, ts in TURNS))
    path = str(cli_env / "t.duckdb")
    assert run("ingest", str(chat), "--format", "jsonl", "--llm", "none", "--mode", "extractive", "--db", path)[0] == 0
    return path


def _forget(db: str, text: str) -> list[str]:
    code, out = run("forget", text, "--user", "zoe", "--db", db, "--yes")
    assert code == 0, out
    assert "`timem restore ID --user zoe`" in out.strip().splitlines()[-1], out  # the hint names the command
    return re.findall(r"^segment (L1-[0-9a-f]+)", out, flags=re.M)


def _active_segments(db: str) -> str:
    code, out = run("tree", "--user", "zoe", "--db", db, "--level", "1")
    assert code == 0, out
    return out


def test_forget_then_restore_brings_the_segment_and_its_facts_back(db):
    segs = _forget(db, "rescue dog")  # the dog line (Porto goes with it, said in the same message) and the reply
    assert len(segs) == 2 and not any(s in _active_segments(db) for s in segs)
    assert "Porto" not in run("memories", "list", "--user", "zoe", "--db", db)[1]

    code, out = run("restore", *segs, "--user", "zoe", "--db", db)
    assert code == 0, out
    assert f"segment {segs[0]}: " in out and "I adopted a rescue dog called Rex" in out, out
    assert re.search(r"back with it: item item-[0-9a-f]+: zoe's home city: Porto", out), out
    assert out.strip().splitlines()[-1] == "restored 2 segment(s) and 1 item(s) (audited)", out
    assert all(s in _active_segments(db) for s in segs)
    code, out = run("memories", "list", "--user", "zoe", "--db", db)
    assert code == 0 and "home city: Porto" in out and "[forgotten]" not in out, out
    code, out = run("check", "--db", db)
    assert code == 0 and out.startswith("ok"), out


def test_a_fact_forgotten_by_name_stays_forgotten_and_restore_says_so(db):
    segs = _forget(db, "I live in Porto")
    code, out = run("restore", segs[0], "--user", "zoe", "--db", db)
    assert code == 0 and segs[0] in _active_segments(db), out
    assert "stays forgotten (forgotten by name): item" in out and "home city: Porto" in out, out
    assert out.strip().splitlines()[-1] == "restored 1 segment(s) and 0 item(s) (audited)", out
    assert "Porto" not in run("memories", "list", "--user", "zoe", "--db", db)[1]


def test_an_unknown_or_active_id_is_an_error_and_restores_nothing(db):
    segs = _forget(db, "rescue dog")
    active = re.findall(r"\[(L1-[0-9a-f]+)\]", _active_segments(db))[0]
    for bad, said in [("L1-0000000000000000", "no memory 'L1-0000000000000000' for user 'zoe'"),
                      (active, f"memory {active} of 'zoe' is active, not forgotten")]:
        code, out = run("restore", segs[0], bad, "--user", "zoe", "--db", db)  # checked before any restore
        assert code == 1 and said in out, out
        assert segs[0] not in _active_segments(db)  # the good id was not restored either
    code, out = run("restore", segs[0], "--user", "nobody", "--db", db)
    assert code == 1 and "no user 'nobody'" in out, out
    assert run("restore", *segs, "--user", "zoe", "--db", db)[0] == 0
    code, out = run("restore", segs[0], "--user", "zoe", "--db", db)  # twice: the second has nothing to undo
    assert code == 1 and "not forgotten" in out, out
