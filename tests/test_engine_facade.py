"""The engine facade: recall, ask and chat_turn (recall -> answer -> store) on a real DuckDB file."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from timem.chat_turns import reply_without_llm
from timem.config import load_config
from timem.engine import MemoryEngine
from timem.errors import ChatTurnError, ConfigError, InputError, NotFoundError, StoreError
from timem.llm.client import LLM
from timem.llm.fake import ScriptedBackend
from timem.models import Role

AT = datetime(2024, 5, 2, 9, 0, tzinfo=UTC)


def _engine(tmp_path, store, embedder, responses=None) -> MemoryEngine:
    cfg = load_config(env={}, db_path=store.path, llm_backend="none", cache_dir=tmp_path / "cache",
                      consolidation_mode="extractive")
    llm = LLM(ScriptedBackend(responses), store) if responses is not None else None
    return MemoryEngine(cfg, store, embedder, llm)


def test_chat_turn_without_llm_stores_the_message_not_the_note(tmp_path, store, embedder):
    """The no-LLM note is shown, never stored: stored, it was written as an L1 segment and recalled as a memory."""
    eng = _engine(tmp_path, store, embedder)
    first = eng.chat_turn("mia", "chat-1", "I adopted a grey cat called Pixel.", AT, user_name="Mia")
    assert first.reply == reply_without_llm(0, 0)
    turn = eng.chat_turn("mia", "chat-1", "What is my cat called?", AT.replace(minute=5), user_name="Mia")
    turns = eng.turns("mia", "chat-1")
    assert [(t.role, t.speaker) for t in turns] == [(Role.USER, "Mia")] * 2
    assert "Pixel" in turn.trace.context  # the first message's L1 segment was written online and recalled
    assert "No LLM" not in turn.trace.context
    assert not any("No LLM" in n.content for n in eng.nodes("mia", 1))
    assert turn.reply == reply_without_llm(len(turn.trace.node_ids), turn.trace.context_tokens)
    assert turn.trace.trace_id in {t["trace_id"] for t in eng.store.traces("mia")}


def test_chat_turn_answers_with_the_llm_and_stores_the_reply(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder, responses=lambda req: "Your cat is called Pixel.")
    eng.add_exchange("mia", "chat-0", "I adopted a grey cat called Pixel.", "Lovely!", AT)
    turn = eng.chat_turn("mia", "chat-1", "What is my cat called?", AT.replace(hour=10))
    assert turn.reply == "Your cat is called Pixel." == turn.trace.answer
    assert eng.turns("mia", "chat-1")[-1].text == "Your cat is called Pixel."
    assert [c.purpose for c in turn.trace.llm_calls][-1] == "answer"


def test_a_chat_turn_on_the_embedded_model_uses_the_short_context_budget(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder, responses=lambda req: "Pixel.")
    eng.add_exchange("mia", "chat-0", "I adopted a grey cat called Pixel.", "Lovely!", AT)
    endpoint = eng.chat_turn("mia", "chat-1", "What is my cat called?", AT.replace(hour=10))
    assert endpoint.trace.settings["token_budget"] == eng.config.recall.token_budget == 1000
    # the scripted backend becomes a LocalModel (timem.llm.protocol), as the embedded model's backend is
    eng.llm.backend.model_path, eng.llm.backend.warm = "qwen.gguf", lambda msgs: 0  # type: ignore[union-attr]
    local = eng.chat_turn("mia", "chat-1", "And what colour is Pixel?", AT.replace(hour=11))
    assert local.trace.settings["token_budget"] == eng.config.recall.local_chat_token_budget == 500
    assert eng.recall("mia", "What colour is Pixel?", AT.replace(hour=12)).trace.settings["token_budget"] == 1000


def test_a_failed_answer_keeps_the_message_and_says_so(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder, responses=[])  # the scripted backend has nothing to say
    with pytest.raises(ChatTurnError) as err:
        eng.chat_turn("mia", "chat-1", "What is my cat called?", AT)
    assert err.value.stage == "answer" and "recorded" in str(err.value)
    assert [t.text for t in eng.turns("mia", "chat-1")] == ["What is my cat called?"]


def test_an_empty_message_writes_nothing(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder)
    with pytest.raises(InputError):
        eng.chat_turn("mia", "chat-1", "   ", AT)
    assert eng.users() == []


def test_ask_needs_an_llm_and_require_user_names_the_users(tmp_path, store, embedder):
    eng = _engine(tmp_path, store, embedder)
    eng.add_exchange("mia", "chat-0", "I adopted a grey cat called Pixel.", "Lovely!", AT)
    with pytest.raises(ConfigError, match="recall-only"):
        eng.ask("mia", "What is my cat called?")
    with pytest.raises(NotFoundError, match="mia"):
        eng.require_user("bob")
    assert eng.default_question_time("mia") == AT
    assert eng.default_question_time("bob") is None
    res = eng.recall("mia", "cat", persist=False)
    assert "Pixel" in res.context


def test_recall_and_ask_of_an_unknown_user_say_so_and_store_no_trace(tmp_path, store, embedder):
    """A new-user trial: ``mem.recall("nobody", "hi")`` returned "" and stored a recall trace under a user that does
    not exist, where the CLI, the service, export and forget all say "no user"."""
    eng = _engine(tmp_path, store, embedder, responses=["Pixel."])
    eng.add_exchange("mia", "chat-0", "I adopted a grey cat called Pixel.", "Lovely!", AT)
    for call in (eng.recall, eng.ask):
        with pytest.raises(NotFoundError, match="no user 'nobody'.*users: mia"):
            call("nobody", "hi")
    assert store.con.execute("SELECT count(*) FROM recall_traces WHERE user_id = 'nobody'").fetchone()[0] == 0
    assert "Pixel" in eng.recall("mia", "What is my cat called?").context
    assert store.has_user("mia") and not store.has_user("nobody") and not store.has_user("Mia")


def test_a_naive_event_time_is_refused_with_how_to_give_its_zone(tmp_path, store, embedder):
    """The trial's fault: the error pointed to an internal function (timem.tree.windows.to_utc)."""
    eng = _engine(tmp_path, store, embedder)
    with pytest.raises(InputError, match=r"event_time must be timezone-aware.*tzinfo=timezone\.utc") as err:
        eng.remember("mia", "chat-1", "I adopted a cat.", datetime(2024, 5, 2, 9, 0))
    assert "to_utc" not in str(err.value)
    assert not store.has_user("mia")


def test_the_engine_is_a_context_manager_that_closes_its_store(tmp_path, store, embedder):
    """``with`` closes the DuckDB file when the block ends, also when it raises; the file can then be reopened, and
    a closed store says so (``StoreError``) instead of DuckDB's connection error."""
    with _engine(tmp_path, store, embedder) as eng:
        eng.add_exchange("mia", "chat-0", "I adopted a grey cat called Pixel.", "Lovely!", AT)
    with pytest.raises(StoreError, match="store is closed"):
        store.con.execute("SELECT 1")
    again = MemoryEngine.open(load_config(env={}, db_path=store.path, llm_backend="none"), with_llm=False)
    with pytest.raises(NotFoundError), again:
        again.require_user("nobody")
    with pytest.raises(StoreError, match="store is closed"):
        again.store.con.execute("SELECT 1")


def test_only_an_in_process_backend_is_a_local_model(tmp_path):
    """The LocalModel capability (timem.llm.protocol) replaces probing the LLM for a ``backend.model_path``."""
    from timem.llm.client import local_model
    from timem.llm.local import LocalLlamaBackend
    from timem.llm.openai_backend import OpenAIBackend
    from timem.llm.protocol import LocalModel

    local = LocalLlamaBackend(tmp_path / "m.gguf", "m")  # loads nothing until a call
    assert isinstance(local, LocalModel) and local_model(LLM(local, None)) is local
    assert local_model(LLM(OpenAIBackend("http://127.0.0.1:9/v1", "k", "gpt", 5.0), None)) is None
    assert local_model(LLM(ScriptedBackend([]), None)) is None and local_model(None) is None
