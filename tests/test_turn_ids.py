"""Turn ids are ``user:session:seq``: a ``:`` inside a user or session id is refused on every path (else ``a:b`` +
session ``c`` and ``a`` + session ``b:c`` share an id, one user's turn is dropped or overwritten), and
``timem check`` names a stored turn whose id does not match its user, session and seq."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from test_import_faults import timem

from timem.chat_turns import check_user_id
from timem.config import load_config
from timem.datasets import load_dataset, load_jsonl
from timem.datasets.base import ImportedSession, ImportedUser
from timem.engine import MemoryEngine
from timem.errors import InputError
from timem.models import Role, Turn
from timem.store.check import check_store

AT = datetime(2024, 4, 1, 9, tzinfo=UTC)


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    return fake_embedder


def row(user: str, session: str, text: str, ts: str = "2024-04-01T09:00:00") -> str:
    return json.dumps({"user_id": user, "session_id": session, "speaker": "Me", "role": "user", "text": text,
                       "timestamp": ts}) + "\n"


def one_error_line(res) -> str:
    assert res.returncode == 1, res
    assert "Traceback" not in res.stderr, res.stderr
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    return err


def test_colliding_users_in_one_file_are_refused_naming_the_line(tmp_path):
    src = tmp_path / "two.jsonl"
    src.write_text(row("a", "s0", "I am user a.") + row("a:b", "c", "I am user a:b.") + row("a", "b:c", "I am a."))
    db = tmp_path / "t.duckdb"
    err = one_error_line(timem("ingest", str(src), "--format", "jsonl", "--l1-only", "--llm", "none", "--db", str(db),
                               cwd=tmp_path))
    assert f"file {src}" in err and "line 2" in err and "field 'user_id'" in err and "':'" in err, err
    assert not db.exists()


def test_colliding_users_across_two_files_are_refused_and_the_store_is_unchanged(tmp_path):
    """Each file holds one side of the collision (``a:b`` + ``c``, then ``a`` + ``b:c`` with --update-changed, which
    overwrote the first user's turn and deleted its L1 node): both are refused, the stored user is untouched."""
    db = tmp_path / "t.duckdb"
    base, first, second = (tmp_path / f"{n}.jsonl" for n in ("base", "first", "second"))
    base.write_text(row("amy", "s1", "My locker code is 4411."))
    first.write_text(row("a:b", "c", "I am user a:b."))
    second.write_text(row("a", "b:c", "I am user a."))
    ok = timem("ingest", str(base), "--format", "jsonl", "--l1-only", "--llm", "none", "--db", str(db), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    before = db.read_bytes()
    err = one_error_line(timem("ingest", str(first), "--format", "jsonl", "--l1-only", "--llm", "none", "--db",
                               str(db), cwd=tmp_path))
    assert f"file {first}" in err and "line 1" in err and "field 'user_id'" in err, err
    err = one_error_line(timem("ingest", str(second), "--format", "jsonl", "--l1-only", "--llm", "none",
                               "--update-changed", "--db", str(db), cwd=tmp_path))
    assert f"file {second}" in err and "line 1" in err and "field 'session_id'" in err, err
    assert db.read_bytes() == before
    res = timem("check", "--db", str(db), cwd=tmp_path)
    assert res.returncode == 0 and "turn ids" in res.stdout, res


def test_other_importers_and_entry_points_refuse_the_separator(tmp_path):
    conv = {"speaker_a": "Ann", "speaker_b": "Ben", "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ann", "text": "Hello.", "dia_id": "D1:1"}]}
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{"sample_id": "conv:1", "conversation": conv}]))
    with pytest.raises(InputError, match=r"':'.*record \[0\], field 'sample_id'"):
        load_dataset(path, "locomo", tz=ZoneInfo("UTC"))
    lme = {"question_id": "q1", "question": "Q?", "answer": "A", "question_type": "single-session-user",
           "question_date": "2023/05/30 (Tue) 23:40", "haystack_session_ids": ["s:1"],
           "haystack_dates": ["2023/05/20 (Sat) 10:00"], "answer_session_ids": [],
           "haystack_sessions": [[{"role": "user", "content": "Hi."}]]}
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([lme]))
    with pytest.raises(InputError, match=r"':'.*field 'haystack_session_ids'"):
        load_dataset(path, "longmemeval", tz=ZoneInfo("UTC"))
    with pytest.raises(InputError, match="':'"):
        check_user_id("a:b")


def test_engine_refuses_separator_duplicates_and_mismatched_ids(store, embedder):
    eng = MemoryEngine(load_config(env={}, db_path=store.path), store, embedder, None)
    with pytest.raises(InputError, match=r"':'.*field 'session_id'"):
        eng.add_exchange("a", "b:c", "Hello.", "Hi.", AT)
    with pytest.raises(InputError, match=r"':'.*field 'user_id'"):
        eng.add_message("a:b", "c", "Hello.", AT)

    def user(uid: str, turns: list[Turn]) -> ImportedUser:
        return ImportedUser(user_id=uid, participants=["Me"], sessions=[
            ImportedSession(session_id=turns[0].session_id, turns=turns, date_label="x")])

    def turn(tid: str, uid: str, sess: str, seq: int, text: str) -> Turn:
        return Turn(id=tid, user_id=uid, session_id=sess, seq=seq, speaker="Me", role=Role.USER, text=text,
                    event_time=AT)

    with pytest.raises(InputError, match=r"not user:session:seq.*field 'id'"):
        eng.ingest([user("a", [turn("t1", "a", "s", 0, "Hello.")])], upper_levels=False)
    same = turn("a:s:0", "a", "s", 0, "Hello.")
    with pytest.raises(InputError, match=r"two turns of the input have the id 'a:s:0'"):
        eng.ingest([user("a", [same]), user("a", [same.model_copy(update={"text": "Other."})])], upper_levels=False)
    assert store.users() == []


def test_check_names_a_turn_whose_id_does_not_match(store, embedder, tmp_path):
    """A file written before ids were checked: one turn's id is another user's, one user id holds ':'."""
    path = tmp_path / "ok.jsonl"
    path.write_text(row("amy", "s1", "I collect postcards."))
    eng = MemoryEngine(load_config(env={}, db_path=store.path), store, embedder, None)
    eng.ingest(load_jsonl(path, ZoneInfo("UTC")), upper_levels=False)
    assert check_store(store, eng.config) == []
    store.add_turns([Turn(id="amy:s1:7", user_id="bob", session_id="s1", seq=0, speaker="Bob", role=Role.USER,
                          text="I am Bob.", event_time=AT),
                     Turn(id="a:b:c:0", user_id="a:b", session_id="c", seq=0, speaker="A", role=Role.USER,
                          text="Colon user.", event_time=AT)])
    rules = {(v.user_id, v.rule): v.detail for v in check_store(store, eng.config)}
    assert "should be bob:s1:0" in rules[("bob", "turn-id")], rules
    assert "holds ':'" in rules[("a:b", "turn-id")], rules
    assert ("amy", "turn-id") not in rules
