"""End to end with the real embedded model: the first session of a real LoCoMo conversation -> L1..L5 (one session:
four model calls, L2 to L5, about 2 minutes on the AVX2 build; the whole conversation is in bench/results)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from timem.config import load_config
from timem.datasets.locomo import load_locomo
from timem.engine import MemoryEngine
from timem.models import Level
from timem.store.check import check_store

pytestmark = pytest.mark.slow
#: the bundled demo's last evening (Mia's chat), the time its questions are asked
DEMO_EVENING = datetime(2024, 6, 18, 21, 0, tzinfo=UTC)


@contextmanager
def demo_memory(tmp_path: Path) -> Iterator[Any]:
    """The bundled demo imported into a new file, answered by the embedded model (extractive L2-L5, rule items)."""
    import timem
    from timem.datasets import load_dataset

    demo = Path(timem.__file__).parent / "data" / "demo_conversation.jsonl"
    cache = Path(os.environ.get("TIMEM_CACHE_DIR", Path.home() / ".cache" / "timem"))
    with timem.open(tmp_path / "demo.duckdb", llm_backend="local", cache_dir=str(cache),
                    consolidation_mode="extractive", memory_extractor="rules") as mem:
        mem.ingest(load_dataset(demo, "jsonl", tz=mem.config.time.tz))
        yield mem


def test_local_model_builds_a_checked_tree_from_real_sessions(tmp_path, locomo_dev):
    cache = Path(os.environ.get("TIMEM_CACHE_DIR", Path.home() / ".cache" / "timem"))
    cfg = load_config(env={}, db_path=str(tmp_path / "e2e.duckdb"), llm_backend="local", cache_dir=str(cache),
                      consolidation_mode="abstractive",  # the model writes L2-L5 (the local default is extractive)
                      memory_extractor="rules")  # LLM item extraction has its own real-model test (CI time)
    user = load_locomo(locomo_dev, ["conv-30"], cfg.time.tz)[0]
    user = user.model_copy(update={"sessions": user.sessions[:1]})
    engine = MemoryEngine.open(cfg)
    try:
        report = engine.ingest([user])
        nodes = engine.store.nodes(user.user_id)
        by_level = {lv: [n for n in nodes if n.level == lv] for lv in Level}
        assert all(by_level[lv] for lv in Level), {lv: len(v) for lv, v in by_level.items()}
        assert len(by_level[Level.SESSION]) == 1
        n_turns = sum(len(s.turns) for s in user.sessions)
        assert report.turns_added == n_turns
        for n in nodes:
            assert n.content.strip()
            if n.level > Level.SEGMENT:
                assert "qwen2.5-coder-1.5b" in n.model_id
        # the profile names the people who spoke
        speakers = {t.speaker for s in user.sessions for t in s.turns}
        profile_text = " ".join(n.content for n in by_level[Level.PROFILE])
        assert any(name in profile_text for name in speakers), profile_text
        assert check_store(engine.store, cfg, user.user_id) == []
        again = engine.ingest([user])
        assert again.turns_added == 0 and again.nodes_added == {}
    finally:
        engine.close()


def test_warming_the_local_model_leaves_only_the_rest_of_the_next_prompt_to_evaluate(tmp_path):
    """Issue 15 #13: after :meth:`LocalLlamaBackend.warm` with a chat's system message, the answer call
    evaluates only the tokens after the shared prefix (llama.cpp's prompt evaluation count says so)."""
    import llama_cpp

    from timem.llm.factory import make_backend
    from timem.llm.local import LocalLlamaBackend, _load_llama
    from timem.llm.protocol import ChatRequest
    from timem.prompts import answer

    cache = Path(os.environ.get("TIMEM_CACHE_DIR", Path.home() / ".cache" / "timem"))
    backend = make_backend(load_config(env={}, llm_backend="local", cache_dir=str(cache)))
    assert isinstance(backend, LocalLlamaBackend)
    when = datetime(2023, 5, 8, 13, 56)
    backend.chat(ChatRequest(messages=answer.build_messages("What is 2 + 2?", "", when), max_tokens=4))  # other
    warmed = backend.warm(answer.build_messages("", "", when, asker="Mia", pinned=["Mia's home city: Porto"]))
    llm, _ = _load_llama(backend.model_path, backend.n_ctx, backend.n_threads)
    llama_cpp.llama_perf_context_reset(llm._ctx.ctx)
    context = "[L1 segment]\n2024-04-21 (Sun) 10:00 Mia: I moved to Porto last week [= 14 April 2024]."
    msgs = answer.build_messages("Where do I live?", context, when, asker="Mia", pinned=["Mia's home city: Porto"])
    out = backend.chat(ChatRequest(messages=msgs, max_tokens=24))
    evaluated = llama_cpp.llama_perf_context(llm._ctx.ctx).n_p_eval
    assert out.prompt_tokens is not None and warmed > 150
    assert evaluated <= out.prompt_tokens - 150, (evaluated, out.prompt_tokens, warmed)  # the system was reused
    assert "Porto" in out.text


def test_the_local_model_says_it_does_not_know_what_memory_does_not_hold(tmp_path):
    """Issue 27 #5: over the bundled demo, "Which university did I study at?" recalls nothing, and the embedded model
    answered "I studied at the University of Oxford."; a chat's brother question the same way. With answer-v7's
    note for an empty context it says it doesn't know, in a chat (asker) and in ``timem ask``."""
    from timem.recall.options import RecallOptions

    at = DEMO_EVENING
    with demo_memory(tmp_path) as mem:
        for question, asker in (("Which university did I study at?", None), ("What is my brother's name?", "Mia")):
            got = mem.ask("demo-mia", question, at, RecallOptions(asker=asker, persist=False))
            assert got.recall.context == "", got.recall.context  # nothing recalled: the case this is about
            assert "know" in got.answer.lower(), got.answer
            assert not any(w in got.answer for w in ("Oxford", "University of", "His name", "named")), got.answer


def test_the_local_model_acknowledges_a_first_statement_in_the_chat(tmp_path):
    """Issue 27 #5: a new person's first chat message, "I have a cat named Miso.", recalls nothing, and answer-v8 (a
    question's "don't know" note for an empty context) made the embedded model reply "You don't know.". answer-v9
    gives a message that asks nothing as a message to acknowledge; a question after it is answered from memory."""
    import timem

    cache = Path(os.environ.get("TIMEM_CACHE_DIR", Path.home() / ".cache" / "timem"))
    at = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
    with timem.open(tmp_path / "chat.duckdb", llm_backend="local", cache_dir=str(cache),
                    consolidation_mode="extractive", memory_extractor="rules") as mem:
        first = mem.chat_turn("zed", "chat-1", "I have a cat named Miso.", at, user_name="Zed")
        assert first.trace is not None and first.trace.context == ""  # nothing recalled: the case this is about
        assert "know" not in first.reply.lower() and "Miso" in first.reply, first.reply
        later = mem.chat_turn("zed", "chat-1", "What is my cat's name?", at.replace(minute=5), user_name="Zed")
        assert "Miso" in later.reply, later.reply


def test_the_local_model_invents_no_city_once_the_move_is_forgotten(tmp_path):
    """Issue 27 #5, a new-user trial: after "I just moved to Lisbon" was forgotten, "Which city do I live in now?"
    recalled off-topic lines that passed the score gate, and the embedded model answered "You live in Porto.". The
    answer check (:mod:`timem.recall.answer_check`) turns an answer whose names no memory holds into "don't know"."""
    from timem.recall.answer_check import names

    with demo_memory(tmp_path) as mem:
        gone = mem.forget("demo-mia", "Lisbon", confirm=True)
        assert gone.segments, "the forget matched nothing"
        turn = mem.chat_turn("demo-mia", "chat-1", "Which city do I live in now?", DEMO_EVENING,
                              user_name="Mia")
        assert turn.trace is not None and "Lisbon" not in turn.trace.context, turn.trace.context
        # every name in the reply is in a memory: with answer_check = "off" the model said "You live in Porto."
        # (answer-v10) and "You live in Tokyo." (answer-v11), neither of them in the context
        invented = [n for n in names(turn.reply, ["Mia"]) if n not in turn.trace.context.lower()]
        assert not invented, (turn.reply, turn.trace.context)


def test_the_local_model_takes_a_changed_preference_as_said(tmp_path):
    """Issue 27 #12, a new-user trial: "I really dislike jazz.", two weeks later "I love jazz now." was answered "You
    acknowledge that you dislike jazz." (the old dislike's item line came first). answer-v11's statement note: restate
    what they say, and what they say now holds."""
    import timem

    cache = Path(os.environ.get("TIMEM_CACHE_DIR", Path.home() / ".cache" / "timem"))
    at = datetime(2024, 6, 18, 21, 0, tzinfo=UTC)
    with timem.open(tmp_path / "jazz.duckdb", llm_backend="local", cache_dir=str(cache),
                    consolidation_mode="extractive", memory_extractor="rules") as mem:
        mem.chat_turn("zed", "chat-1", "I really dislike jazz.", at, user_name="Zed")
        now = mem.chat_turn("zed", "chat-2", "I love jazz now.", at.replace(month=7, day=2), user_name="Zed")
        assert now.trace is not None and "dislikes: jazz" in now.trace.context  # the stale item: the case
        assert "dislike" not in now.reply.lower() and "love" in now.reply.lower(), now.reply
        assert "acknowledge" not in now.reply.lower(), now.reply  # v10: "You acknowledge that you love jazz now."
        later = mem.chat_turn("zed", "chat-2", "Do I like jazz now?", at.replace(month=7, day=2, minute=5),
                              user_name="Zed")
        assert "dislike" not in later.reply.lower() and "jazz" in later.reply.lower(), later.reply
