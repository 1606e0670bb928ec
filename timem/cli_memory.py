"""``timem segtree …``, ``timem memories …``, ``timem forget`` and ``timem restore``: the segment tree and the
memory layer from the command line."""

from __future__ import annotations

from typing import Annotated

import typer

from timem.cli_common import ConfigOpt, DbOpt, LlmOpt, UserOpt, _config, _engine, confirm_or_refuse
from timem.errors import NotFoundError
from timem.tokens import one_line

segtree_app = typer.Typer(no_args_is_help=True, help="SegTreeMem's segment tree over the L1 memories (the default "
                          "recall index, recall_index = \"segtree\"; built online at ingest).")


@segtree_app.command("build")
def segtree_build(db: DbOpt = None,
                  user: Annotated[str | None, typer.Option("--user", help="one user (default: all)")] = None,
                  rebuild: Annotated[bool, typer.Option(
                      help="from scratch, even if the stored tree is current")] = False,
                  config: ConfigOpt = None) -> None:
    """Build (or extend) the segment tree of a user, or of every user, with the configured segtree_threshold and
    segtree_max_children."""
    cfg = _config(config, db)
    with _engine(cfg, with_llm=False, must_exist=True) as eng:
        if user is not None:
            eng.require_user(user)
        users = [user] if user else eng.users()
        reports = eng.sync_segtree(users, rebuild=rebuild)
    for uid, r in reports.items():
        typer.echo(f"{uid}: {'rebuilt' if r.rebuilt else 'extended'}, {r.added} utterance(s) added, "
                   f"{r.rows} row(s) written")


@segtree_app.command("summarise")
def segtree_summarise(user: UserOpt, db: DbOpt = None, llm: LlmOpt = None,
                      min_height: Annotated[int, typer.Option(help="summarise nodes of this height and above")] = 2,
                      limit: Annotated[int | None, typer.Option(help="at most N nodes in this run")] = None,
                      config: ConfigOpt = None) -> None:
    """Write a one-line LLM topic for each closed segment-tree node of the user (resumable; shown on the
    Timeline's segment-tree view)."""
    cfg = _config(config, db, llm_backend=llm)
    with _engine(cfg, must_exist=True) as eng:
        report = eng.summarise_segment_tree(user, min_height=min_height, limit=limit)
        topics = eng.segment_topics(user)
    typer.echo(f"{user}: {report.written} topic(s) written, {len(report.failed)} failed, {report.pending} pending; "
               f"{len(topics)} node(s) have a topic")
    for node_id, reason in report.failed[:10]:
        typer.echo(f"  {node_id}: {reason}", err=True)


memories_app = typer.Typer(no_args_is_help=True, help="The memory layer: facts and preferences with their validity "
                           "(supersession keeps the old ones as history).")


@memories_app.command("list")
def memories_list(user: UserOpt, db: DbOpt = None,
                  deleted: Annotated[bool, typer.Option("--deleted", help="also forgotten items")] = False,
                  config: ConfigOpt = None) -> None:
    """The user's memory items, oldest first: kind, validity (local days), subject's attribute: value, sources."""
    cfg = _config(config, db)
    with _engine(cfg, with_llm=False, must_exist=True) as eng:
        eng.require_user(user)
        items = eng.memory_items(user, status=None if deleted else "active")
    if not items:
        typer.echo(f"no memory items for {user}")
    for i in items:
        until = i.valid_to.astimezone(cfg.time.tz).date().isoformat() if i.valid_to else "now"
        flags = "".join([f" superseded by {i.superseded_by}" if i.superseded_by else "",
                         " [pinned]" if i.pinned else "", " [forgotten]" if i.status == "deleted" else ""])
        typer.echo(f"{i.id}  [{i.kind}, {i.valid_from.astimezone(cfg.time.tz).date()} – {until}] {i.label()} "
                   f"({len(i.source_ids)} source(s), {i.source}){flags}")


@memories_app.command("extract")
def memories_extract(db: DbOpt = None,
                     user: Annotated[str | None, typer.Option("--user", help="one user (default: all)")] = None,
                     llm: LlmOpt = None, config: ConfigOpt = None) -> None:
    """Read the L1 segments (rules) or closed sessions (with an LLM) not read yet into memory items, e.g. for a file
    written before the memory layer; resumable (each segment or session is one transaction)."""
    cfg = _config(config, db, llm_backend=llm)
    with _engine(cfg, with_llm=cfg.llm.llm_backend != "none", must_exist=True) as eng:
        if user is not None:
            eng.require_user(user)
        reports = eng.extract_items([user] if user else eng.users())
    for uid, r in reports.items():
        typer.echo(f"{uid}: {r.units} unit(s) read, {r.added} item(s) added, {r.merged} merged, {r.superseded} "
                   f"superseded, {r.ended} ended"
                   + (f"; {len(r.failures)} session(s) failed (audited)" if r.failures else ""))


@memories_app.command("pin")
def memories_pin(item_id: Annotated[str, typer.Argument(help="item id (see `timem memories list`)")], db: DbOpt = None,
                 unpin: Annotated[bool, typer.Option("--unpin", help="take it out of the pinned profile")] = False,
                 config: ConfigOpt = None) -> None:
    """Pin an item into the answer prompt's profile (or take it out with --unpin)."""
    cfg = _config(config, db)
    with _engine(cfg, with_llm=False, must_exist=True) as eng:
        item = eng.pin_item(item_id, not unpin, actor="cli")
    typer.echo(f"{'unpinned' if unpin else 'pinned'}: {item.label()}")


def forget(text: Annotated[str, typer.Argument(help='what to forget, e.g. "I work at Blue Harbor"')], user: UserOpt,
           db: DbOpt = None, yes: Annotated[bool, typer.Option("--yes", help="forget without asking (needed when stdin "
                                                               "is not a terminal)")] = False,
           config: ConfigOpt = None) -> None:
    """Show the memory items and L1 segments matching TEXT, then soft-delete them (asks first unless --yes).

    When nothing matches, the error says why and what to try (exit code 1). As `timem erase`, it asks only at a
    terminal: with stdin not a terminal (a script, a pipe, </dev/null) and no --yes it is a usage error (exit code
    2) and nothing is forgotten. Answering no forgets nothing and exits with code 1 ("aborted")."""
    cfg = _config(config, db, llm_backend="none")
    with _engine(cfg, with_llm=False, must_exist=True) as eng:
        plan = eng.forget(user, text)
        if plan.empty:  # an error, not a quiet line: a script's `timem forget X --yes` learns that X was not found
            said = plan.describe()
            raise NotFoundError(said[0].lower() + said[1:] + f" List them with `timem memories list --user {user}` "
                                f"(facts) and `timem tree --user {user} --level 1` (conversation segments).")
        typer.echo(plan.describe())
        if not yes:  # asked at a terminal only, as `timem erase` (cli_common.confirm_or_refuse)
            confirm_or_refuse(f"forget these {len(plan.items)} item(s) and {len(plan.segments)} segment(s)?", "forget")
        eng.forget(user, text, confirm=True, actor="cli")
    typer.echo(f"forgot {len(plan.items)} item(s) and {len(plan.segments)} segment(s) (soft delete, audited); undo: "
               f"`timem restore ID --user {user}` per segment, Restore on the Memories page of `timem studio --db "
               f"{cfg.store.db_path}`, or POST /v1/users/{user}/memories/ID/restore on `timem serve`; "
               "`timem erase ID` erases a segment for good")


def restore(node_ids: Annotated[list[str], typer.Argument(help="ids of forgotten segments (the \"segment ID\" lines "
                                                                "`timem forget` printed)")],
            user: UserOpt, db: DbOpt = None, config: ConfigOpt = None) -> None:
    """Undo `timem forget` (a soft delete) for each segment ID: it is active again, its parents are re-consolidated,
    and the facts read from it come back, except those forgotten by name (printed as staying forgotten).

    Every id is checked first: an id that is no memory of the user, or one that is not forgotten, is an error
    (exit code 1) and nothing is restored."""
    cfg = _config(config, db, llm_backend="none")
    with _engine(cfg, with_llm=False, must_exist=True) as eng:
        restored = eng.restore_memories(user, node_ids, actor="cli")
    for r in restored:
        typer.echo(f"segment {r.segment.id}: {one_line(r.segment.content, 120)}")
        typer.echo("".join(f"  back with it: item {i.id}: {i.label()}\n" for i in r.items)
                   + "".join(f"  stays forgotten (forgotten by name): item {i.id}: {i.label()}\n"
                             for i in r.still_forgotten), nl=False)
    facts = sum(len(r.items) for r in restored)
    typer.echo(f"restored {len(restored)} segment(s) and {facts} item(s) (audited)")


def register(app: typer.Typer) -> None:
    """Add ``forget`` and ``restore`` to the ``timem`` app."""
    app.command()(forget)
    app.command()(restore)
