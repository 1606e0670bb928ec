"""What every ``timem`` subcommand module shares: option types, the config read, the engine opener."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import typer

from timem.cli_options import LLM_BACKENDS, OptionValueError, one_of, setting_values, with_flags
from timem.config import Config, load_config
from timem.errors import InputError, NotFoundError
from timem.ids import check_service_id
from timem.models import Level
from timem.settings import Complexity

if TYPE_CHECKING:
    from rich.console import Console

    from timem.datasets import ImportedUser
    from timem.engine import MemoryEngine
    from timem.recall.gating import GateMode

T = TypeVar("T")

def _flags_without_a_value_type_in_help() -> None:
    """Show a flag (``--yes``, ``--trace``, ``--flush/--no-flush``, ``--help``) as a plain flag in ``--help``.

    typer 0.29's rich help draws the type column from ``TyperOption.display_type_rich``, which gives ``<bool>`` for a
    flag as for an option that takes a value, so help read ``--yes <bool>`` although ``--yes true`` is refused (a flag
    takes no value). Its plain (non-rich) help already leaves the type out for a flag; this makes the rich one agree.
    The options are declared right (a ``bool`` option is a flag); the fault is only in how the help draws them.
    """
    from typer.core import TyperOption

    drawn = getattr(TyperOption, "display_type_rich", None)
    if drawn is None or getattr(drawn, "_timem_flags", False):  # an older typer without it, or patched already
        return

    def display_type_rich(self: TyperOption, ctx: object) -> str | None:
        if self.is_flag and not self.count:
            return None
        shown: str | None = drawn(self, ctx)
        return shown

    display_type_rich._timem_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_without_a_value_type_in_help()


def _repeated_arguments_without_a_python_type_in_help() -> None:
    """Show an argument that takes several values (``timem erase NODE_IDS...``, ``timem bench report RUN_DIRS...``) as
    ``<str>...`` in ``--help``, not as the Python type ``<list[str]>`` (typer 0.29's ``TyperArgument.display_type_rich``
    draws the annotation; its options already show ``<str>...``, or their metavar)."""
    from typer.core import TyperArgument

    drawn = getattr(TyperArgument, "display_type_rich", None)
    if drawn is None or getattr(drawn, "_timem_lists", False):  # an older typer without it, or patched already
        return

    def display_type_rich(self: TyperArgument, ctx: object) -> str | None:
        shown: str | None = drawn(self, ctx)
        if shown and shown.startswith("<list[") and shown.endswith("]>"):
            return f"<{shown[6:-2].lower()}>..."  # <path>..., as a single path is drawn
        return shown

    display_type_rich._timem_lists = True  # type: ignore[attr-defined]
    TyperArgument.display_type_rich = display_type_rich  # type: ignore[method-assign,assignment]


_repeated_arguments_without_a_python_type_in_help()


def _help_as_wide_as_a_dumb_terminal() -> None:
    """Draw ``--help`` and usage errors as wide as the terminal when its ``TERM`` is ``dumb`` or ``unknown`` (an IDE's
    or an editor's terminal, some CI logs), as on any other terminal: ``COLUMNS``, else the terminal's own width.

    rich draws 80 columns on such a terminal whatever its width and ``COLUMNS`` (unless ``LINES`` is set too), so a
    new-user trial's ``COLUMNS=120 timem forget --help`` broke every paragraph at 80 columns in a 120-column window.
    typer's ``TERMINAL_WIDTH`` still wins.
    """
    import shutil

    from typer import rich_utils

    made = rich_utils._get_rich_console
    if getattr(made, "_timem_width", False):  # patched already
        return

    def console(stderr: bool = False) -> Console:
        drawn = made(stderr=stderr)
        if drawn.is_dumb_terminal:  # shutil: COLUMNS / LINES, else the terminal's size, else 80 x 24
            size = shutil.get_terminal_size()
            drawn.size = (rich_utils.MAX_WIDTH or size.columns, size.lines)
        return drawn

    console._timem_width = True  # type: ignore[attr-defined]
    rich_utils._get_rich_console = console


_help_as_wide_as_a_dumb_terminal()

DbOpt = Annotated[Path | None, typer.Option("--db", help="DuckDB file (default: config db_path)")]
UserOpt = Annotated[str, typer.Option("--user", help="user id (LoCoMo: the sample_id, e.g. conv-26)")]
LlmOpt = Annotated[str | None, typer.Option(
    "--llm", callback=one_of("--llm", LLM_BACKENDS, omitted="the llm_backend setting"),
    help="the LLM: " + " | ".join(LLM_BACKENDS) + " (default: the llm_backend setting, local)")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="TOML config file")]
ModeOpt = Annotated[str | None, typer.Option("--mode", callback=one_of("--mode", setting_values("consolidation_mode"),
                                                                     omitted="the consolidation_mode setting"),
                                             help="L2-L5 consolidation of new windows: extractive (no "
                                             "LLM) | hybrid (+ LLM title) | abstractive (LLM summary); default: "
                                                  "the consolidation_mode setting")]


def _config(config: Path | None, db: Path | None, sets: dict[str, Any] | None = None, **kw: object) -> Config:
    """The settings of one command: ``--config`` file < ``TIMEM_*`` env < ``--set`` (``sets``, from
    :func:`setting_overrides`) and the command's own flags (``kw``; ``None``: not given).

    Raises:
        SetOptionError: a ``--set`` names a setting that a flag of the command also gives (``--set db_path=...`` with
            ``--db``): a usage error (:func:`timem.cli_options.with_flags`).
        ConfigError: as :func:`timem.config.load_config`.
    """
    return load_config(config, None, **with_flags(sets or {}, {"db_path": db, **kw}))


_COMPLEXITIES: tuple[Complexity, ...] = ("simple", "hybrid", "complex")
_GATES: tuple[GateMode, ...] = ("llm", "score", "off")


def _complexity(value: str | None) -> Complexity | None:
    """``--complexity`` as the engine takes it (``None``: the planner decides).

    Raises:
        OptionValueError: not simple, hybrid or complex (a usage error, exit code 2).
    """
    if value is None:
        return None
    for c in _COMPLEXITIES:
        if value == c:
            return c
    raise OptionValueError(f"unknown --complexity {value!r}; use one of {', '.join(_COMPLEXITIES)}, or omit it for "
                           "the planner to decide")


def _gate(value: str | None) -> GateMode | None:
    """``--gate`` as the engine takes it (``None`` or empty: the configured gate).

    Raises:
        OptionValueError: not llm, score or off (a usage error, exit code 2).
    """
    if not value:
        return None
    for g in _GATES:
        if value == g:
            return g
    raise OptionValueError(f"unknown --gate {value!r}; use one of {', '.join(_GATES)}, or omit it for the gate "
                           "setting")


def _checked_complexity(value: str | None) -> str | None:
    """``--complexity``'s callback: checked as the command line is parsed, before anything is opened."""
    _complexity(value)
    return value


def _checked_gate(value: str | None) -> str | None:
    """``--gate``'s callback: checked as the command line is parsed, before anything is opened."""
    _gate(value)
    return value


ComplexityOpt = Annotated[str | None, typer.Option(
    "--complexity", callback=_checked_complexity,
    help="skip the planner and recall as this question class: simple | hybrid | complex (default: the planner "
         "decides)")]
GateOpt = Annotated[str | None, typer.Option(
    "--gate", callback=_checked_gate,
    help="which memories pass into the context: llm | score | off (default: the gate setting)")]


def _level(value: int | None) -> int | None:
    """Check ``timem tree --level`` as it is parsed: one of the tree's levels, 1 (L1 segments) to 5 (L5 months).

    Raises:
        OptionValueError: outside 1-5 (a usage error, exit code 2, as one line; typer's own range check would print
            a boxed message).
    """
    if value is not None and not int(Level.SEGMENT) <= value <= int(Level.PROFILE):
        raise OptionValueError(f"--level {value} is not a level of the tree; use 1 to 5 (1 segments, 2 sessions, "
                               "3 days, 4 weeks, 5 months), or omit it for every level")
    return value


LevelOpt = Annotated[int | None, typer.Option("--level", help="only this level: 1 segments, 2 sessions, 3 days, "
                                              "4 weeks, 5 months (default: every level)", callback=_level)]


def _check_user_ids(users: Sequence[ImportedUser], file: Path) -> None:
    """Refuse a conversation file whose user ids the studio and the memory service would refuse
    (:func:`timem.ids.check_service_id`: no space, ASCII letters, digits, ``.``, ``_``, ``-``), before the database
    is opened: nothing is written. A new-user trial: ``timem ingest`` took "ana smith", which the studio and the
    service then refused.

    Raises:
        InputError: the first such id, with the rule and what to do.
    """
    for u in users:
        try:
            check_service_id(u.user_id)
        except InputError as exc:
            raise InputError(f"{exc.reason}; rename the user in the file (the studio and the memory service take "
                             "no other id)", file=str(file), field="user_id") from exc


def _confirm(question: str, without_prompt: str) -> bool:
    """``typer.confirm(question)`` (default no), except with no answer to read: stdin at its end (Ctrl-D at the
    prompt) is an error saying how to confirm without the prompt (exit code 1), where click aborts as for Ctrl-C (exit
    code 130). Ctrl-C still aborts. ``without_prompt``: what to do instead, e.g. ``"pass --yes to forget without
    asking"``. :func:`confirm_or_refuse` asks only at a terminal.

    Raises:
        InputError: stdin ended before an answer; nothing was confirmed.
    """
    try:
        return typer.confirm(question)
    except typer.Abort as exc:
        if not isinstance(exc.__context__, EOFError):  # Ctrl-C (KeyboardInterrupt): an abort, as asked
            raise
        typer.echo("")  # end the prompt's line
        raise InputError(f"this needs a confirmation, and stdin ended before an answer (Ctrl-D); {without_prompt}, "
                         "or answer y at the prompt") from None


def _stdin_is_terminal() -> bool:
    """Whether stdin is a terminal, so that a prompt can be answered (a test replaces this)."""
    import sys

    return sys.stdin is not None and sys.stdin.isatty()


#: what each command that asks first does, for its messages: (the verb, its past participle, whether it can be undone)
_CONFIRMED = {"erase": ("erase", "erased", False), "erase-user": ("erase", "erased", False),
              "forget": ("forget", "forgotten", True)}


def confirm_or_refuse(question: str, command: str) -> None:
    """Ask ``question`` (default no) before a command that deletes (``timem erase``, ``erase-user``, ``forget``),
    after it has shown what goes; ``--yes`` skips this call. One rule for all three: a confirmation is an answer typed
    at a terminal, by someone who read the preview.

    A new-user trial: ``timem erase-user conv-30 </dev/null`` hard-erased 369 turns with no prompt; later ``timem
    erase`` refused a piped answer while ``timem forget`` took ``echo y |`` (two rules for one question). With no
    terminal on stdin (a script, a pipe, </dev/null) there is nobody to ask: a usage error naming ``--yes`` (exit code
    2), nothing deleted; a piped "y" is no confirmation (it answers a preview nobody read). Declined at the prompt:
    "aborted: nothing erased / forgotten", exit code 1. Ctrl-C aborts (130).

    Raises:
        OptionValueError: stdin is not a terminal and ``--yes`` was not given.
        InputError: stdin ended at the prompt (Ctrl-D).
        typer.Exit: declined at the prompt (code 1).
    """
    verb, done, undoable = _CONFIRMED[command]
    without = f"pass --yes to {verb} without asking"
    if not _stdin_is_terminal():
        kind = "soft-deletes (undoable)" if undoable else "cannot be undone"
        raise OptionValueError(f"`timem {command}` {kind} and asks for a confirmation typed at a terminal, but stdin "
                               f"is not a terminal (a script, a pipe or </dev/null: an answer piped in is not taken); "
                               f"{without}. Nothing was {done}.")
    if not _confirm(question, without):
        typer.echo(f"aborted: nothing {done}", err=True)  # a script learns that nothing was done
        raise typer.Exit(1)


def _engine(cfg: Config, with_llm: bool = True, *, must_exist: bool = False) -> MemoryEngine:
    """The engine over ``cfg.store.db_path``, to use as ``with _engine(cfg) as eng:`` (the store is closed when the
    block ends); ``must_exist`` (commands that only read) refuses to create a file.

    Raises:
        NotFoundError: ``must_exist`` and no file at ``db_path``. ConfigError, ModelFileError, StoreError: as
            :meth:`timem.engine.MemoryEngine.open`.
    """
    from timem.engine import MemoryEngine

    if must_exist and str(cfg.store.db_path) != ":memory:" and not Path(cfg.store.db_path).exists():
        raise NotFoundError(f"no database at {cfg.store.db_path}; check --db (or TIMEM_DB_PATH), or create it with "
                            "`timem ingest FILE --db PATH`")
    return MemoryEngine.open(cfg, with_llm=with_llm)


def inferred_format(file: Path) -> Literal["locomo", "longmemeval", "jsonl"]:
    """The format of ``file`` for an import without ``--format`` (:func:`timem.datasets.detect.infer_format`), said on
    stderr (``reading chat.jsonl as jsonl (the extension .jsonl); --format names another``).

    Raises:
        OptionValueError: its name and first bytes do not tell (a usage error naming ``--format``, exit code 2).
        InputError: a ``.json`` file that cannot be read.
    """
    from timem.datasets.detect import infer_format

    fmt, why = infer_format(file)
    if fmt is None:
        raise OptionValueError(f"cannot tell the format of {file}: {why}; name it with --format locomo, "
                               "--format longmemeval or --format jsonl (docs/input-formats.md)")
    typer.echo(f"reading {file} as {fmt} ({why}); --format names another", err=True)
    return fmt
