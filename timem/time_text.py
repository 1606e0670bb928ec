"""What is wrong with a time written as text, said with what to write instead: the one rule of the JSONL importer
(``timestamp``) and the memory service (``event_time``, ``question_time``, ``X-Timem-Event-Time``).

A time is ISO 8601 text with a time of day: ``2024-05-02T09:00:00+02:00``. A date alone (``2024-01-01``) is refused
by both, since midnight would be a guess that orders a day's turns wrongly (a new-user trial: the JSONL importer
read it as midnight while the service refused it); so is a number (seconds or milliseconds since 1970 cannot be told
apart). The service also needs the offset; the importer reads a time without one as wall-clock time in the
configured zone.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

__all__ = ["EXAMPLE", "date_only", "time_text_problem"]

#: the example every message gives
EXAMPLE = "2024-05-02T09:00:00+02:00"


def date_only(raw: str) -> bool:
    """Whether ``raw`` is an ISO 8601 date with no time of day (``2024-01-01``, ``20240101``)."""
    try:
        date.fromisoformat(raw)
    except ValueError:
        return False
    return True


def time_text_problem(value: Any, *, offset_needed: bool) -> str | None:
    """Why ``value`` is not a time (see the module doc), as a message that says what to write; ``None`` when it is
    one. ``offset_needed``: a time without a UTC offset is refused too (the service)."""
    zone = "" if offset_needed else " (or without the offset, wall-clock time in the configured zone)"
    if not isinstance(value, str):
        return (f"{value!r} is not a time: write ISO 8601 text such as '{EXAMPLE}'{zone}; a number (seconds or "
                "milliseconds since 1970) is not read")
    raw = value.strip()
    if date_only(raw):
        day = raw if len(raw) == 10 else "2024-05-02"
        return (f"{raw!r} is a date without a time of day; write when it was said, ISO 8601 such as "
                f"'{day}T09:00:00+02:00'{zone}")
    try:
        written = datetime.fromisoformat(raw)
    except ValueError:
        return f"{raw!r} is not an ISO 8601 time; write e.g. '{EXAMPLE}'{zone}"
    if offset_needed and written.tzinfo is None:
        return f"{raw!r} has no UTC offset; add one, e.g. '{EXAMPLE}' (or 'Z' for UTC)"
    return None
