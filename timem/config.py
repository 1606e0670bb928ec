"""All settings, resolved once, in one place.

Precedence (lowest to highest): built-in defaults < TOML file < ``TIMEM_*`` environment
variables < keyword overrides. Nothing here runs at import time: call :func:`load_config`
once at the edge (CLI ``main``, the studio's ``app.py``, a test) and pass the result down.

:class:`Config` is nested by concern (:mod:`timem.settings`): ``config.store``, ``config.time``,
``config.llm``, ``config.embedding``, ``config.consolidation``, ``config.recall``,
``config.memory``, ``config.service``. A TOML file uses tables of the same names::

    [llm]
    llm_backend = "none"

    [recall]
    token_budget = 500

    [recall.quotas.simple]
    1 = 40

A setting's name is unique across sections, so everything that names one setting at a time uses the
plain name: ``TIMEM_*`` variables (the name upper-cased: ``TIMEM_DB_PATH``, ``TIMEM_LLM_BACKEND``,
``TIMEM_TOKEN_BUDGET``), ``--set token_budget=500``, recipe overrides, :meth:`Config.with_overrides`,
and keys at the top of a TOML file (the flat layout of earlier releases, still read).
``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` are honoured when the ``TIMEM_`` ones are unset.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from timem.errors import ConfigError
from timem.settings import (
    DEFAULT_CONSOLIDATION_MODE,
    DEFAULT_CONSOLIDATION_MODES,
    DEFAULT_EXTRACTIVE_CAPS,
    DEFAULT_GATES,
    DEFAULT_QUOTAS,
    PAPER_QUOTAS,
    SECTION_OF,
    SECTIONS,
    Complexity,
    ConsolidationSettings,
    EmbeddingSettings,
    LLMSettings,
    MemorySettings,
    ServiceSettings,
    StoreSettings,
    TimeSettings,
)
from timem.settings_recall import RecallSettings

__all__ = ["DEFAULT_CONSOLIDATION_MODE", "DEFAULT_CONSOLIDATION_MODES", "DEFAULT_EXTRACTIVE_CAPS", "DEFAULT_GATES",
           "DEFAULT_QUOTAS", "PAPER_QUOTAS", "SECTION_OF", "Complexity", "Config", "load_config", "setting_names"]


class Config(BaseModel):
    """Resolved settings, one typed section per concern. Immutable; build with :func:`load_config`.

    The constructor takes sections (``Config(recall={"token_budget": 500})``) and plain setting names
    (``Config(token_budget=500)``) alike. An unset ``consolidation_mode`` / ``gate`` follows
    ``llm_backend`` (:data:`~timem.settings.DEFAULT_CONSOLIDATION_MODES`,
    :data:`~timem.settings.DEFAULT_GATES`).

    Raises:
        pydantic.ValidationError: an unknown name or an invalid value (:func:`load_config` and
            :meth:`with_overrides` turn it into :class:`~timem.errors.ConfigError`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    store: StoreSettings = Field(default_factory=StoreSettings)
    time: TimeSettings = Field(default_factory=TimeSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    consolidation: ConsolidationSettings = Field(default_factory=ConsolidationSettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    service: ServiceSettings = Field(default_factory=ServiceSettings)

    @model_validator(mode="before")
    @classmethod
    def _sections(cls, values: Any) -> Any:
        """Put plain setting names into their sections; fill the backend-dependent defaults."""
        if not isinstance(values, dict):
            return values
        nested: dict[str, Any] = {}
        for key, value in values.items():
            if key in SECTIONS:
                section = value.model_dump() if isinstance(value, BaseModel) else value
                if not isinstance(section, Mapping):
                    raise ValueError(f"[{key}] must be a table of settings, not {value!r}")
                for name, v in section.items():
                    _put(nested, key, name, v)
            elif key in SECTION_OF:
                _put(nested, SECTION_OF[key], key, value)
            else:
                nested[key] = value  # unknown: extra="forbid" names it
        backend = nested.get("llm", {}).get("llm_backend", "local")
        consolidation = nested.setdefault("consolidation", {})
        if consolidation.get("consolidation_mode") is None:
            consolidation["consolidation_mode"] = DEFAULT_CONSOLIDATION_MODES.get(backend, DEFAULT_CONSOLIDATION_MODE)
        recall = nested.setdefault("recall", {})
        if recall.get("gate") is None:
            recall["gate"] = DEFAULT_GATES.get(backend, "score")
        return nested

    def flat(self) -> dict[str, Any]:
        """Every setting by its plain name (python values)."""
        return {name: value for sec in SECTIONS for name, value in getattr(self, sec).model_dump().items()}

    def trace_settings(self) -> dict[str, Any]:
        """What shapes a recall, recorded in every recall trace: ``recall`` and ``memory`` whole, plus the
        time zone and the L1 leaf unit (flat names, JSON-ready after ``model_dump(mode="json")``)."""
        return {**self.recall.model_dump(), **self.memory.model_dump(), "timezone": self.time.timezone,
                "l1_unit": self.consolidation.l1_unit}

    def with_overrides(self, **overrides: Any) -> Config:
        """A copy with some settings replaced, by plain name; ``None`` values are ignored.

        Raises:
            ConfigError: an unknown name or an invalid value.
        """
        return _build({**self.flat(), **{k: v for k, v in overrides.items() if v is not None}})


def _put(nested: dict[str, Any], section: str, name: str, value: Any) -> None:
    if SECTION_OF.get(name, section) != section:
        raise ValueError(f"{name} belongs in [{SECTION_OF[name]}], not [{section}]")
    if name in nested.get(section, {}):
        raise ValueError(f"{name} is set twice (at the top and in [{section}]); set it once")
    nested.setdefault(section, {})[name] = value


def setting_names() -> tuple[str, ...]:
    """The plain names of every setting (as ``TIMEM_*`` variables, ``--set`` and recipes use them)."""
    return tuple(SECTION_OF)


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, [*SECTION_OF, *SECTIONS], n=1, cutoff=0.75)
    return f" (did you mean {close[0]}?)" if close else ""


def _problem(error: Any, origin: Mapping[str, str]) -> str:
    """One validation error as ``where (from where): what``; an unknown name gets a spelling suggestion."""
    loc = [str(x) for x in error["loc"]]
    where = ".".join(loc)
    source = next((f" (from {origin[x]})" for x in reversed(loc) if x in origin), "")
    if error["type"] == "extra_forbidden":
        return f"unknown setting {where}{source}{_suggest(loc[-1])}"
    msg = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}{source}: {msg}" if loc else msg


def _build(values: Mapping[str, Any], origin: Mapping[str, str] | None = None) -> Config:
    """``Config(**values)``; ``origin`` names where a setting came from (a file, a ``TIMEM_*`` variable) for errors.

    Raises:
        ConfigError: one line naming each bad setting, where it came from and what is wrong with it.
    """
    try:
        return Config(**values)
    except ValidationError as exc:
        msgs = "; ".join(_problem(e, origin or {}) for e in exc.errors())
        raise ConfigError(f"invalid TiMem setting: {msgs}. Fix the config file, TIMEM_* variable or flag.") from exc


#: dict-valued settings: TOML tables only (no TIMEM_* variable)
_TABLE_FIELDS = ("quotas", "level_modes", "extractive_caps")


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """The settings given as ``TIMEM_*`` variables. A variable named like a setting that is not one (a typo such
    as ``TIMEM_TOKEN_BUDGT``) or naming a table setting (``TIMEM_QUOTAS``) is an error, not silently ignored;
    other ``TIMEM_*`` variables (``TIMEM_CONFIG``, test switches) are not settings and are left alone."""
    names = {f"TIMEM_{n.upper()}": n for n in SECTION_OF}
    for var in env:
        if not var.startswith("TIMEM_") or var in names or var == "TIMEM_CONFIG":
            continue
        close = difflib.get_close_matches(var, list(names), n=1, cutoff=0.9)
        if close:
            raise ConfigError(f"{var} is not a TiMem setting; did you mean {close[0]}?")
    out: dict[str, Any] = {}
    for var, name in names.items():
        val = env.get(var)
        if name in _TABLE_FIELDS:
            if val:
                raise ConfigError(f"{var}: {name} is a table; set it in the TOML file "
                                  f"([{SECTION_OF[name]}.{name}]), not in the environment")
            continue
        if val is not None and val != "":
            out[name] = _pairs(val) if name == "user_timezones" else val
    if "openai_api_key" not in out and env.get("OPENAI_API_KEY"):
        out["openai_api_key"] = env["OPENAI_API_KEY"]
    if "openai_base_url" not in out and env.get("OPENAI_BASE_URL"):
        out["openai_base_url"] = env["OPENAI_BASE_URL"]
    return out


def _pairs(text: str) -> dict[str, str]:
    """``"a=Asia/Tokyo,b=UTC"`` -> ``{"a": "Asia/Tokyo", "b": "UTC"}``."""
    out = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        user, sep, zone = item.partition("=")
        if not sep or not user.strip() or not zone.strip():
            raise ConfigError(f"TIMEM_USER_TIMEZONES item {item!r} is not USER=ZONE; write e.g. "
                              "'kaito=Asia/Tokyo,ana=Europe/Lisbon'")
        out[user.strip()] = zone.strip()
    return out


def _flat_file(data: Mapping[str, Any], file: Path) -> dict[str, Any]:
    """A TOML document as plain names: section tables are opened, top-level names kept."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        items = value.items() if key in SECTIONS and isinstance(value, Mapping) else [(key, value)]
        for name, v in items:
            if key in SECTIONS and SECTION_OF.get(name, key) != key:
                raise ConfigError(f"{file}: {name} belongs in [{SECTION_OF[name]}], not [{key}]; move it there")
            if name in out:
                raise ConfigError(f"{file}: {name} is set twice; set it once, in [{SECTION_OF.get(name, '?')}]")
            out[name] = v
    if "quotas" in out:
        out["quotas"] = {c: {int(k): int(v) for k, v in q.items()} for c, q in out["quotas"].items()}
    return out


def load_config(path: str | Path | None = None, env: Mapping[str, str] | None = None, **overrides: Any) -> Config:
    """Resolve the settings: defaults < TOML file < ``TIMEM_*`` env < ``overrides``.

    Args:
        path: a TOML file with one table per section (``[store]``, ``[recall]``, ...; see the module doc),
            or plain names at the top (optionally inside a ``[timem]`` table). ``None`` reads
            ``$TIMEM_CONFIG`` if set, else ``./timem.toml`` if it exists, else nothing.
        env: the environment to read (default ``os.environ``); tests pass a dict.
        overrides: values from flags, by plain name; ``None`` values are ignored.

    Raises:
        ConfigError: the file is unreadable, a name is unknown or set twice, or a value is invalid.
    """
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    file = Path(path) if path else (Path(env["TIMEM_CONFIG"]) if env.get("TIMEM_CONFIG") else Path("timem.toml"))
    if path or env.get("TIMEM_CONFIG") or file.exists():
        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config file {file}: {exc}. Fix or remove it.") from exc
        from_file = _flat_file(data.get("timem", data), file)
        values.update(from_file)
        origin.update(dict.fromkeys(from_file, str(file)))
    from_env = _from_env(env)
    values.update(from_env)
    origin.update({name: f"TIMEM_{name.upper()}" for name in from_env})
    flags = {k: v for k, v in overrides.items() if v is not None}
    values.update(flags)
    for name in flags:
        origin.pop(name, None)
    return _build(values, origin)
