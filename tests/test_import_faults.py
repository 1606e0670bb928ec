"""Malformed values in an import: one line naming file, line and field; nothing written for any user.

The cases found by trying the product (``tests/data/cases/found-by-trying``) are tried as a user runs them (the real
``timem`` entry point in a subprocess, so a traceback would show), and the same kinds of fault on
inputs written here: lone surrogates, invisible-only text, control characters, in any string field.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import CASES
from helpers import make_turn

from timem.datasets import load_dataset, load_jsonl
from timem.datasets.base import ImportedSession, ImportedUser
from timem.errors import InputError
from timem.models import Role


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    """Logic tests: the deterministic hashing embedder instead of MiniLM (tests/conftest.py)."""
    return fake_embedder

REPO = Path(__file__).resolve().parents[1]
UTC_ZONE = __import__("zoneinfo").ZoneInfo("UTC")


def timem(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The ``timem`` console entry point (:func:`timem.cli.main`) as a user runs it."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("TIMEM_", "OPENAI_"))},
           "PYTHONPATH": str(REPO), "TIMEM_CACHE_DIR": str(cwd / "cache")}
    return subprocess.run([sys.executable, "-m", "timem.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def line(user: str, text: str, ts: str = "2024-04-01T09:00:00", **extra: str) -> str:
    return json.dumps({"user_id": user, "session_id": "s1", "speaker": user.title(), "role": "user", "text": text,
                       "timestamp": ts, **extra}) + "\n"


@pytest.mark.parametrize("case", ["c_lone_surrogate.jsonl", "c2_two_users_surrogate.jsonl",
                                  "b_zero_width.jsonl"])
def test_cases_found_by_trying_give_one_line_and_write_nothing(tmp_path, case):
    src = CASES / case
    db = tmp_path / "t.duckdb"
    res = timem("ingest", str(src), "--format", "jsonl", "--l1-only", "--llm", "none", "--db", str(db), cwd=tmp_path)
    assert res.returncode == 1, res
    assert "Traceback" not in res.stderr and "RuntimeError" not in res.stderr, res.stderr
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    want_line = "line 3" if case.startswith("c2") else "line 1"
    assert f"file {src}" in err and want_line in err and "field 'text'" in err, err
    assert not db.exists()  # the file was refused before the store was opened: nothing for any user


@pytest.mark.parametrize("text, what", [
    ("I love pizza \ud83d so much", "lone surrogate \\ud83d"),
    ("\udc00", "lone surrogate \\udc00"),
    ("\u200b\u200d\ufeff", "invisible"),
    ("\u2060 \u3164", "invisible"),
    ("bell \x07 here", "control character U+0007"),
    ("nul\x00", "control character U+0000"),
    ("esc \x1b[31m red", "control character U+001B"),
    ("c1 \x85 control", "control character U+0085"),
])
def test_every_malformed_text_names_file_line_and_field(tmp_path, text, what):
    path = tmp_path / "bad.jsonl"
    path.write_text(line("amy", "I collect postcards.") + line("bob", text, ts="2024-04-01T10:00:00"),
                    encoding="utf-8", errors="surrogatepass")
    with pytest.raises(InputError) as exc:
        load_jsonl(path, UTC_ZONE)
    msg = str(exc.value)
    assert what in msg and f"file {path}" in msg and "line 2" in msg and "field 'text'" in msg, msg
    assert "\n" not in msg and msg.encode("utf-8")  # printable on one line


@pytest.mark.parametrize("field", ["user_id", "session_id", "speaker", "source_ref", "image_caption"])
def test_other_string_fields_are_checked_too(tmp_path, field):
    rec = json.loads(line("amy", "fine text"))
    rec[field] = "x\ud83dy"
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    with pytest.raises(InputError, match=rf"line 1.*field '{field}'"):
        load_jsonl(path, UTC_ZONE)


def test_invisible_caption_is_no_caption_and_tabs_newlines_are_kept(tmp_path):
    path = tmp_path / "ok.jsonl"
    path.write_text(line("amy", "a\ttab and a\nnewline and a \u200bzero-width inside", image_caption="\u200b"))
    (user,) = load_jsonl(path, UTC_ZONE)
    (turn,) = user.turns
    assert turn.image_caption is None and "\t" in turn.text and "\n" in turn.text


def test_bytes_that_are_not_utf8_name_the_line(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(line("amy", "ok").encode() + line("amy", "cafe", ts="2024-04-01T10:00").replace(
        "cafe", "caf\u00e9").encode("latin-1"))
    with pytest.raises(InputError, match=r"not UTF-8.*line 2"):
        load_jsonl(path, UTC_ZONE)


def test_locomo_invisible_turn_is_skipped_like_an_empty_one_and_a_surrogate_is_refused(tmp_path):
    conv = {"speaker_a": "Ann", "speaker_b": "Ben", "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": [
        {"speaker": "Ann", "text": "Hello Ben, I got a kitten.", "dia_id": "D1:1"},
        {"speaker": "Ben", "text": "\u200b\u200b", "dia_id": "D1:2"},
        {"speaker": "Ben", "text": "Lovely, what is its name?", "dia_id": "D1:3"}]}
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{"sample_id": "conv-x", "conversation": conv}]))
    (user,) = load_dataset(path, "locomo", tz=UTC_ZONE)
    assert [t.source_ref for t in user.turns] == ["D1:1", "D1:3"]
    assert user.meta["skipped_empty_turns"] == 1
    conv["session_1"][2]["text"] = "Lovely \ud83d"
    path.write_text(json.dumps([{"sample_id": "conv-x", "conversation": conv}]))
    with pytest.raises(InputError, match=r"lone surrogate.*conv-x/session_1\[2\].*field 'text'"):
        load_dataset(path, "locomo", tz=UTC_ZONE)


def test_engine_ingest_is_all_or_nothing_across_users(store, embedder):
    """Turns built by API callers (not an importer) are checked too, before any user is written."""
    from timem.config import load_config
    from timem.engine import MemoryEngine

    at = datetime(2024, 4, 1, 9, tzinfo=UTC)

    def user(uid: str, text: str) -> ImportedUser:
        turns = [make_turn(uid, "s1", 0, uid, text, at, Role.USER), make_turn(uid, "s1", 1, "Assistant", "Ok.", at)]
        return ImportedUser(user_id=uid, participants=[uid], sessions=[
            ImportedSession(session_id="s1", turns=turns, date_label="x")])

    eng = MemoryEngine(load_config(env={}, db_path=store.path), store, embedder, None)
    for bad in ("pizza \ud83d", "\u200b", "a\x00b"):
        with pytest.raises(InputError, match=r"record turn zed:s1:0, field 'text'"):
            eng.ingest([user("amy", "I collect postcards."), user("zed", bad)], upper_levels=False)
        assert store.users() == [] and store.nodes() == []
    with pytest.raises(InputError, match="empty"):
        eng.add_exchange("amy", "chat", "\u200b\u200b", "Hm?", at)
    assert store.users() == []


_DEEP = "[" * 5000 + "]" * 5000


def _amy_store(tmp_path):
    """A store with one of amy's turns, ingested through the CLI; returns its path and its bytes."""
    db = tmp_path / "t.duckdb"
    good = tmp_path / "good.jsonl"
    good.write_text(line("amy", "I collect postcards."))
    assert timem("ingest", str(good), "--format", "jsonl", "--l1-only", "--llm", "none", "--db", str(db),
                 cwd=tmp_path).returncode == 0
    return db, db.read_bytes()


@pytest.mark.parametrize("case, bad, what", [
    ("nested line", _DEEP + "\n", "nested too deeply"),
    ("nested field", line("bob", "x").replace('"x"', _DEEP), "nested too deeply"),
    ("nested ignored key", line("bob", "fine", extra="X").replace('"X"', _DEEP), "nested too deeply"),
    ("year 9999, negative offset", line("bob", "late", ts="9999-12-31T23:00:00-05:00"), "outside the years"),
    ("year 0001, positive offset", line("bob", "early", ts="0001-01-01T01:00:00+05:00"), "outside the years"),
    ("year 9999 in UTC", line("bob", "late", ts="9999-06-01T10:00:00Z"), "outside the years"),
])
def test_deep_json_and_overflowing_times_are_one_line_through_the_cli(tmp_path, case, bad, what):
    """Each gave a RecursionError or OverflowError traceback; now one line naming file and line, store unchanged."""
    db, before = _amy_store(tmp_path)
    src = tmp_path / "bad.jsonl"
    src.write_text(line("amy", "Another postcard.", ts="2024-04-01T10:00:00") + bad)
    res = timem("ingest", str(src), "--format", "jsonl", "--l1-only", "--llm", "none", "--db", str(db), cwd=tmp_path)
    assert res.returncode == 1, res
    assert "Traceback" not in res.stderr and "Error:" not in res.stderr, res.stderr
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert what in err and f"file {src}" in err and "line 2" in err, err
    assert db.read_bytes() == before


def test_deep_json_in_a_locomo_file_is_one_line(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text('[{"sample_id": "conv-x", "conversation": ' + _DEEP + "}]")
    with pytest.raises(InputError, match=rf"nested too deeply.*file {path}"):
        load_dataset(path, "locomo", tz=UTC_ZONE)


def test_ask_with_bytes_that_are_not_utf8_is_one_line(tmp_path):
    """A question typed in Latin-1 reaches Python as lone surrogates (surrogateescape): it was a TypeError traceback
    from the tokenizer; now one line naming the argument and the byte, before anything is opened."""
    db, before = _amy_store(tmp_path)
    res = timem("ask", b"What do I caf\xe9 collect?", "--user", "amy", "--recall-only", "--db", str(db), cwd=tmp_path)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and "not UTF-8" in err and "0xe9" in err, err
    assert db.read_bytes() == before  # no trace stored


def test_a_byte_order_mark_is_read_as_the_service_reads_it(tmp_path):
    """A new-user trial: a JSONL file saved with a UTF-8 byte-order mark was refused ("Unexpected UTF-8 BOM (decode
    using utf-8-sig)") while the service accepts such a body. A mark before the first line is now allowed; one
    anywhere else is still an error of that line."""
    row = {"user_id": "mia", "session_id": "s1", "speaker": "Mia", "role": "user", "text": "I live in Lisbon.",
           "timestamp": "2024-04-02T08:15:00"}
    f = tmp_path / "bom.jsonl"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps(row).encode() + b"\n")
    (user,) = load_jsonl(f, UTC_ZONE)
    assert user.sessions[0].turns[0].text == "I live in Lisbon."
    f.write_bytes(json.dumps(row).encode() + b"\n\xef\xbb\xbf" + json.dumps(row).encode() + b"\n")
    with pytest.raises(InputError, match="line 2"):
        load_jsonl(f, UTC_ZONE)
