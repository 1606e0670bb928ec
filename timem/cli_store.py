"""``timem tree``, ``stats``, ``check``, ``export``, ``erase``, ``erase-user`` and ``compact``: what a DuckDB file
holds and whether its invariants hold, and erasing from it (each erase ends with a rewrite of the file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from timem import cli_common
from timem.cli_common import ConfigOpt, DbOpt, LlmOpt, UserOpt, _config, _engine
from timem.cli_options import OptionValueError
from timem.models import NodeStatus
from timem.tokens import one_line

if TYPE_CHECKING:
    from timem.engine import MemoryEngine


def tree(user: UserOpt, db: DbOpt = None,
         level: cli_common.LevelOpt = None,
         width: Annotated[int, typer.Option(help="characters of content per node")] = 100,
         config: ConfigOpt = None) -> None:
    """Print a user's tree, top level first, each node with its span, model and id (for `timem erase`)."""
    cfg = _config(config, db)
    with _engine(cfg, with_llm=False, must_exist=True) as eng:
        typer.echo(eng.tree_text(user, level=level, width=width))


def stats(db: DbOpt = None,
          as_json: Annotated[bool, typer.Option("--json", help="print the numbers as one JSON object")] = False,
          config: ConfigOpt = None) -> None:
    """Nodes per level, turns, LLM calls, tokens and cache hits, and the DuckDB memory limit in effect."""
    cfg = _config(config, db)
    with _engine(cfg, with_llm=False, must_exist=True) as eng:
        s = eng.stats()
    if as_json:
        typer.echo(json.dumps(s, indent=2))
    else:
        for k, v in s.items():
            typer.echo(f"{k:>18}: {v}")


def check(db: DbOpt = None, user: Annotated[str | None, typer.Option("--user", help="one user (default: all)")] = None,
          repair: Annotated[bool, typer.Option(help="rebuild the BM25 index and the mentioned dates first")] = False,
          config: ConfigOpt = None) -> None:
    """Verify the tree invariants; exit code 2 on any violation."""
    cfg = _config(config, db)
    with _engine(cfg, with_llm=False, must_exist=True) as eng:
        problems = eng.check(user, repair=repair)
        queue = eng.queue_status(user or "")
    for p in problems:
        typer.echo(f"VIOLATION {p.rule}: user={p.user_id} node={p.node_id}: {p.detail}")
    if not problems:
        typer.echo("ok: containment, calendar windows, links, source turns, turn ids, orphans, FTS and vectors")
    # the queue's state is reported, not a violation: pending jobs are a state, failed ones say why
    hint = " (run `timem consolidate`; `--retry-failed` for failed jobs)" if queue["pending"] + queue["failed"] else ""
    typer.echo(f"consolidation queue: {queue['pending']} pending, {queue['running']} running, {queue['failed']} "
               f"failed, {queue['done']} done{hint}")
    for j in queue["failed_jobs"]:
        typer.echo(f"  failed job {j['id']} user={j['user_id']} attempts={j['attempts']}: {j['error']}")
    if problems:
        raise typer.Exit(2)


YesOpt = Annotated[bool, typer.Option("--yes", help="erase without asking (needed when stdin is not a terminal)")]


def erase(node_ids: Annotated[list[str], typer.Argument(help="memory node ids (see `timem tree`)")],
          db: DbOpt = None, llm: LlmOpt = None, yes: YesOpt = False, config: ConfigOpt = None) -> None:
    """Hard-erase memories: rows, source turns, vectors, FTS, LLM cache, recall traces; then rewrite the file.

    Shows what goes and asks first (it cannot be undone); --yes skips the question. With stdin not a terminal and
    no --yes: a usage error (exit code 2), nothing erased."""
    cfg = _config(config, db, llm_backend=llm)
    with _engine(cfg, must_exist=True) as eng:
        nodes = [eng.store.node(n) for n in node_ids]  # an unknown id: NotFoundError before any question
        for n in nodes:
            turns = f", {len(n.source_turn_ids)} source turn(s)" if n.source_turn_ids else ""
            typer.echo(f"  L{int(n.level)} {n.id} (user {n.user_id}{turns}): {one_line(n.content, 70)}")
        if not yes:
            sources = sum(len(n.source_turn_ids or ()) for n in nodes)
            cli_common.confirm_or_refuse(f"erase these {len(nodes)} memory(ies) and {sources} source turn(s) for "
                                         "good (cannot be undone)?", "erase")
        cost = eng.delete_memories(node_ids, hard=True, actor="cli")
    typer.echo(f"erased {len(node_ids)} memory(ies); file rewritten in {cost['seconds']:.2f} s "
               f"({cost['bytes_before'] / 1e6:.1f} -> {cost['bytes_after'] / 1e6:.1f} MB)")


def export(user: UserOpt, db: DbOpt = None,
           fmt: Annotated[Literal["json", "jsonl"], typer.Option("--format", help="json: everything stored of the "
                          "user (as the HTTP export); jsonl: the turns, re-importable")] = "json",
           out: Annotated[Path | None, typer.Option("--out", help="file to write (default: stdout for json)")] = None,
           include_forgotten: Annotated[bool, typer.Option(
               "--include-forgotten", help="jsonl: write the forgotten turns too (a re-import remembers them again); "
               "json always lists them, marked \"forgotten\": true")] = False,
           config: ConfigOpt = None) -> None:
    """Export one user: everything stored as JSON, or the turns as JSONL (timestamps at the speaker's offset).

    JSONL leaves the forgotten turns out (it has no mark for them, and a re-import would remember them again) and
    says so on stderr, with how to restore them or write them too (--include-forgotten)."""
    if out is not None and (out.is_dir() or not out.parent.is_dir()):
        raise OptionValueError(f"--out {out}: {'is a folder' if out.is_dir() else 'its folder does not exist'}; "
                               "give a file path in an existing folder")
    if fmt == "jsonl" and out is None:
        raise OptionValueError("--format jsonl writes a file; pass --out PATH")
    if include_forgotten and fmt != "jsonl":
        raise OptionValueError("--include-forgotten is for --format jsonl; the JSON export always lists the "
                               "forgotten turns, marked \"forgotten\": true")
    with _engine(_config(config, db), with_llm=False, must_exist=True) as eng:
        if fmt == "jsonl":
            assert out is not None  # checked above
            written = eng.export_jsonl(user, out, include_forgotten=include_forgotten)
            forgotten = eng.forgotten_turn_ids(user)
            among = f" ({len(forgotten)} forgotten among them)" if include_forgotten and forgotten else ""
            typer.echo(f"wrote {written} turn(s) of {user} to {out}{among}")
            if forgotten and not include_forgotten:
                typer.echo(_left_out(eng, user, forgotten, db), err=True)
            return
        text = json.dumps(eng.export_user(user), ensure_ascii=False, indent=2)
    if out is None:
        typer.echo(text)
    else:
        out.write_text(text + "\n", encoding="utf-8")
        typer.echo(f"wrote the export of {user} to {out}")


#: at most this many segment ids in the line that names the forgotten turns an export left out
_SHOWN_IDS = 6


def _left_out(eng: MemoryEngine, user: str, forgotten: set[str], db: Path | None) -> str:
    """The stderr line of a JSONL export that left ``forgotten`` turns out: how many, and the three ways to have
    them (restore their segments first, --include-forgotten, the JSON export)."""
    segments = [n.id for n in eng.nodes(user, 1, status=NodeStatus.DELETED)
                if any(t in forgotten for t in n.source_turn_ids or ())]
    more = len(segments) > _SHOWN_IDS
    shown = " ".join(segments[:_SHOWN_IDS]) + (" …" if more else "")
    at = f" --db {db}" if db is not None else ""
    return (f"left out {len(forgotten)} forgotten turn(s) of {user} (a re-import would remember them again): "
            f"`timem restore {shown} --user {user}{at}` brings them back first"
            + (f" (the first {_SHOWN_IDS} of {len(segments)} segments)" if more else "")
            + f", --include-forgotten writes them too, and `timem export --user {user}{at}` (JSON) lists them "
            "marked \"forgotten\": true, with the ids of their segments (\"status\": \"deleted\")")


def erase_user(user: Annotated[str, typer.Argument(help="the user id to erase")], db: DbOpt = None,
               yes: YesOpt = False, config: ConfigOpt = None) -> None:
    """Erase everything of one user, then rewrite the file so that no erased text remains in it.

    Shows what goes (turns, sessions, memories, items) and asks first (it cannot be undone); --yes skips the
    question. With stdin not a terminal and no --yes: a usage error (exit code 2), nothing erased."""
    cfg = _config(config, db)
    with _engine(cfg, with_llm=False, must_exist=True) as eng:
        eng.require_user(user)
        # every status: the erase removes the forgotten and superseded ones too (the preview counted active only)
        going = (f"{len(eng.store.turns(user))} turn(s) in {len(eng.store.sessions(user))} session(s), "
                 f"{len(eng.store.nodes(user, status=None))} memory node(s), "
                 f"{len(eng.store.items(user, status=None))} memory item(s)")
        typer.echo(f"user {user}: {going}, and its recall traces, LLM cache and call log entries")
        if not yes:
            cli_common.confirm_or_refuse(f"erase user {user} for good (cannot be undone)?", "erase-user")
        counts = eng.erase_user(user, actor="cli")
    rows = ", ".join(f"{v} {k}" for k, v in counts.items() if not k.startswith("file_"))
    typer.echo(f"erased user {user}: {rows}; file rewritten in {counts['file_seconds']:.2f} s "
               f"({counts['file_bytes_before'] / 1e6:.1f} -> {counts['file_bytes_after'] / 1e6:.1f} MB)")


def compact(db: DbOpt = None, config: ConfigOpt = None) -> None:
    """Rewrite the database file (what every hard erase does last), e.g. after an interrupted erase."""
    cfg = _config(config, db)
    with _engine(cfg, with_llm=False, must_exist=True) as eng:
        cost = eng.compact()
    typer.echo(f"rewrote {cfg.store.db_path} in {cost['seconds']:.2f} s ({cost['bytes_before'] / 1e6:.1f} -> "
               f"{cost['bytes_after'] / 1e6:.1f} MB)")


def register(app: typer.Typer) -> None:
    """Add ``tree``, ``stats``, ``check``, ``erase``, ``export``, ``erase-user`` and ``compact`` to the ``timem`` app
    (after ``consolidate``, before ``ask``: the order of ``timem --help``)."""
    app.command()(tree)
    app.command()(stats)
    app.command()(check)
    app.command()(erase)
    app.command()(export)
    app.command("erase-user")(erase_user)
    app.command()(compact)
