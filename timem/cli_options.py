"""The ``--set KEY=VALUE`` option and the help text's line breaks, shared by the command line (:mod:`timem.cli_common`)
and ``timem bench`` (:mod:`timem.bench.cli`), which sits below the command line's layer: one parser for both.

A ``--set`` mistake (a pair without ``=``, a KEY that is not a setting, a VALUE the setting does not take, a KEY
that a flag of the command also gives) is a usage error of the command line, exit code 2 like an unknown option:
:class:`SetOptionError`, a :class:`~timem.errors.ConfigError` that the CLI library draws as its own usage error.
The option's callback checks every pair as the command line is parsed, before the command runs.

The other options' value checks share its kind of error: :class:`OptionValueError` (``--llm foo``, ``--level 9``; the
callback :func:`one_of` for an option that takes one of a few words, :func:`at_least_one` for a count,
:func:`checked_sample` and :func:`dataset_flags` for ``--sample`` and ``--limit``), a usage error naming the flag and
what it takes.
"""

from __future__ import annotations

import difflib
import inspect
import json
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import typer
from pydantic import ValidationError

from timem.config import SECTION_OF, Config
from timem.errors import ConfigError, UnknownSampleError
from timem.settings import SECTIONS


class OptionValueError(ConfigError, typer.BadParameter):
    """A value of an option or argument that the command line refuses (``--llm foo``, ``--level 9``, ``--gate maybe``,
    ``--at`` that is not a time, a flag that needs another): a usage error of the command line (exit code 2, as
    click's own usage errors), and a :class:`~timem.errors.ConfigError` to code that calls the check itself. The
    message names the flag and what to give instead (its valid values)."""

    def format_message(self) -> str:
        """The message as it is (click's ``Invalid value for '--x':`` prefix would name the flag twice)."""
        return self.message


class SetOptionError(OptionValueError):
    """A ``--set KEY=VALUE`` mistake: a usage error of the command line (exit code 2, as click's own usage errors),
    and a :class:`~timem.errors.ConfigError` to code that calls :func:`setting_overrides` itself. The message starts
    with ``--set KEY=VALUE`` and says what to give instead."""


def one_of(flag: str, values: Sequence[str], *, omitted: str = "") -> Callable[[str | None], str | None]:
    """An option's callback that refuses a value other than ``values`` as the command line is parsed (a usage error,
    exit code 2), e.g. ``one_of("--gate", ("llm", "score", "off"), omitted="the configured gate")``; ``None`` (the
    option not given) passes. ``omitted``: what leaving the option out means, named in the message."""
    def check(value: str | None) -> str | None:
        if value is not None and value not in values:
            tail = f", or omit it for {omitted}" if omitted else ""
            raise OptionValueError(f"unknown {flag} {value!r}; use one of {', '.join(values)}{tail}")
        return value

    return check


def at_least_one(flag: str, *, omitted: str) -> Callable[[int | None], int | None]:
    """An option's callback that refuses a count below 1 as the command line is parsed (a usage error, exit code 2),
    e.g. ``at_least_one("--limit", omitted="every instance")`` (``--limit 0`` imported nothing, ``--limit -3`` was
    one TiMem error after the file was read); ``None`` (the option not given) passes. ``omitted``: what leaving the
    option out means, named in the message."""
    def check(value: int | None) -> int | None:
        if value is not None and value < 1:
            raise OptionValueError(f"{flag} {value} is below 1; give a whole number of 1 or more, or omit it for "
                                   f"{omitted}")
        return value

    return check


def sample_ids(sample: str | None) -> list[str] | None:
    """``--sample`` (``timem ingest``, ``eval-recall``, ``bench``) as a list of ids; ``None``: every conversation.

    Raises:
        OptionValueError: a value that names no id (``" , "``): a usage error, exit code 2.
    """
    if sample is None:
        return None
    ids = [s.strip() for s in sample.split(",") if s.strip()]
    if not ids:
        raise OptionValueError(f"--sample {sample!r} names no conversation; omit it for all, or give ids like conv-26")
    return ids


def checked_sample(sample: str | None) -> str | None:
    """``--sample``'s callback: a value that names no id is a usage error as the command line is parsed."""
    sample_ids(sample)
    return sample


def dataset_flags(fmt: str, *, sample: str | None = None, limit: int | None = None) -> None:
    """Refuse ``--sample`` and ``--limit`` with a ``--format`` (or benchmark) they do not apply to: ``--limit`` picks
    the first N LongMemEval instances, ``--sample`` LoCoMo conversations or LongMemEval instances; a JSONL file is
    imported whole.

    Raises:
        OptionValueError: a flag the format does not take (a usage error, exit code 2).
    """
    if limit is not None and fmt != "longmemeval":
        raise OptionValueError(f"--limit takes the first N LongMemEval instances and does not apply to {fmt}; leave "
                               "it out" + (", or pick conversations with --sample ID,ID" if fmt == "locomo" else ""))
    if sample is not None and fmt not in ("locomo", "longmemeval"):
        raise OptionValueError(f"--sample picks LoCoMo conversations or LongMemEval instances and does not apply to "
                               f"{fmt}, which is imported whole; leave it out")


@contextmanager
def samples_in_file(sample: str | None) -> Iterator[None]:
    """Around reading a dataset file with ``--sample``'s ids: an id the file does not hold (the loader's
    :class:`~timem.errors.UnknownSampleError`) is a usage error naming ``--sample`` and the ids to give instead.

    Raises:
        OptionValueError: in place of the loader's UnknownSampleError (a usage error, exit code 2).
    """
    try:
        yield
    except UnknownSampleError as exc:
        held = exc.available
        shown = ", ".join(held[:10]) + (f", ... ({len(held)} in all)" if len(held) > 10 else "")
        raise OptionValueError(f"--sample {sample!r} names {', '.join(exc.unknown)}, which {exc.file or 'the file'} "
                               f"does not hold; use ids it holds ({shown}), or omit --sample for all") from exc


def setting_values(name: str) -> tuple[str, ...]:
    """The values a setting of a fixed set of words takes (``llm_backend``: local, openai, none), for a flag that
    sets it."""
    annotation = _annotation(name)
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return tuple(str(a) for a in get_args(annotation))


def _set_option(pairs: list[str] | None) -> list[str] | None:
    """The option's callback: every pair is checked as the command line is parsed (a mistake is a usage error)."""
    setting_overrides(pairs)
    return pairs


SetOpt = Annotated[list[str] | None, typer.Option("--set", metavar="KEY=VALUE", callback=_set_option,
                                                 help="setting override KEY=VALUE (repeatable), e.g. "
                                                      "--set token_budget=500 (docs/configuration.md)")]


#: an example value of each table setting, for a ``--set`` mistake's message
_TABLE_EXAMPLES = {"quotas": '{"simple": {"1": 60, "2": 4}}', "level_modes": '{"5": "hybrid"}',
                   "extractive_caps": '{"2": 120}', "user_timezones": '{"kaito": "Asia/Tokyo"}'}


def _expects(annotation: Any, example: str | None = None) -> str:
    """What a setting of this type takes, in words: ``an integer``, ``one of llm, score, off``, ....; ``example``: a
    value of a table setting."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _expects(get_args(annotation)[0], example)
    if origin is Literal:
        return "one of " + ", ".join(str(a) for a in get_args(annotation))
    if origin in (Union, types.UnionType):
        return " or ".join(_expects(a, example) for a in get_args(annotation) if a is not type(None))
    if origin is dict:
        shown = example or '{"a": 1}'
        return f"a JSON object (e.g. {shown}; a table in the TOML file is easier)"
    words = {bool: "true or false", int: "an integer", float: "a number", str: "text"}
    return words.get(annotation, "a path" if getattr(annotation, "__name__", "") == "Path" else "text")


def _annotation(name: str) -> Any:
    return SECTIONS[SECTION_OF[name]].model_fields[name].annotation


def _takes(name: str, value: Any) -> bool:
    """Whether the setting ``name`` takes ``value`` (checked on its own, with every other setting at its default)."""
    try:
        Config(**{name: value})
    except ValidationError:
        return False
    return True


def setting_overrides(pairs: Sequence[str] | None) -> dict[str, Any]:
    """``--set KEY=VALUE`` flags (``timem bench``, ``ask``, ``eval-recall``, ``ingest``, ``consolidate``, ``serve``)
    as overrides by plain setting name; a VALUE that reads as JSON (``500``, ``0.5``, ``true``) is that value, else
    the text as given. Each value is checked on its own, as the setting's type and bounds take it; the settings are
    built together later (:func:`timem.config.load_config`).

    Raises:
        SetOptionError: a pair without ``=``, a KEY that is not a setting's name, or a VALUE the setting refuses.
    """
    out: dict[str, Any] = {}
    for p in pairs or []:
        key, sep, val = p.partition("=")
        key = key.strip()
        if not sep:
            raise SetOptionError(f"--set KEY=VALUE got {p!r}, which has no '='; write the setting's name, '=' and "
                                 "its value, e.g. --set token_budget=500")
        if key not in SECTION_OF:
            close = difflib.get_close_matches(key, list(SECTION_OF), n=1, cutoff=0.75)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise SetOptionError(f"--set KEY=VALUE got {p!r}: {key!r} is not a setting name{hint}; KEY is a "
                                 "setting's plain name, e.g. token_budget (every one in docs/configuration.md)")
        try:
            value: Any = json.loads(val)
        except ValueError:
            value = val
        try:
            Config(**{key: value})
        except ValidationError as exc:
            if value != val and _takes(key, val):  # JSON that is also plain text: an API key 12345 is text
                value = val
            else:
                said = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
                what = _expects(_annotation(key), _TABLE_EXAMPLES.get(key))
                raise SetOptionError(f"--set KEY=VALUE got {p!r}: {key} takes {what}: {said} "
                                     "(docs/configuration.md)") from exc
        out[key] = value
    return out


def with_flags(sets: Mapping[str, Any], flags: Mapping[str, Any]) -> dict[str, Any]:
    """The ``--set`` overrides and a command's own flags (``None``: the flag was not given) as one set of overrides;
    a flag that was not given leaves a ``--set`` of its setting as it is.

    Raises:
        SetOptionError: a ``--set`` names a setting that a given flag also sets (``--set db_path=...`` with ``--db``).
    """
    for name in sorted(sets.keys() & {k for k, v in flags.items() if v is not None}):
        raise SetOptionError(f"--set KEY=VALUE sets {name}, and so does a flag of the command; give only one of "
                             f"--set {name}=... and the flag")
    return {**sets, **{k: v for k, v in flags.items() if v is not None}}  # a flag not given leaves a --set alone


def reflow_help(app: typer.Typer) -> None:
    """Join the lines of each paragraph of every command's help (a docstring, or a ``help=`` text) of ``app`` and its
    sub-apps, so that ``--help`` wraps each paragraph to the terminal.

    typer 0.29's rich help joins the lines of a help's first paragraph only: the later paragraphs, and the first one
    in a group's list of commands, kept the docstring's line breaks, and ``timem forget --help`` broke a sentence in
    the middle ("... with no answer" / "to read (stdin at its end ..."). A paragraph that starts with ``\\b``
    (click's mark for "keep my lines") is kept as written.
    """
    for command in app.registered_commands:
        text = command.help if command.help is not None else inspect.getdoc(command.callback)
        if text is not None:
            command.help = _reflowed(text)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            reflow_help(group.typer_instance)


def _reflowed(text: str) -> str:
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(line.strip() for line in p.splitlines())
                       for p in paragraphs)


#: The values ``--llm`` takes (every command, and ``timem bench``): the ``llm_backend`` setting's.
LLM_BACKENDS: tuple[str, ...] = setting_values("llm_backend")
