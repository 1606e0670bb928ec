"""LLM client: cache, call log, JSON extraction/validation, bounded retries, error wrapping."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field

from timem.config import Config
from timem.errors import ConfigError, LLMError, ModelFileError, TimemError
from timem.llm.client import LLM, cache_key, extract_json_object
from timem.llm.factory import describe_llm, make_llm
from timem.llm.fake import ScriptedBackend
from timem.llm.local import LocalLlamaBackend
from timem.llm.protocol import ChatBackend, ChatRequest, LLMClient, Message
from timem.store.duckdb_store import Store


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    """Logic tests: the deterministic hashing embedder instead of MiniLM (tests/conftest.py)."""
    return fake_embedder


class Facts(BaseModel):
    facts: list[str]
    confidence: float = Field(ge=0, le=1)


VALID = '{"facts": ["likes tea"], "confidence": 0.8}'
MSGS = [Message(role="system", content="Extract facts."), Message(role="user", content="I like tea.")]


@pytest.fixture(scope="module")
def _module_store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("llm") / "t.duckdb", "test-embed", 4)  # opening costs ~0.2 s
    yield s
    s.close()


@pytest.fixture
def store(_module_store):
    """A real DuckDB store whose LLM cache and call log are empty at the start of each test."""
    _module_store.con.execute("DELETE FROM llm_cache")
    _module_store.con.execute("DELETE FROM llm_calls")
    return _module_store


def calls_log(store: Store) -> list[tuple]:
    return store.con.execute("SELECT model_id, purpose, user_id, cached, prompt_tokens, completion_tokens, "
                             "cache_key FROM llm_calls ORDER BY called_at, cached").fetchall()


def cache_rows(store: Store) -> list[tuple]:
    return store.con.execute("SELECT key, model_id, response FROM llm_cache ORDER BY key").fetchall()


def test_protocols_are_satisfied(store):
    backend = ScriptedBackend([])
    assert isinstance(backend, ChatBackend)
    assert isinstance(LLM(backend, store), LLMClient)


def test_complete_cache_hit_skips_backend_and_is_logged(store):
    backend = ScriptedBackend(["hello there"], model_id="m1")
    llm = LLM(backend, store)
    assert llm.complete(MSGS, purpose="answer", user_id="u1") == "hello there"
    assert llm.complete(MSGS, purpose="answer", user_id="u1") == "hello there"
    assert len(backend.calls) == 1
    req = backend.calls[0]
    assert req.temperature == 0.0 and req.json_schema is None and req.max_tokens == 1024
    log = calls_log(store)
    assert [(r[0], r[1], r[2], r[3]) for r in log] == [("m1", "answer", "u1", False), ("m1", "answer", "u1", True)]
    assert log[0][4:6] == (5, 2) and log[1][4:6] == (5, 2)  # tokens carried through the cache
    assert log[0][6] == log[1][6] == cache_key("m1", req)
    assert cache_rows(store) == [(cache_key("m1", req), "m1", "hello there")]


def test_cache_key_covers_model_messages_and_limits():
    req = ChatRequest(messages=MSGS)
    base = cache_key("m", req)
    assert base == cache_key("m", ChatRequest(messages=list(MSGS)))
    assert len(base) == 64
    assert base != cache_key("other", req)
    assert base != cache_key("m", ChatRequest(messages=MSGS, max_tokens=10))
    assert base != cache_key("m", ChatRequest(messages=MSGS, json_schema={"type": "object"}))
    assert base != cache_key("m", ChatRequest(messages=MSGS[:1]))


def test_different_max_tokens_is_a_cache_miss(store):
    backend = ScriptedBackend(["a", "b"])
    llm = LLM(backend, store)
    assert llm.complete(MSGS, purpose="p") == "a"
    assert llm.complete(MSGS, purpose="p", max_tokens=7) == "b"
    assert [c.max_tokens for c in backend.calls] == [1024, 7]


@pytest.mark.parametrize("text, expected", [
    (VALID, VALID),
    ("Sure! Here it is:\n```json\n" + VALID + "\n```\nHope this helps {not json}", VALID),
    ("The answer is " + VALID + " and that's it.", VALID),
    ('{"facts": ["a } brace", "quote \\" {"], "confidence": 1}',
     '{"facts": ["a } brace", "quote \\" {"], "confidence": 1}'),
    ('noise {bad} then {"facts": [], "confidence": 0}', '{"facts": [], "confidence": 0}'),
])
def test_extract_json_object(text, expected):
    assert extract_json_object(text) == expected


@pytest.mark.parametrize("text", ["no json here", "{unclosed", ""])
def test_extract_json_object_fails(text):
    with pytest.raises(ValueError):
        extract_json_object(text)


def test_complete_json_sends_schema_and_parses_fenced_answer(store):
    backend = ScriptedBackend(["```json\n" + VALID + "\n```"])
    llm = LLM(backend, store)
    out = llm.complete_json(MSGS, Facts, purpose="extract", user_id="u")
    assert out == Facts(facts=["likes tea"], confidence=0.8)
    assert backend.calls[0].json_schema == Facts.model_json_schema()
    assert backend.calls[0].temperature == 0.0
    # second call: served from the cache
    assert llm.complete_json(MSGS, Facts, purpose="extract", user_id="u") == out
    assert len(backend.calls) == 1
    assert [r[3] for r in calls_log(store)] == [False, True]


def test_complete_json_retries_with_correction_then_succeeds(store):
    backend = ScriptedBackend(["I think they like tea.", '{"facts": "tea", "confidence": 2}', VALID])
    llm = LLM(backend, store, max_retries=2)
    out = llm.complete_json(MSGS, Facts, purpose="extract")
    assert out.facts == ["likes tea"]
    assert len(backend.calls) == 3
    second, third = backend.calls[1].messages, backend.calls[2].messages
    assert second[:2] == MSGS
    assert second[2] == Message(role="assistant", content="I think they like tea.")
    assert second[3].role == "user" and "no JSON object" in second[3].content
    assert third[4] == Message(role="assistant", content='{"facts": "tea", "confidence": 2}')
    assert "facts" in third[5].content and "confidence" in third[5].content
    log = calls_log(store)
    assert len(log) == 3 and len({r[6] for r in log}) == 3  # each retry has its own key
    # only the validated answer is cached, under the third request's key
    assert cache_rows(store) == [(cache_key("scripted", backend.calls[2]), "scripted", VALID)]


def test_retry_sequence_is_replayed_from_cache(store):
    backend = ScriptedBackend(["bad", VALID, "bad"])
    llm = LLM(backend, store, max_retries=1)
    llm.complete_json(MSGS, Facts, purpose="x")
    again = llm.complete_json(MSGS, Facts, purpose="x")
    assert again.confidence == 0.8
    assert len(backend.calls) == 3  # first attempt asked again (invalid answers are not cached), retry hit
    assert [r[3] for r in calls_log(store)][-2:] == [False, True]


def test_exhausted_retries_raise_and_cache_nothing(store):
    backend = ScriptedBackend(["nope", "still nope", '{"facts": 1}'], model_id="tiny")
    llm = LLM(backend, store, max_retries=2)
    with pytest.raises(LLMError) as ei:
        llm.complete_json(MSGS, Facts, purpose="consolidate-L2")
    msg = str(ei.value)
    assert "consolidate-L2" in msg and "tiny" in msg and "Facts" in msg
    assert "OpenAI-compatible" in msg and "facts" in msg  # last validation error named
    assert len(backend.calls) == 3
    assert cache_rows(store) == []
    assert len(calls_log(store)) == 3


def test_invalid_cached_answer_is_never_returned(store):
    req = ChatRequest(messages=MSGS, json_schema=Facts.model_json_schema())
    key = cache_key("scripted", req)
    store.cache_put(key, "scripted", req.model_dump_json(), "garbage", None, None)
    backend = ScriptedBackend([VALID])
    out = LLM(backend, store, max_retries=0).complete_json(MSGS, Facts, purpose="x")
    assert out.facts == ["likes tea"]
    assert len(backend.calls) == 1
    assert cache_rows(store) == [(key, "scripted", VALID)]  # the bad entry was replaced


def test_backend_exceptions_are_wrapped_not_swallowed(store):
    def boom(req):
        raise RuntimeError("segfault-ish")
    with pytest.raises(LLMError, match="RuntimeError: segfault-ish") as ei:
        LLM(ScriptedBackend(boom), store).complete(MSGS, purpose="p")
    assert isinstance(ei.value.__cause__, RuntimeError)
    assert cache_rows(store) == []


def test_llm_error_from_backend_passes_through_and_script_exhaustion():
    backend = ScriptedBackend(["one"])
    llm = LLM(backend, None)  # no store: no cache, no log
    assert llm.complete(MSGS, purpose="p") == "one"
    with pytest.raises(LLMError, match="ran out of responses"):
        llm.complete(MSGS, purpose="p")


def test_callable_script_sees_requests():
    backend = ScriptedBackend(lambda r: json.dumps({"facts": [r.messages[-1].content], "confidence": 1}))
    out = LLM(backend, None).complete_json(MSGS, Facts, purpose="p")
    assert out.facts == ["I like tea."]


def test_errors_derive_from_timem_error():
    assert issubclass(LLMError, TimemError) and issubclass(ModelFileError, LLMError)


# ------------------------------------------------------------------ factory
def test_make_llm_none_and_openai(store, tmp_path):
    assert make_llm(Config(llm_backend="none", cache_dir=tmp_path), store) is None
    with pytest.raises(ConfigError, match="TIMEM_OPENAI_BASE_URL"):
        make_llm(Config(llm_backend="openai", cache_dir=tmp_path), store)
    llm = make_llm(Config(llm_backend="openai", openai_base_url="http://127.0.0.1:9/v1", openai_model="qwen",
                          llm_max_retries=5, llm_max_tokens=99), store)
    assert llm is not None and llm.model_id == "qwen @ 127.0.0.1:9"
    assert (llm.max_retries, llm.max_tokens) == (5, 99)
    assert make_llm(Config(llm_backend="openai", openai_api_key="sk-x"), None).model_id == \
        "gpt-4o-mini @ api.openai.com"


def test_make_llm_local_with_path_override(tmp_path):
    gguf = tmp_path / "my-model.gguf"
    gguf.write_bytes(b"GGUF")
    llm = make_llm(Config(llm_backend="local", local_model_path=gguf, local_n_ctx=2048), None)
    assert isinstance(llm.backend, LocalLlamaBackend)
    assert llm.model_id == "my-model (local llama.cpp)" and llm.backend.n_ctx == 2048
    with pytest.raises(ModelFileError, match="not a file"):
        make_llm(Config(llm_backend="local", local_model_path=tmp_path / "missing.gguf"), None)


def test_describe_llm_loads_nothing(tmp_path):
    assert describe_llm(Config(llm_backend="none")) == "no LLM"
    assert describe_llm(Config(llm_backend="openai", openai_base_url="http://box:8000/v1",
                               openai_model="llama3")) == "llama3 @ box:8000"
    assert describe_llm(Config(cache_dir=tmp_path / "nothing-here")) == \
        "qwen2.5-coder-1.5b-instruct-q4_k_m (local llama.cpp)"
    assert describe_llm(Config(local_model="qwen2.5-coder-0.5b")) == \
        "qwen2.5-coder-0.5b-instruct-q4_k_m (local llama.cpp)"
    assert not (tmp_path / "nothing-here").exists()


def test_an_answer_cut_off_by_the_token_limit_is_repaired_then_validated():
    from pydantic import BaseModel

    from timem.llm.client import parse_json_answer

    class Summary(BaseModel):
        summary: str

    cut = '{ "summary": "Caroline went to a support group on 7 May 2023. They also discussed the plan and'
    assert parse_json_answer(cut, Summary).summary.startswith("Caroline went to a support group on 7 May 2023.")
    with pytest.raises(ValueError):
        parse_json_answer("no json here at all", Summary)
