"""Build the configured :class:`~timem.llm.client.LLM` (or none) from a :class:`Config`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from timem.config import Config
from timem.errors import ConfigError, MissingExtraError
from timem.llm.client import LLM
from timem.llm.local import LocalLlamaBackend, ensure_model_file, model_spec
from timem.llm.openai_backend import OpenAIBackend, endpoint_label
from timem.llm.protocol import ChatBackend
from timem.store.ports import LLMCache


def _check_openai(config: Config) -> None:
    if not config.llm.openai_base_url and not config.llm.openai_api_key:
        raise ConfigError("llm_backend is 'openai' but neither TIMEM_OPENAI_BASE_URL nor TIMEM_OPENAI_API_KEY "
                          "(or OPENAI_API_KEY) is set. Set a key for OpenAI itself, or a base URL such as "
                          "http://localhost:8000/v1 for a local OpenAI-compatible server.")


def make_backend(config: Config) -> ChatBackend | None:
    """The :class:`ChatBackend` for ``config.llm.llm_backend`` (``None`` for ``"none"``).

    ``"local"`` joins/verifies the packaged GGUF first (the Llama itself loads lazily).

    Raises:
        ConfigError: ``openai`` without base URL and key.
        MissingExtraError: ``local`` without llama-cpp-python (``pip install 'timem[local]'``).
        ModelFileError: the local model parts are missing or fail verification.
    """
    if config.llm.llm_backend == "none":
        return None
    if config.llm.llm_backend == "openai":
        _check_openai(config)
        return OpenAIBackend(config.llm.openai_base_url, config.llm.openai_api_key, config.llm.openai_model,
                             config.llm.openai_timeout_s, config.llm.openai_json_mode)
    if config.llm.llm_backend == "local":
        if importlib.util.find_spec("llama_cpp") is None:  # said now, not as the first call's LLMError
            raise MissingExtraError("the embedded model (llm_backend 'local', the default)", "local",
                                    "llama-cpp-python")
        path = ensure_model_file(config)
        name = Path(path).stem if config.llm.local_model_path else model_spec(config).name
        return LocalLlamaBackend(path, name, config.llm.local_n_ctx, config.llm.local_n_threads)
    raise ConfigError(f"unknown llm_backend {config.llm.llm_backend!r}; use 'local', 'openai' or 'none'.")


def make_llm(config: Config, store: LLMCache | None) -> LLM | None:
    """The LLM client for ``config`` with cache/log in ``store``; ``None`` when ``llm_backend="none"``.

    Raises:
        ConfigError, ModelFileError: see :func:`make_backend`.
    """
    backend = make_backend(config)
    if backend is None:
        return None
    return LLM(backend, store, max_retries=config.llm.llm_max_retries, max_tokens=config.llm.llm_max_tokens)


def describe_llm(config: Config) -> str:
    """A human label for the UI, e.g. ``"qwen2.5-coder-1.5b-instruct-q4_k_m (local llama.cpp)"``,
    ``"gpt-4o-mini @ api.openai.com"`` or ``"no LLM"``. Loads and checks nothing."""
    if config.llm.llm_backend == "none":
        return "no LLM"
    if config.llm.llm_backend == "openai":
        return endpoint_label(config.llm.openai_model, config.llm.openai_base_url)
    if config.llm.local_model_path:
        return f"{Path(config.llm.local_model_path).stem} (local llama.cpp)"
    return f"{model_spec(config).name} (local llama.cpp)"
