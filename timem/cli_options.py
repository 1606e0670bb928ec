"""The ``--set KEY=VALUE`` option, shared by the command line (:mod:`timem.cli_common`) and ``timem bench``
(:mod:`timem.bench.cli`), which sits below the command line's layer: one parser for both."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from timem.config import SECTION_OF
from timem.errors import ConfigError

SetOpt = Annotated[list[str] | None, typer.Option("--set", metavar="KEY=VALUE",
                                                 help="setting override KEY=VALUE (repeatable), e.g. "
                                                      "--set token_budget=500 (docs/configuration.md)")]


def setting_overrides(pairs: Sequence[str] | None) -> dict[str, Any]:
    """``--set KEY=VALUE`` flags (``timem bench``, ``ask``, ``eval-recall``, ``ingest``, ``consolidate``, ``serve``)
    as overrides by plain setting name; a VALUE that reads as JSON (``500``, ``0.5``, ``true``) is that value, else
    the text as given. The values are checked where the settings are built (:func:`timem.config.load_config`).

    Raises:
        ConfigError: a pair without ``=``, or a KEY that is not a setting's name.
    """
    out: dict[str, Any] = {}
    for p in pairs or []:
        key, sep, val = p.partition("=")
        if not sep or key.strip() not in SECTION_OF:
            raise ConfigError(f"--set expects KEY=VALUE with KEY a setting name (e.g. token_budget), got {p!r}")
        try:
            out[key.strip()] = json.loads(val)
        except ValueError:
            out[key.strip()] = val
    return out
