"""The common shape every importer returns, plus small validation helpers.

Every importer reads a whole file, validates *everything* it is going to return, and only then
returns a list of :class:`ImportedUser`; malformed input raises
:class:`timem.errors.InputError` naming the file, the record and the field, so nothing is
ingested from a half-valid file.

Ids are deterministic so that re-importing the same file yields the same ids (idempotent
re-ingest): a turn's id is :func:`turn_id` ``f"{user_id}:{session_id}:{seq}"``. A user or session id holding
``:`` (:data:`ID_SEPARATOR`) is refused (:func:`check_id`): ``a:b`` + ``c`` and ``a`` + ``b:c`` would give one id.
All datetimes are UTC-aware; naive dataset times are read as wall-clock time in the ``tz``
given to the importer (via :func:`timem.tree.windows.to_utc`).
"""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from dateutil import parser as dateutil_parser
from pydantic import BaseModel, ConfigDict, Field, field_validator

from timem.errors import InputError, TextTooLongError, first_bad_byte
from timem.models import ID_SEPARATOR, MAX_AHEAD, MAX_YEAR, MIN_YEAR, Turn
from timem.tree.windows import offset_minutes, to_utc

__all__ = ["ID_SEPARATOR", "ImportedSession", "ImportedUser", "Question", "ahead_of_clock", "check_id", "check_length",
           "check_name", "check_text", "is_blank", "turn_id"]

#: characters that render as nothing although they are not whitespace (Hangul fillers, braille blank,
#: combining grapheme joiner); every format character (Unicode category Cf: zero-width space and
#: joiners, word joiner, BOM, soft hyphen ...) counts as invisible too
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f")
_ALLOWED_CONTROL = frozenset("\t\n\r")


def check_id(value: str, *, file: str | None = None, record: str | None = None, field: str) -> str:
    """``value`` (a user or session id) unchanged if it holds no :data:`ID_SEPARATOR` and is one line
    (:func:`check_name`).

    Raises:
        InputError: it holds ``:``, a line break or a control character; the message names ``file``, ``record``
            and ``field``.
    """
    if ID_SEPARATOR in value:
        what = field.replace("_", " ")
        raise InputError(f"{what} {value!r} holds ':', which separates the parts of a turn id "
                         "(user:session:seq), so two turns could get the same id; rename it (e.g. '-' for ':')",
                         file=file, record=record, field=field)
    return check_name(value, file=file, record=record, field=field)


def check_user_id(value: str, *, file: str | None = None, record: str | None = None) -> str:
    """``value`` unchanged if a user of a local file may have it: :func:`check_id`, and no ``/``, which the memory
    service reserves for its tenants (``tenant/user``).

    Raises:
        InputError: it holds ``/``, ``:``, a line break or a control character; the message names ``file`` and
            ``record``.
    """
    if "/" in value:
        raise InputError(f"user id {value!r} holds '/', which is reserved for the memory service's tenants "
                         "(tenant/user); rename the user", file=file, record=record, field="user_id")
    return check_id(value, file=file, record=record, field="user_id")


#: Unicode categories refused in names and ids: control characters (newline, tab, carriage return, NUL, ESC,
#: C1 ...) and the line and paragraph separators U+2028 / U+2029
_NOT_IN_NAMES = frozenset({"Cc", "Zl", "Zp"})


def check_name(value: str, *, file: str | None = None, record: str | None = None, field: str) -> str:
    """``value`` (a speaker, user or assistant name, or an id) unchanged if it is one line of text: no lone
    surrogate (:func:`check_text`), no control character at all (newline, tab and carriage return included) and
    no line or paragraph separator. A name is written before every utterance in the recall context
    (``Mia: ...``), so a line break in it would start a line that looks like another speaker's.

    Raises:
        InputError: naming ``file``, ``record`` and ``field``.
    """
    check_text(value, file=file, record=record, field=field)
    for i, ch in enumerate(value):
        if unicodedata.category(ch) in _NOT_IN_NAMES:
            raise InputError(f"a line break or control character U+{ord(ch):04X} at character {i + 1}; a name or id "
                             "is one line of text: remove it", file=file, record=record, field=field)
    return value


def turn_id(user_id: str, session_id: str, seq: int) -> str:
    """The stable id of turn ``seq`` (0-based) of ``session_id`` of ``user_id``: ``user:session:seq``.

    Raises:
        InputError: the user or session id holds ``:`` (:func:`check_id`).
    """
    check_id(user_id, field="user_id")
    check_id(session_id, field="session_id")
    return f"{user_id}{ID_SEPARATOR}{session_id}{ID_SEPARATOR}{seq}"


class ImportedSession(BaseModel):
    """One conversation session: ``turns`` in spoken order (``seq`` 0..n-1, non-empty).

    ``date_label`` is the dataset's own date string for the session (e.g. LoCoMo's
    ``"1:56 pm on 8 May, 2023"``), kept for display; ``start`` is the UTC event time of its first turn.
    """

    model_config = ConfigDict(frozen=True)
    session_id: str
    turns: list[Turn]
    date_label: str

    @property
    def start(self) -> datetime:
        return self.turns[0].event_time

    @property
    def end(self) -> datetime:
        return max(t.event_time for t in self.turns)


class Question(BaseModel):
    """A benchmark question asked of one user's memory.

    ``answer`` is the gold answer as text (numbers are converted with ``str``); ``category`` is the
    dataset's own (LoCoMo: int 1-5, LongMemEval: the ``question_type`` string); ``evidence`` lists
    the ids that support the answer (LoCoMo dia_ids such as ``"D1:3"``, LongMemEval answer session
    ids); ``question_time`` is when the question is asked (UTC) if the dataset says; ``extra``
    holds dataset-specific fields (see each importer).
    """

    model_config = ConfigDict(frozen=True)
    question_id: str
    question: str
    answer: str
    category: str | int
    evidence: list[str] = Field(default_factory=list)
    question_time: datetime | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("question_time")
    @classmethod
    def _aware(cls, v: datetime | None) -> datetime | None:
        if v is not None and (v.tzinfo is None or v.utcoffset() is None):
            raise ValueError("question_time must be timezone-aware (convert naive input with to_utc)")
        return None if v is None else v.astimezone(UTC)


class ImportedUser(BaseModel):
    """One memory owner (the partition key): its sessions in time order and, for benchmarks, questions.

    ``participants`` are the speaker names in the order the dataset introduces them; ``meta`` holds
    importer facts (``dataset``, ``file``, skipped items ...).
    """

    model_config = ConfigDict(frozen=True)
    user_id: str
    participants: list[str]
    sessions: list[ImportedSession]
    meta: dict[str, Any] = Field(default_factory=dict)
    questions: list[Question] = Field(default_factory=list)

    @property
    def turns(self) -> list[Turn]:
        """All turns, session by session."""
        return [t for s in self.sessions for t in s.turns]


# ---------------------------------------------------------------- helpers for importers
def is_blank(text: str) -> bool:
    """Whether ``text`` shows nothing: only whitespace and invisible characters (zero-width space,
    joiners, BOM, soft hyphen, any other format character, Hangul fillers, braille blank)."""
    return all(ch.isspace() or ch in _INVISIBLE or unicodedata.category(ch) == "Cf" for ch in text)


def check_text(value: str, *, file: str | None, record: str | None, field: str) -> str:
    """``value`` unchanged if it can be stored; else an :class:`InputError` naming file, record and field.

    Refused: a lone UTF-16 surrogate (e.g. a JSON ``"\\ud83d"`` escape without its pair: it is not a
    character and cannot be written as UTF-8) and control characters other than tab, newline and
    carriage return (category Cc: NUL, ESC, DEL, C1 controls). Invisible-only text is handled by
    :func:`need` (it counts as empty).
    """
    for i, ch in enumerate(value):
        code = ord(ch)
        if 0xD800 <= code <= 0xDFFF:
            raise InputError(f"a lone surrogate \\u{code:04x} at character {i + 1} (half of a UTF-16 pair, not a "
                             "character); fix the escape in the source or remove it", file=file, record=record,
                             field=field)
        if ch not in _ALLOWED_CONTROL and unicodedata.category(ch) == "Cc":
            raise InputError(f"a control character U+{code:04X} at character {i + 1}; remove it (only tab, "
                             "newline and carriage return are allowed)", file=file, record=record, field=field)
    return value


#: said of a JSON value nested so deep that the parser gives up (Python's recursion limit, ~1000 levels)
TOO_DEEP = "JSON nested too deeply (arrays or objects inside each other beyond the parser's limit); a record is a " \
    "flat object: fix the file"


def check_length(value: str | None, limit: int | None, *, file: str | None = None, record: str | None = None,
                 field: str) -> None:
    """Refuse a turn's ``value`` (text or image caption) longer than ``limit`` characters (``max_turn_chars``);
    ``None`` for either checks nothing.

    Raises:
        TextTooLongError: naming ``file``, ``record`` and ``field``.
    """
    if limit is not None and value is not None and len(value) > limit:
        raise TextTooLongError(f"the {field.replace('_', ' ')} has {len(value):,} characters, more than "
                               f"max_turn_chars = {limit:,}; split it into several turns or raise the limit",
                               file=file, record=record, field=field)


def read_json(path: Path) -> Any:
    """Parse a JSON file; unreadable files, bad JSON and JSON nested too deeply raise :class:`InputError`."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark is allowed, as in JSON Lines
    except UnicodeDecodeError as exc:
        raise InputError(f"the file is not UTF-8 ({first_bad_byte(exc)}); save it as UTF-8", file=str(path)) from exc
    except OSError as exc:  # "No such file or directory", not the path again: the location names it
        raise InputError(f"cannot read the file: {exc.strerror or exc}. Check the path.", file=str(path)) from exc
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise InputError(TOO_DEEP, file=str(path)) from exc
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" and _looks_like_jsonl(text):
            raise InputError("this is JSON Lines (one object per line), not one JSON document; import it as TiMem "
                             "JSONL (--format jsonl; in the studio, Format 'TiMem JSONL')", file=str(path),
                             record=f"line {exc.lineno}") from exc
        raise InputError(f"invalid JSON: {exc.msg}. Fix the file or re-download it.", file=str(path),
                         record=f"line {exc.lineno} column {exc.colno}") from exc


def _looks_like_jsonl(text: str) -> bool:
    """Whether the first two non-empty lines each parse as a JSON object."""
    lines = [ln for ln in text.splitlines() if ln.strip()][:2]
    try:
        return len(lines) == 2 and all(isinstance(json.loads(ln), dict) for ln in lines)
    except (json.JSONDecodeError, RecursionError):
        return False


def need(obj: Any, key: str, kind: type | tuple[type, ...], *, file: str, record: str,
         allow_empty: bool = False) -> Any:
    """``obj[key]`` checked to exist, to be of ``kind`` and (for str/list) non-empty.

    A string is also checked with :func:`check_text` (no lone surrogates or control characters);
    invisible-only text (:func:`is_blank`) is empty: refused, or returned as ``""`` with ``allow_empty``.
    """
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", file=file, record=record)
    if key not in obj or obj[key] is None:
        raise InputError("missing field", file=file, record=record, field=key)
    val = obj[key]
    if isinstance(val, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise InputError(f"expected {_kind_name(kind)}, got a boolean", file=file, record=record, field=key)
    if not isinstance(val, kind):
        raise InputError(f"expected {_kind_name(kind)}, got {type(val).__name__}", file=file, record=record,
                         field=key)
    if isinstance(val, str):
        check_text(val, file=file, record=record, field=key)
        if is_blank(val):
            if not allow_empty:
                what = "empty field" if not val.strip() else "empty field (only invisible characters such as " \
                    "zero-width spaces)"
                raise InputError(what, file=file, record=record, field=key)
            return ""  # callers skip empty text; invisible-only text is empty text
        return val
    if isinstance(val, list) and not val and not allow_empty:
        raise InputError("empty field", file=file, record=record, field=key)
    return val


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", list: "a list", dict: "an object", int: "an integer", float: "a number",
             bool: "a boolean"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


#: LongMemEval's "2023/05/30 (Tue) 23:40" (weekday and time optional)
_SLASHED = re.compile(
    r"^(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(?:(\d{1,2}):(\d{2})(?::(\d{2}))?)?$")
_D1, _D2 = datetime(2000, 1, 1), datetime(2001, 2, 2)


#: a year written with three or four digits ("0001", "0999", "2023")
_LONG_YEAR = re.compile(r"(?<!\d)(\d{3,4})(?!\d)")


def _written_year(text: str, dt: datetime) -> datetime:
    """``dt`` (dateutil's reading of ``text``) with the year as written: dateutil reads "0001" as 2001 and "0023"
    as 2023 (two-digit years are put in the current century even when written with four digits).

    Raises:
        ValueError: the written year makes the date impossible (29 February of a common year).
    """
    years = {int(y) for y in _LONG_YEAR.findall(text)}
    if len(years) == 1 and dt.year not in years:
        return dt.replace(year=years.pop())
    return dt


def parse_when(raw: str, tz: ZoneInfo, *, file: str, record: str, field: str) -> datetime:
    """Parse a dataset timestamp into UTC; naive values are wall-clock time in ``tz``
    (:func:`parse_when_offset` without the offset)."""
    return parse_when_offset(raw, tz, file=file, record=record, field=field)[0]


def parse_when_offset(raw: str, tz: ZoneInfo, *, file: str, record: str, field: str) -> tuple[datetime, int]:
    """Parse a dataset timestamp into ``(UTC instant, UTC offset in minutes of the written local time)``;
    naive values are wall-clock time in ``tz`` (the offset is then ``tz``'s at that time).

    Accepts ``"2023/05/30 (Tue) 23:40"`` (LongMemEval), ISO 8601 (``"2023-05-08T13:56"``, with or
    without offset) and free text with a written month (``"1:56 pm on 8 May, 2023"``, LoCoMo).
    A value without a full calendar date (year, month and day) is rejected.

    Raises:
        InputError: the value cannot be parsed (names ``file``, ``record`` and ``field``).
    """
    text = raw.strip()
    try:
        if m := _SLASHED.match(text):
            y, mo, d, h, mi, sec = (int(g) if g else 0 for g in m.groups())
            dt = datetime(y, mo, d, h, mi, sec)
        else:
            try:
                dt = datetime.fromisoformat(text)
            except ValueError:
                a, b = (dateutil_parser.parse(text, default=x) for x in (_D1, _D2))
                if (a.year, a.month, a.day) != (b.year, b.month, b.day):
                    raise ValueError("no full calendar date (year, month and day)") from None
                dt = _written_year(text, a)
    except (ValueError, OverflowError) as exc:
        raise InputError(f"unparseable date/time {raw!r} ({exc}); use e.g. '2023-05-08T13:56' or "
                         "'1:56 pm on 8 May, 2023'", file=file, record=record, field=field) from exc
    return utc_and_offset(dt, tz, raw, file=file, record=record, field=field)


def utc_and_offset(dt: datetime, tz: ZoneInfo, raw: str, *, file: str | None, record: str | None,
                   field: str) -> tuple[datetime, int]:
    """``(dt in UTC, UTC offset in minutes of the local time dt was written in)``: :func:`timem.tree.windows.to_utc`
    and :func:`~timem.tree.windows.offset_minutes` (naive ``dt`` is wall-clock time in ``tz``).

    Raises:
        InputError: the instant falls outside the years :data:`timem.models.MIN_YEAR`-:data:`~timem.models.MAX_YEAR`
            in UTC (e.g. 9999-12-31T23:00-05:00 runs past year 9999: the conversion overflows), or more than
            :data:`~timem.models.MAX_AHEAD` after the clock (:func:`ahead_of_clock`), naming ``raw``.
    """
    try:
        utc, offset = to_utc(dt, tz), offset_minutes(dt, tz)
    except OverflowError:
        utc = None
    if utc is None or not MIN_YEAR <= utc.year <= MAX_YEAR:
        raise InputError(f"timestamp {raw!r} lies outside the years {MIN_YEAR}-{MAX_YEAR} (in UTC) that calendar "
                         "windows can hold; fix the timestamp", file=file, record=record, field=field)
    if said := ahead_of_clock(utc, f"timestamp {raw!r}"):
        raise InputError(said, file=file, record=record, field=field)
    return utc, offset


def ahead_of_clock(utc: datetime, what: str, now: datetime | None = None) -> str | None:
    """Why ``utc`` (an event time, aware) cannot be a turn's: it lies more than :data:`timem.models.MAX_AHEAD` after
    ``now`` (default: the clock), said of ``what`` (``"timestamp '2204-05-02T09:00'"``); ``None`` if it can. An event
    time is when something was said, so it is not in the future (a year typo, or seconds sent as milliseconds).
    One rule for imports and the memory service (:mod:`timem.service.models`)."""
    now = now or datetime.now(UTC)
    ahead = utc - now
    if ahead <= MAX_AHEAD:
        return None
    days = ahead.days
    by = f"{days / 365.25:.0f} years" if days >= 730 else f"{days} days" if days >= 2 else \
        f"{ahead.total_seconds() / 3600:.0f} hours"
    return (f"{what} lies {by} after the clock ({now:%Y-%m-%d %H:%M} UTC); an event time is when it was said, at "
            f"most a day ahead of now: fix the time (its year?)")
