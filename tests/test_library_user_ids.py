"""The Python library creates only users the command line, the studio and the memory service take
(:func:`timem.ids.check_new_user_id`). A new-user trial: ``timem.open(path).remember("a b", ...)`` was stored, and
``timem export`` then wrote a file that ``timem ingest`` refused. A user stored before the rule keeps its id."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from test_cli import cli_env, run  # noqa: F401  (fixture)

from timem.config import load_config
from timem.datasets.base import ImportedSession, ImportedUser, turn_id
from timem.engine import MemoryEngine
from timem.errors import InputError
from timem.ids import check_new_user_id
from timem.models import Role, Turn

AT = datetime(2024, 5, 2, 9, tzinfo=UTC)
BAD = ["a b", "a/b", "Zoë", "-ana", ""]


@pytest.fixture(scope="module")
def embedder(fake_embedder):
    return fake_embedder


@pytest.fixture()
def eng(store, embedder):
    return MemoryEngine(load_config(env={}, db_path=store.path), store, embedder, None)


def _user(uid: str, text: str = "I live in Porto.") -> ImportedUser:
    t = Turn(id=turn_id(uid, "s1", 0), user_id=uid, session_id="s1", seq=0, speaker="Ana", role=Role.USER, text=text,
             event_time=AT)
    return ImportedUser(user_id=uid, participants=["Ana"], sessions=[ImportedSession(session_id="s1", turns=[t],
                                                                                     date_label="")])


@pytest.mark.parametrize("user", BAD)
def test_every_library_write_refuses_a_new_user_the_service_refuses_and_writes_nothing(eng, user):
    writes = [lambda: eng.remember(user, "s1", "I live in Porto.", AT),
              lambda: eng.remember(user, "s1", "I live in Porto.", AT, reply="Nice!"),
              lambda: eng.add_message(user, "s1", "I live in Porto.", AT),
              lambda: eng.add_reply(user, "s1", "Nice!", AT),
              lambda: eng.chat_turn(user, "s1", "Where do I live?", AT)]
    for write in writes:
        with pytest.raises(InputError) as exc:
            write()
        assert f"user id {user!r} is not valid: use 1-128 ASCII letters" in str(exc.value), exc.value
        assert "choose another id for the new user" in str(exc.value) and exc.value.field == "user_id"
    if "/" not in user and user:  # ingest names '/' and an empty id with the rule of every stored id
        with pytest.raises(InputError, match=f"user id {user!r} is not valid"):
            eng.ingest([_user(user)], upper_levels=False)
    assert eng.users() == []


def test_a_user_stored_before_the_rule_keeps_its_id(eng, store):
    """A file written before the rule (or a dataset's looser id): its user is read and written to as before."""
    store.add_turns(_user("ana smith").turns)  # as an older version stored it
    eng.remember("ana smith", "s2", "I moved to Braga.", AT + timedelta(days=1), reply="Noted.")
    eng.ingest([_user("ana smith", "I live in Porto.")], upper_levels=False)  # idempotent re-ingest
    assert [t.text for t in eng.turns("ana smith")] == ["I live in Porto.", "I moved to Braga.", "Noted."]
    with pytest.raises(InputError, match="':'"):  # the rule of every stored id still holds
        eng.remember("ana:smith", "s1", "Hi.", AT)


def test_the_service_engine_checks_the_user_part_of_tenant_ids(eng):
    assert check_new_user_id("acme/mia", tenant_ids=True) == "acme/mia"
    for bad in ("acme/a b", "acme/", "/mia", "mia"):
        with pytest.raises(InputError):
            check_new_user_id(bad, tenant_ids=True)
    with pytest.raises(InputError, match="'acme/mia' is not valid"):  # the library: '/' is the tenant separator
        eng.remember("acme/mia", "s1", "Hi.", AT)
    eng.core.tenant_ids = True  # as timem.service.context.Service sets it
    eng.remember("acme/mia", "s1", "Hi.", AT)
    assert eng.users() == ["acme/mia"]


def test_a_library_write_exports_to_a_file_ingest_reads_back(cli_env):  # noqa: F811
    import timem
    from timem.store import Store

    db, again, path = str(cli_env / "lib.duckdb"), str(cli_env / "again.duckdb"), cli_env / "mia.jsonl"
    with timem.open(db, llm_backend="none") as mem:
        mem.remember("mia.k_2", "chat-1", "I adopted a grey cat called Pixel.", AT, reply="Lovely!")
        mem.remember("mia.k_2", "chat-1", "She is two.", AT + timedelta(minutes=2), user_name="Mia")
        mem.remember("mia.k_2", "chat 2", "She hates the vacuum cleaner.", AT + timedelta(days=1))
    code, out = run("export", "--user", "mia.k_2", "--format", "jsonl", "--out", str(path), "--db", db)
    assert code == 0 and "wrote 4 turn(s)" in out, out
    code, out = run("ingest", str(path), "--format", "jsonl", "--llm", "none", "--db", again)
    assert code == 0 and "4 new turns" in out, out
    a, b = (Store(p, "sentence-transformers/all-MiniLM-L6-v2", 384) for p in (db, again))
    try:
        assert [(t.id, t.speaker, t.role, t.text, t.event_time) for t in a.turns("mia.k_2")] == \
            [(t.id, t.speaker, t.role, t.text, t.event_time) for t in b.turns("mia.k_2")]
    finally:
        a.close()
        b.close()
