"""The ``timem`` command line (typer). Every command takes ``--db`` and, where it applies, ``--user``.

Here: ``ingest``, ``consolidate``, ``studio`` and the entry point :func:`main`; what a file holds and erasing from it
in :mod:`timem.cli_store`, questions (``ask``, ``eval-recall``) in :mod:`timem.cli_recall`, ``model`` in
:mod:`timem.cli_model`, the memory layer in :mod:`timem.cli_memory`, the service in :mod:`timem.cli_service`, the
options they share in :mod:`timem.cli_common`.

Config is resolved once per invocation in :func:`_config`; errors derived from ``TimemError`` are
printed as one line saying what to do, with exit code 1 (``timem check`` exits 2 on violations).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from timem import cli_common, cli_memory, cli_model, cli_options, cli_recall, cli_service, cli_store
from timem.cli_common import ConfigOpt, DbOpt, LlmOpt, ModeOpt, _config, _engine
from timem.cli_memory import memories_app, segtree_app
from timem.cli_options import OptionValueError, SetOpt, one_of, reflow_help, setting_overrides, setting_values
from timem.config import Config, load_config
from timem.errors import ConsolidationIncomplete, InputError, MissingExtraError, TimemError
from timem.progress import terminal_progress

if TYPE_CHECKING:
    from timem.engine import IngestReport

app = typer.Typer(add_completion=False, no_args_is_help=True, help="TiMem: a Temporal Memory Tree for chat agents.")
app.add_typer(segtree_app, name="segtree")
app.add_typer(memories_app, name="memories")
@app.command()
def ingest(file: Annotated[Path, typer.Argument(help="the conversation file to import (docs/input-formats.md)")],
           fmt: Annotated[Literal["locomo", "longmemeval", "jsonl"] | None, typer.Option(
               "--format", metavar="FORMAT", help="the file's format: locomo | longmemeval | jsonl (default: from "
               "the file: .jsonl is jsonl, a .json file LoCoMo or LongMemEval by its keys; docs/input-formats.md)")
           ] = None,
           sample: Annotated[str | None, typer.Option(
               "--sample", callback=cli_options.checked_sample,
               help="LoCoMo sample_id(s) or LongMemEval question_id(s), comma-separated (default: all)")] = None,
           limit: Annotated[int | None, typer.Option(
               "--limit", callback=cli_options.at_least_one("--limit", omitted="every instance"),
               help="LongMemEval: the first N instances (default: all)")] = None,
           db: DbOpt = None, llm: LlmOpt = None,
           l1_mode: Annotated[str | None, typer.Option(
               "--l1-mode", callback=one_of("--l1-mode", setting_values("l1_mode"), omitted="the l1_mode setting"),
               help="L1 segments: verbatim (the turns' text, no LLM) | llm (an LLM summary); default: the l1_mode "
               "setting, verbatim")] = None,
           flush: Annotated[bool, typer.Option(help="close the last day/week/month after import")] = True,
           upper_levels: Annotated[bool, typer.Option(
               "--upper-levels/--l1-only", help="also consolidate L2-L5 (--l1-only: segments now, "
               "`timem consolidate` later)")] = True,
           update_changed: Annotated[bool, typer.Option(
               "--update-changed", help="replace the text of stored turns whose text differs in FILE "
               "(re-embed, re-index, re-consolidate; old text in the audit log)")] = False,
           mode: ModeOpt = None, config: ConfigOpt = None,
           ray: Annotated[str | None, typer.Option("--ray", help="one task per user (conversation) on Ray: "
                                                   "'local', 'auto' or a cluster ADDRESS (new users only); "
                                                   "see docs/cluster.md")] = None,
           set_: SetOpt = None) -> None:
    """Import a conversation file and consolidate it into the Temporal Memory Tree (idempotent)."""
    from timem.datasets import load_dataset

    if ray and (update_changed or not flush):
        raise OptionValueError("--ray ingests new users as the file holds them; leave out --update-changed and "
                               "--no-flush")
    fmt = fmt or cli_common.inferred_format(file)
    cli_options.dataset_flags(fmt, sample=sample, limit=limit)
    cfg = _config(config, db, setting_overrides(set_), llm_backend=llm, l1_mode=l1_mode,
                  consolidation_mode=mode)
    with cli_options.samples_in_file(sample):
        users = load_dataset(file, fmt, sample_ids=cli_options.sample_ids(sample), limit=limit, tz=cfg.time.tz,
                             user_tz=cfg.time.user_tz, max_turn_chars=cfg.store.max_turn_chars)
    cli_common._check_user_ids(users, file)
    try:
        with _engine(cfg) as eng:
            if ray:
                from timem.ingest_cluster import ingest_on_ray

                report = ingest_on_ray(eng, file, fmt, ray, sample_ids=cli_options.sample_ids(sample), limit=limit,
                                       upper_levels=upper_levels)
            else:
                report = eng.ingest(users, flush=flush, upper_levels=upper_levels, update_changed=update_changed,
                                    progress=terminal_progress)
    except ConsolidationIncomplete as exc:  # the store is closed: what was written is on disk
        from timem.engine import IngestReport

        if isinstance(exc.report, IngestReport):  # an ingest's always is
            _echo_ingested(exc.report, cfg)
        raise
    _echo_ingested(report, cfg)


def _echo_ingested(report: IngestReport, cfg: Config) -> None:
    typer.echo(f"ingested {len(report.users)} user(s): {report.turns_added} new turns, "
               f"new nodes {report.nodes_added or 'none'} -> {cfg.store.db_path}")
    if report.changed_turns:
        ids = ", ".join(report.changed_turns[:10]) + (" ..." if len(report.changed_turns) > 10 else "")
        if report.turns_updated:
            typer.echo(f"updated {report.turns_updated} turn(s) whose text changed: {ids} (old text in the audit log, "
                       "action turn-updated)")
        else:
            typer.echo(f"warning: {len(report.changed_turns)} stored turn(s) have a different text in the file and "
                       f"were left unchanged: {ids}. Rerun with --update-changed to replace them.", err=True)


@app.command()
def consolidate(db: DbOpt = None, llm: LlmOpt = None,
                user: Annotated[str | None, typer.Option("--user", help="one user (default: all)")] = None,
                flush: Annotated[bool, typer.Option(help="close every open window")] = False,
                mode: ModeOpt = None, config: ConfigOpt = None,
                retry_failed: Annotated[bool, typer.Option(help="run failed queue jobs again")] = False,
                set_: SetOpt = None) -> None:
    """Run the consolidation queue's pending jobs, then consolidate every window that is due (or all open
    windows with --flush).

    `--mode` applies to windows without a node yet; an existing node is re-consolidated in its own mode.
    """
    cfg = _config(config, db, setting_overrides(set_), llm_backend=llm, consolidation_mode=mode)
    with _engine(cfg) as eng:
        if user is not None:
            eng.require_user(user)
        if retry_failed:
            eng.retry_failed_jobs(user or "")
        before = eng.store.queue_counts(user or "")
        queued = eng.drain_queue(user, raise_errors=False)  # the service's queue, left by a stop or a crash
        after = eng.store.queue_counts(user or "")
        if before["pending"]:
            typer.echo(f"queue: ran {before['pending']} job(s), {after['failed']} failed "
                       f"({len(queued)} node(s)){'; see `timem check`' if after['failed'] else ''}")
        nodes = eng.consolidate(user, flush=flush, progress=terminal_progress)
    typer.echo(f"wrote {len(queued) + len(nodes)} node(s)")


cli_store.register(app)  # tree, stats, check, erase, export, erase-user, compact: listed here by `timem --help`


cli_recall.register(app)  # ask, eval-recall
cli_model.register(app)  # model


@app.command()
def studio(db: DbOpt = None,
           port: Annotated[int, typer.Option("--port", min=1, max=65535, metavar="PORT",
                                             help="TCP port of the studio on 127.0.0.1 (1-65535)")] = 8501,
           service: Annotated[str | None, typer.Option(
               "--service", help="URL of a running memory service (`timem serve`) to show instead of a DuckDB file; "
                                 "the studio then never opens a file")] = None,
           key: Annotated[str | None, typer.Option(
               "--key", help="the tenant's API key for --service (default: TIMEM_SERVICE_KEY)")] = None,
           config: ConfigOpt = None) -> None:
    """Start the Streamlit studio (headless) on 127.0.0.1, on a DuckDB file or (--service URL) as a client of a
    memory service, one tenant's view through its key.

    The process becomes the Streamlit server (exec), so a signal to `timem studio` (Ctrl-C, SIGTERM from a
    supervisor) stops the server itself instead of leaving it running orphaned. --config FILE is checked here,
    then read by the studio (TIMEM_CONFIG)."""
    import importlib.util
    import os

    missing = [m for m in ("streamlit", "plotly", "pandas", "httpx") if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingExtraError("timem studio", "studio", missing[0])
    from timem.ui.router import APP_PY

    if config is not None:  # a bad file is one error line here, not a broken page later
        load_config(config)

    args = [sys.executable, "-m", "streamlit", "run", str(APP_PY), "--server.address", "127.0.0.1",
            "--server.port", str(port), "--server.headless", "true",
            # an offline memory tool sends nothing out: Streamlit's usage statistics are on unless told, and the
            # repository's .streamlit/config.toml is read only when the studio starts in the checkout (a trial)
            "--browser.gatherUsageStats", "false"]
    env = {**os.environ, **({"TIMEM_DB_PATH": str(db)} if db else {}),
           **({"TIMEM_CONFIG": str(Path(config).resolve())} if config is not None else {})}
    if service:
        env.update(cli_service.studio_service_env(service, key, db, env))
    elif db:  # an explicit file wins over a TIMEM_SERVICE_URL in the environment
        env.pop("TIMEM_SERVICE_URL", None)
    sys.stdout.flush()
    os.execve(sys.executable, args, env)


cli_service.register(app)  # serve, mcp, keys
cli_memory.register(app)  # forget, restore
reflow_help(app)  # every command's help: a paragraph is one line to wrap (timem bench: in timem.bench.cli)


def _mount_bench() -> None:
    from timem.bench.cli import bench_app

    app.add_typer(bench_app, name="bench", help="LoCoMo / LongMemEval benchmark runs (see bench/results/README.md).")


def _check_argv(argv: list[str]) -> None:
    """Refuse an argument holding bytes that are not UTF-8: Python hands them over as lone surrogates
    (U+DC80-U+DCFF, ``surrogateescape``), which no tokenizer, store or terminal can take.

    Raises:
        InputError: naming the argument and the first such byte.
    """
    for no, arg in enumerate(argv[1:], start=1):
        bad = next((i for i, ch in enumerate(arg) if "\udc80" <= ch <= "\udcff"), None)
        if bad is not None:
            shown = os.fsencode(arg).decode("utf-8", "backslashreplace")  # the bytes typed: 'what \xff?'
            raise InputError(f"argument {no} ('{shown}') is not UTF-8: byte 0x{ord(arg[bad]) - 0xDC00:02x} at "
                             f"character {bad + 1}; type it in UTF-8 (check the terminal's locale, e.g. LANG=C.UTF-8)")


try:  # typer 0.2x carries its own copy of click, and raises its exceptions
    from typer._click import exceptions as _click_errors
except ImportError:  # pragma: no cover - an older typer on plain click
    from click import exceptions as _click_errors  # type: ignore[no-redef]


def main() -> None:
    """Entry point: run the app and turn TiMem errors, and the command line's own (an unknown option, a value that is
    not a number, a missing argument: click's usage errors, which typer draws as a box), into one-line messages.
    Exit code 1 for a TiMem error, click's (2) for a usage error, 130 for Ctrl-C."""
    import duckdb

    from timem.store import out_of_memory_error

    try:
        _check_argv(sys.argv)
        _mount_bench()
        code = app(standalone_mode=False)  # click's errors come back here instead of being drawn
    except _click_errors.NoArgsIsHelpError as exc:  # `timem keys` alone: its help, as before
        exc.show()
        sys.exit(exc.exit_code)
    except _click_errors.ClickException as exc:  # before TimemError: a --set mistake is both (a usage error)
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        # one line (click lists choices on lines of their own), without pydantic's prefix on a checker's message
        said = " ".join(exc.format_message().replace("Value error, ", "").split())
        typer.echo(f"error: {said}{hint}", err=True)
        sys.exit(exc.exit_code)
    except TimemError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except duckdb.OutOfMemoryException as exc:  # duckdb_memory_mb too small for what the command did
        typer.echo(f"error: {out_of_memory_error(exc)}", err=True)
        sys.exit(1)
    except typer.Abort:
        typer.echo("error: aborted", err=True)
        sys.exit(130)
    if isinstance(code, int) and code:  # typer.Exit(code) of a command
        sys.exit(code)


if __name__ == "__main__":
    main()
