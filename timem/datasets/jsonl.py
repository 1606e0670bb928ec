"""TiMem JSONL chat format: one turn per line.

Format (UTF-8, one JSON object per line, blank lines ignored)::

    {"user_id": "alice", "session_id": "s1", "speaker": "Alice", "role": "user",
     "text": "I went to the support group yesterday.", "timestamp": "2023-05-08T13:56:00"}
    {"user_id": "alice", "session_id": "s1", "role": "assistant",
     "text": "How was it?", "timestamp": "2023-05-08T13:56:30+02:00", "source_ref": "msg-2"}

Fields:

* ``user_id`` (string, required): the memory owner; users are returned in order of first appearance. No ``:``
  (it separates the parts of a turn id), line break or control character, as in ``session_id``.
* ``session_id`` (string, required): a conversation session *of that user*; the same id under
  two users names two sessions.
* ``role`` and/or ``speaker`` (strings, at least one): ``role`` is ``user``, ``assistant`` or
  ``other``; ``speaker`` is one line (no line break or other control character). Without ``role``, a
  speaker named ``user``/``assistant`` (any case) gets that role and any other speaker ``other``; without
  ``speaker``, the speaker is the role.
* ``text`` (string, required, non-empty): what was said.
* ``timestamp`` (string, required): ISO 8601 event time, e.g. ``2023-05-08T13:56:00`` or with an
  offset (``+02:00``, ``Z``). A timestamp without an offset is wall-clock time in the user's time
  zone (``Config.time.user_timezones`` for that user, else ``Config.time.timezone``). The offset (written, if
  not UTC; else the zone's at that time: :func:`timem.tree.windows.offset_minutes`) is kept on the turn:
  relative dates in its text are resolved in it.
* ``image_caption``, ``source_ref`` (strings, optional): a caption of a shared image; your own
  reference for the turn (kept on the turn and shown as evidence).
* No other key: an unknown one (a typo such as ``speker``) is refused, naming the line and the key (and the field
  it may be a typo of), as the memory service refuses an unknown field (422).

Grouping: turns of a session keep file order (``seq`` 0, 1, ...) and their timestamps must not
decrease nor run more than a day past the session's first turn (:data:`timem.models.MAX_SESSION`: a
session's memory sits under the day it started in); sessions of a user are ordered by their first turn's
timestamp (ties keep file order).
Turn ids are ``f"{user_id}:{session_id}:{seq}"``, so re-importing the same file is idempotent; a ``user_id`` or
``session_id`` holding ``:`` is refused (two turns could get one id).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from timem.datasets.base import (
    TOO_DEEP,
    ImportedSession,
    ImportedUser,
    check_id,
    check_length,
    check_name,
    check_text,
    check_user_id,
    is_blank,
    need,
    turn_id,
    utc_and_offset,
)
from timem.errors import InputError
from timem.models import MAX_SESSION, Role, Turn
from timem.time_text import date_only, time_text_problem

__all__ = ["load_jsonl", "write_jsonl"]

_ROLES = {r.value: r for r in Role}
#: every key a turn may have (the module docstring); any other is refused
FIELDS = ("user_id", "session_id", "role", "speaker", "text", "timestamp", "image_caption", "source_ref")


def load_jsonl(path: str | Path, tz: ZoneInfo, user_tz: Mapping[str, ZoneInfo] | None = None, *,
               max_chars: int | None = None) -> list[ImportedUser]:
    """Read a TiMem JSONL chat file (format in the module docstring) into users and sessions.

    Args:
        path: the ``.jsonl`` file.
        tz: zone of timestamps without an offset; all returned datetimes are UTC-aware.
        user_tz: zones of particular users (by ``user_id``), used instead of ``tz`` for them.
        max_chars: longest ``text`` or ``image_caption`` accepted (``Config.store.max_turn_chars``); None: any.

    Raises:
        InputError: unreadable file, a line that is not a JSON object, a missing/empty field, a
            wrong type, an unknown role, an unparseable or decreasing timestamp, a text longer than ``max_chars``
            (:class:`~timem.errors.TextTooLongError`), or an empty file;
            the message names the file, the line and the field. Raised before anything is returned.
    """
    file = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}. Check the path.", file=file) from exc
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark (Windows editors write one), as the service
    rows: list[dict[str, Any]] = []
    for no, raw in enumerate(data.splitlines(), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8: byte 0x{raw[exc.start]:02x} at column {exc.start + 1}; save the file "
                             "as UTF-8", file=file, record=f"line {no}") from exc
        if line.strip():
            try:
                rows.append(_row(line, no, file, tz, user_tz or {}, max_chars))
            except InputError as exc:
                fmt = None if rows else _other_format(data, line)
                if fmt:
                    raise InputError(f"this is a {_FORMAT_NAMES[fmt]} file, not TiMem JSONL (one turn per line); "
                                     f"read it with --format {fmt}", file=file) from exc
                raise
    if not rows:
        raise InputError("the file holds no turns", file=file)

    users: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for row in rows:
        sessions = users.setdefault(row["user_id"], {})
        turns = sessions.setdefault(row["session_id"], [])
        if turns and row["time"] < turns[-1]["time"]:
            raise InputError(f"timestamp {row['raw_time']!r} is earlier than the previous turn of session "
                             f"{row['session_id']!r} ({turns[-1]['raw_time']!r}, line {turns[-1]['line']}); "
                             "fix the order or the time", file=file, record=f"line {row['line']}",
                             field="timestamp")
        if turns and row["time"] - turns[0]["time"] > MAX_SESSION:
            raise InputError(f"timestamp {row['raw_time']!r} is more than a day after the first turn of session "
                             f"{row['session_id']!r} ({turns[0]['raw_time']!r}, line {turns[0]['line']}); a session's "
                             "memory sits under the day it started in: give the later turns their own session_id",
                             file=file, record=f"line {row['line']}", field="timestamp")
        turns.append(row)

    out: list[ImportedUser] = []
    for user_id, sessions in users.items():
        built, speakers = [], []
        for session_id, rows_ in sorted(sessions.items(), key=lambda kv: kv[1][0]["time"]):
            built_turns = [Turn(id=turn_id(user_id, session_id, seq), user_id=user_id, session_id=session_id,
                          seq=seq, speaker=r["speaker"], role=r["role"], text=r["text"], event_time=r["time"],
                          source_ref=r["source_ref"], image_caption=r["image_caption"], utc_offset_minutes=r["offset"])
                     for seq, r in enumerate(rows_)]
            speakers += [t.speaker for t in built_turns if t.speaker not in speakers]
            built.append(ImportedSession(session_id=session_id, turns=built_turns, date_label=rows_[0]["raw_time"]))
        out.append(ImportedUser(user_id=user_id, participants=speakers, sessions=built,
                                meta={"dataset": "jsonl", "file": file}))
    return out


#: Keys that only the other importers' records have, by format (LoCoMo sample, LongMemEval instance).
_FOREIGN_KEYS = {"locomo": ("conversation", "sample_id"), "longmemeval": ("haystack_sessions", "question_id")}
_FORMAT_NAMES = {"locomo": "LoCoMo", "longmemeval": "LongMemEval"}


def _other_format(data: bytes, first_line: str) -> str | None:
    """``"locomo"`` or ``"longmemeval"`` when a file whose first record is not a turn is a whole JSON document
    of that dataset (or has one such record per line), else ``None``. Only called on that error path."""
    try:
        first: Any = json.loads(first_line)
    except RecursionError:
        return None
    except json.JSONDecodeError:
        if data.lstrip()[:1] not in (b"[", b"{"):
            return None
        try:
            first = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            return None
    if isinstance(first, list):
        first = first[0] if first else None
    if not isinstance(first, dict) or "user_id" in first:
        return None
    return next((fmt for fmt, keys in _FOREIGN_KEYS.items() if any(k in first for k in keys)), None)


def _row(line: str, no: int, file: str, tz: ZoneInfo, user_tz: Mapping[str, ZoneInfo],
         max_chars: int | None) -> dict[str, Any]:
    rec = f"line {no}"
    try:
        obj = json.loads(line)
    except RecursionError as exc:
        raise InputError(TOO_DEEP, file=file, record=rec) from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", file=file, record=rec) from exc
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", file=file, record=rec)
    where = {"file": file, "record": rec}
    _known_keys(obj, where)
    user_id = check_user_id(need(obj, "user_id", str, file=file, record=rec).strip(), **where)
    session_id = check_id(need(obj, "session_id", str, file=file, record=rec).strip(), **where, field="session_id")
    for key in ("text", "image_caption"):  # before the character checks, which take seconds on megabytes
        if isinstance(obj.get(key), str):
            check_length(obj[key], max_chars, **where, field=key)
    text = need(obj, "text", str, file=file, record=rec)
    stamp = obj.get("timestamp")  # a number or a date alone: what to write (other text: "unparseable" below)
    if (stamp is not None and not isinstance(stamp, str)) or (isinstance(stamp, str) and date_only(stamp.strip())):
        raise InputError(f"timestamp {time_text_problem(stamp, offset_needed=False)}", **where, field="timestamp")
    raw_time = need(obj, "timestamp", str, file=file, record=rec).strip()
    if obj.get("role") is None and obj.get("speaker") is None:
        raise InputError("missing field (give 'role' or 'speaker')", **where, field="role")
    role = speaker = None
    if obj.get("role") is not None:
        role_name = need(obj, "role", str, file=file, record=rec).strip().lower()
        if role_name not in _ROLES:
            raise InputError(f"unknown role {obj['role']!r}; use one of {sorted(_ROLES)}", **where,
                             field="role")
        role = _ROLES[role_name]
    if obj.get("speaker") is not None:
        speaker = check_name(need(obj, "speaker", str, file=file, record=rec).strip(), **where, field="speaker")
    if role is None:
        role = _ROLES.get((speaker or "").lower(), Role.OTHER)
    zone = user_tz.get(user_id, tz)
    try:
        written = datetime.fromisoformat(raw_time)
    except ValueError as exc:
        raise InputError(f"unparseable timestamp {raw_time!r}; use ISO 8601 such as '2023-05-08T13:56:00'",
                         **where, field="timestamp") from exc
    time, offset = utc_and_offset(written, zone, raw_time, **where, field="timestamp")
    opt = {}
    for key in ("image_caption", "source_ref"):
        val = obj.get(key)
        if val is not None and not isinstance(val, str):
            raise InputError(f"expected a string, got {type(val).__name__}", **where, field=key)
        if val is not None:
            check_text(val, **where, field=key)
        opt[key] = val if val and not is_blank(val) else None
    return {"line": no, "user_id": user_id, "session_id": session_id, "speaker": speaker or role.value,
            "role": role, "text": text, "time": time, "offset": offset, "raw_time": raw_time, **opt}


def _known_keys(obj: dict[str, Any], where: dict[str, str]) -> None:
    """Refuse a key that is not one of :data:`FIELDS` (a typo such as ``speker`` would drop the speaker silently).

    Raises:
        InputError: naming the line and the first unknown key, with the field it is closest to if any.
    """
    unknown = [k for k in obj if k not in FIELDS]
    if unknown:
        key = unknown[0]
        close = difflib.get_close_matches(key, FIELDS, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InputError(f"unknown field {key!r}{hint}; a turn has only {', '.join(FIELDS)}: rename or remove it",
                         **where, field=key)


def _written_time(t: Turn) -> str:
    """ISO 8601 at the speaker's own offset when known (so it survives a round trip), else UTC."""
    if t.utc_offset_minutes is None:
        return t.event_time.astimezone(UTC).isoformat()
    return t.event_time.astimezone(timezone(timedelta(minutes=t.utc_offset_minutes))).isoformat()


def write_jsonl(users: list[ImportedUser], path: str | Path) -> int:
    """Write ``users``' turns in the JSONL format above (timestamps ISO 8601 at the speaker's offset, UTC
    when unknown); returns the turn count.

    Reading the file back with :func:`load_jsonl` yields the same users, sessions, turn ids, texts,
    speakers, roles and event times.
    """
    n = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for user in users:
            for session in user.sessions:
                for t in session.turns:
                    rec = {"user_id": t.user_id, "session_id": t.session_id, "speaker": t.speaker,
                           "role": t.role.value, "text": t.text,
                           "timestamp": _written_time(t)}
                    rec.update({k: v for k, v in (("image_caption", t.image_caption),
                                                  ("source_ref", t.source_ref)) if v is not None})
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    n += 1
    return n
