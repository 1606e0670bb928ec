"""ServiceClient against a live memory service (real uvicorn on 127.0.0.1, real DuckDB file, fake embedder, no LLM):
every facade method the studio uses, tenant isolation, and the mapping of each service error to a TimemError."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from service_support import free_port, two_tenants
from typer.testing import CliRunner

from timem.errors import (
    AuthError,
    ChatTurnError,
    ConsolidationIncomplete,
    InputError,
    NotFoundError,
    ServiceUnreachableError,
)
from timem.models import Level, MemoryItem, MemoryNode, NodeStatus, Role, SessionInfo, Turn
from timem.recall.pipeline import RecallResult
from timem.recall.trace import RecallTrace
from timem.service.client import ServiceClient, error_for

T0 = datetime(2024, 5, 2, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def embedder(fake_embedder):
    return fake_embedder


@pytest.fixture(scope="module")
def svc(tmp_path_factory, embedder):
    with two_tenants(tmp_path_factory.mktemp("svc-client"), embedder) as (base, keys):
        yield base, keys


@pytest.fixture()
def acme(svc):
    base, keys = svc
    c = ServiceClient(base, keys["acme"])
    yield c
    c.close()


def test_client_speaks_for_one_tenant_with_the_engine_types(svc, acme):
    base, keys = svc
    assert acme.tenant == "acme" and acme.has_llm is False and acme.local_model_path is None
    first = acme.chat_turn("mia", "s1", "I live in Lisbon and I adopted a grey cat called Pixel.", T0,
                           user_name="Mia")
    assert first.reply and isinstance(first.trace, RecallTrace) and first.trace.user_id == "mia"
    assert {n.level for n in first.written} == {Level.SEGMENT} and isinstance(first.written[0], MemoryNode)
    acme.chat_turn("mia", "s1", "My sister Ana is a doctor.", T0 + timedelta(minutes=5), user_name="Mia")
    assert acme.users() == ["mia"]
    turns = acme.turns("mia")
    assert all(isinstance(t, Turn) for t in turns) and [t.role for t in turns] == [Role.USER] * 2
    # (no LLM on the service: the note it answers with is not stored)
    assert turns[0].id == "mia:s1:0" and turns[0].speaker == "Mia" and turns[0].user_id == "mia"
    assert [t.id for t in acme.turns("mia", ids=["mia:s1:1"])] == ["mia:s1:1"]
    assert len(acme.turns("mia", "s1")) == 2 and acme.turns("mia", "nope") == []
    sessions = acme.sessions("mia")
    assert isinstance(sessions[0], SessionInfo) and [s.session_id for s in sessions] == ["s1"]
    assert acme.default_question_time("mia") == T0 + timedelta(minutes=5)
    leaves = acme.nodes("mia", 1)
    assert len(leaves) == 2 and all(n.user_id == "mia" and n.model_id == "verbatim" for n in leaves)
    assert [n.id for n in acme.nodes(ids=[leaves[0].id], status=None)] == [leaves[0].id]  # any user of the tenant
    assert acme.nodes("mia", session_id="s1") and acme.nodes("mia", session_id="s9") == []
    traces = acme.traces("mia")
    assert len(traces) == 2 and traces[0].query.startswith("My sister")  # newest first
    res = acme.recall("mia", "Where does Mia live?", T0 + timedelta(hours=1),
                      config=acme.config.with_overrides(token_budget=300, recall_top_k=5), persist=False)
    assert isinstance(res, RecallResult) and "Lisbon" in res.context
    assert [n.id for n in res.nodes] == res.trace.node_ids and res.trace.settings["token_budget"] == 300
    assert len(acme.traces("mia")) == 2  # persist=False stored nothing
    items = acme.memory_items("mia")
    assert items and all(isinstance(i, MemoryItem) for i in items)
    city = next(i for i in items if i.value == "Lisbon")
    assert acme.pin_item(city.id, True).pinned and not acme.pin_item(city.id, False).pinned
    preview = acme.forget("mia", "I live in Lisbon")
    assert [i.id for i in preview.items] == [city.id] and preview.segments
    assert acme.memory_items("mia")[0].status == "active"  # a preview changes nothing
    acme.forget_items([city.id])
    assert city.id not in {i.id for i in acme.memory_items("mia")}
    written = acme.end_session("mia", "s1")
    assert Level.SESSION in {n.level for n in written}
    acme.chat_turn("mia", "s2", "I started swimming on Tuesdays.", T0 + timedelta(days=9))
    assert acme.consolidate("mia", flush=True)


def test_edit_delete_restore_erase(svc, acme):
    acme.chat_turn("zoe", "z1", "I play the cello in an orchestra.", T0)
    leaf = acme.nodes("zoe", 1)[0]
    edited = acme.edit_memory(leaf.id, "Zoe: I play the viola in an orchestra.")
    assert edited.content.startswith("Zoe: I play the viola") and edited.id == leaf.id
    assert acme.delete_memories([leaf.id]) == {}
    assert acme.nodes("zoe", ids=[leaf.id], status=NodeStatus.DELETED)
    assert acme.forgotten_turn_ids("zoe", "z1") == set(leaf.source_turn_ids)  # the chat history hides them
    gets: list[str] = []
    listing = acme._http.rows

    def counting(path, field, **kw):
        gets.append(path)
        return listing(path, field, **kw)

    acme._http.rows = counting  # type: ignore[method-assign]
    turns, gone = acme.history("zoe", "z1")  # what the studio's chat history reads: one GET, not two
    assert gone == set(leaf.source_turn_ids) and {t.id for t in turns} >= gone and len(gets) == 1
    acme._http.rows = listing  # type: ignore[method-assign]
    assert {t.id for t in acme.turns("zoe", "z1")} >= set(leaf.source_turn_ids)  # kept, for a restore
    assert leaf.id not in {n.id for n in acme.nodes("zoe")}
    fresh = ServiceClient(svc[0], svc[1]["acme"])  # knows no owner yet: finds it user by user
    fresh.restore_memory(leaf.id)
    assert leaf.id in {n.id for n in acme.nodes("zoe")}
    counts = acme.erase_user("zoe")
    assert counts["turns"] == 1 and "file_seconds" in counts  # the message (no LLM: no reply stored)
    assert "zoe" not in acme.users() and acme.nodes("zoe") == [] and acme.turns("zoe") == []


def test_a_second_tenant_sees_nothing_of_the_first(svc, acme):
    base, keys = svc
    acme.chat_turn("noa", "n1", "I work at Blue Harbor.", T0)
    leaf = acme.nodes("noa", 1)[0]
    with ServiceClient(base, keys["beta"]) as beta:
        assert beta.tenant == "beta" and "noa" not in beta.users()
        assert beta.nodes("noa") == [] and beta.turns("noa") == [] and beta.traces("noa") == []
        with pytest.raises(NotFoundError):
            beta.edit_memory(leaf.id, "hijacked")
        with pytest.raises(NotFoundError, match="no user 'noa'"):
            beta.end_session("noa", "n1")
        beta.chat_turn("noa", "n1", "I am beta's own noa.", T0)  # the same id, another person
        assert [t.text for t in beta.turns("noa") if t.role == Role.USER] == ["I am beta's own noa."]
    assert acme.nodes("noa", ids=[leaf.id])[0].content.endswith("I work at Blue Harbor.")


def test_wrong_key_is_401_auth_error_saying_to_check_the_key(svc):
    base, keys = svc
    with pytest.raises(AuthError, match="refused the API key.*check the key") as info:
        ServiceClient(base, "tmk_deadbeef_wrong")
    assert "tmk_deadbeef_wrong" not in str(info.value)  # the key is never shown


def test_unknown_user_and_memory_are_not_found_and_bad_input_is_input_error(acme):
    with pytest.raises(NotFoundError, match="no user 'ghost'"):
        acme.end_session("ghost", "s1")
    with pytest.raises(NotFoundError, match="no user 'ghost'"):
        acme.recall("ghost", "anything")
    with pytest.raises(NotFoundError):
        acme.edit_memory("L1-0000000000000000", "x")
    with pytest.raises(InputError):
        acme.chat_turn("mia2", "s1", "   ", T0)
    with pytest.raises(InputError, match="session_id"):
        acme.chat_turn("mia2", "bad/id", "hello", T0)


def test_service_down_says_not_reachable_and_how_to_start_it():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ServiceUnreachableError, match=f"not reachable at {url}.*timem serve"):
        ServiceClient(url, "tmk_x_y")


def test_error_mapping_of_each_status():
    assert isinstance(error_for(413, {"error": "too long"}, "u"), InputError)
    assert isinstance(error_for(422, {"error": "bad"}, "u"), InputError)
    chat = error_for(502, {"error": "your message was recorded, but answering it failed", "stage": "answer"}, "u")
    assert isinstance(chat, ChatTurnError) and chat.stage == "answer"
    assert str(error_for(500, {"error": "boom"}, "http://h")) == "the service at http://h failed (HTTP 500): boom"


def test_consolidation_warning_becomes_consolidation_incomplete():
    from timem.service.client import RemoteConsolidationIncomplete

    exc = RemoteConsolidationIncomplete("1 window(s) could not be consolidated", [])
    assert isinstance(exc, ConsolidationIncomplete) and exc.written == [] and "1 window" in str(exc)


def test_timem_studio_service_passes_url_and_key_without_echoing_the_key(svc, monkeypatch):
    import os

    from timem.cli import app

    base, keys = svc
    seen: dict = {}
    monkeypatch.setattr(os, "execve", lambda exe, args, env: seen.update(args=args, env=env))
    monkeypatch.delenv("TIMEM_SERVICE_KEY", raising=False)
    out = CliRunner().invoke(app, ["studio", "--service", base, "--key", keys["acme"]])
    assert out.exit_code == 0, out.output
    assert seen["env"]["TIMEM_SERVICE_URL"] == base and seen["env"]["TIMEM_SERVICE_KEY"] == keys["acme"]
    assert "tenant 'acme'" in out.output and keys["acme"] not in out.output
    monkeypatch.setenv("TIMEM_SERVICE_KEY", keys["beta"])  # the key from the environment
    out = CliRunner().invoke(app, ["studio", "--service", base])
    assert out.exit_code == 0 and "tenant 'beta'" in out.output and keys["beta"] not in out.output
    monkeypatch.delenv("TIMEM_SERVICE_KEY")
    seen.clear()
    out = CliRunner().invoke(app, ["studio", "--service", base])
    assert out.exit_code != 0 and not seen and "TIMEM_SERVICE_KEY" in str(out.exception)
    out = CliRunner().invoke(app, ["studio", "--service", base, "--key", "tmk_bad_key"])
    assert out.exit_code != 0 and not seen and "tmk_bad_key" not in out.output


def test_the_client_takes_the_services_zone_modes_and_idle_timeout(embedder, tmp_path):
    """The studio's chat opens a new session after the *service's* idle timeout, not its own default."""
    from service_support import engine_factory, running

    from timem.config import load_config
    from timem.service import KeyFile

    kf = KeyFile(tmp_path / "k.json")
    key = kf.add("acme")
    factory = engine_factory(tmp_path / "t.duckdb", embedder, session_idle_timeout_minutes=30,
                             timezone="Asia/Tokyo")
    with running(factory, kf) as base:
        local = load_config(env={}, llm_backend="none")
        assert local.time.session_idle_timeout_minutes == 120
        c = ServiceClient(base, key, config=local)
        assert c.config.time.session_idle_timeout_minutes == 30 and c.config.time.timezone == "Asia/Tokyo"
        c.close()
