"""Time windows that group children under parents (TiMem §3.1, Temporal Memory Tree).

Rules:
* All instants are UTC-aware. Naive input is read as wall-clock time in the user's zone
  (``Config.time.timezone``) by :func:`to_utc`; at a DST gap/overlap the earlier reading (fold=0) wins.
* L3 day = calendar day in the user's zone; L4 week = ISO week (Monday–Sunday) cut at a month
  boundary, so every week lies inside one month (as in the TiMem reference implementation);
  L5 = calendar month in the user's zone.
* A child belongs to the window holding its *start*. A parent's span is the hull of its window
  and its children's spans (:func:`parent_span`), so a session crossing midnight still lies inside
  its day, and temporal containment holds by construction.
"""

from __future__ import annotations

import calendar
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

from timem.errors import InvariantError
from timem.models import Level, SessionInfo, TimeSpan


def to_utc(dt: datetime, tz: ZoneInfo) -> datetime:
    """Aware -> converted to UTC; naive -> read as wall-clock time in ``tz``, then UTC."""
    if dt.tzinfo is None or dt.utcoffset() is None:
        dt = dt.replace(tzinfo=tz)
    return dt.astimezone(UTC)


def offset_minutes(dt: datetime, tz: ZoneInfo) -> int:
    """The UTC offset, in minutes, of the speaker's local time at ``dt``: the one rule of every path (imports,
    chat, the service, MCP) for resolving relative dates ("yesterday").

    * ``dt`` aware with a non-zero offset (``+09:00``): an explicit local time, that offset;
    * ``dt`` aware at UTC (``Z``, ``+00:00``): an instant that says nothing about where the speaker was, so the
      offset of the user's zone ``tz`` at that instant;
    * ``dt`` naive: wall-clock time in ``tz``, ``tz``'s offset then (DST-aware, fold=0 as in :func:`to_utc`).

    Raises:
        OverflowError: ``dt`` lies so close to year 1 or 9999 that it cannot be moved into ``tz``.
    """
    if dt.tzinfo is None or dt.utcoffset() is None:
        dt = dt.replace(tzinfo=tz)
    elif not dt.utcoffset():  # a zero timedelta: UTC
        dt = dt.astimezone(tz)
    offset = dt.utcoffset()
    assert offset is not None  # an aware datetime (a ZoneInfo always gives an offset)
    return int(offset.total_seconds() // 60)


def speaker_zone(dt: datetime | None, tz: ZoneInfo) -> tzinfo:
    """The zone whose calendar a question asked at ``dt`` is read in ("yesterday", "this morning", "on Monday"):
    :func:`offset_minutes`'s rule as a zone. ``dt`` with a non-zero UTC offset that is not ``tz``'s offset at that
    instant: that fixed offset (``2024-05-08T09:00-05:00`` -> UTC-05:00, the speaker's local time); otherwise
    ``tz``, the user's zone (``Config.time.tz_for``), so its DST changes are kept: a naive time (wall-clock time in
    ``tz``), a ``Z`` / ``+00:00`` time (an instant, often a machine's clock, that says nothing about where the
    speaker was), ``None`` (no time given) or an offset equal to ``tz``'s then.

    Raises:
        OverflowError: ``dt`` lies so close to year 1 or 9999 that it cannot be moved into ``tz``.
    """
    if dt is None or dt.tzinfo is None or dt.utcoffset() is None or not dt.utcoffset():
        return tz
    offset = dt.utcoffset()
    assert offset is not None  # tested above
    return tz if dt.astimezone(tz).utcoffset() == offset else timezone(offset)


@dataclass(frozen=True)
class Window:
    """A calendar window ``[start, end)`` (UTC-aware) with a stable key, e.g. ``day:2023-05-08``."""

    level: Level
    key: str
    start: datetime
    end: datetime

    @property
    def span(self) -> TimeSpan:
        return TimeSpan(start=self.start, end=self.end)


def midnight(d: date, tz: tzinfo) -> datetime:
    """Local midnight starting day ``d`` in ``tz``, as UTC."""
    return datetime.combine(d, time(0), tzinfo=tz).astimezone(UTC)


def local_date(t: datetime, tz: ZoneInfo) -> date:
    """The calendar date of instant ``t`` in zone ``tz``."""
    return t.astimezone(tz).date()


def day_window(t: datetime, tz: ZoneInfo) -> Window:
    """The L3 window (local calendar day) holding instant ``t``."""
    d = local_date(t, tz)
    return Window(Level.DAY, f"day:{d.isoformat()}", midnight(d, tz), midnight(d + timedelta(days=1), tz))


def week_bounds(d: date) -> tuple[date, date]:
    """First and last date of the month-cut ISO week holding ``d`` (both inclusive)."""
    monday = d - timedelta(days=d.weekday())
    sunday = monday + timedelta(days=6)
    first = d.replace(day=1)
    last = d.replace(day=calendar.monthrange(d.year, d.month)[1])
    return max(monday, first), min(sunday, last)


def week_window(t: datetime, tz: ZoneInfo) -> Window:
    """The L4 window (ISO week cut at month boundaries) holding instant ``t``."""
    lo, hi = week_bounds(local_date(t, tz))
    return Window(Level.WEEK, f"week:{lo.isoformat()}..{hi.isoformat()}", midnight(lo, tz),
                  midnight(hi + timedelta(days=1), tz))


def month_window(t: datetime, tz: ZoneInfo) -> Window:
    """The L5 window (calendar month) holding instant ``t``."""
    d = local_date(t, tz)
    first = d.replace(day=1)
    nxt = (first + timedelta(days=32)).replace(day=1)
    return Window(Level.PROFILE, f"month:{first:%Y-%m}", midnight(first, tz), midnight(nxt, tz))


def parent_window(level: Level, t: datetime, tz: ZoneInfo) -> Window:
    """The calendar window at ``level`` (DAY, WEEK or PROFILE) that holds instant ``t``.

    Raises:
        ValueError: for SEGMENT or SESSION, whose windows are not calendar windows.
    """
    if level == Level.DAY:
        return day_window(t, tz)
    if level == Level.WEEK:
        return week_window(t, tz)
    if level == Level.PROFILE:
        return month_window(t, tz)
    raise ValueError(f"{level!r} has no calendar window")


def hull(spans: list[TimeSpan]) -> TimeSpan:
    """Smallest span containing all ``spans`` (non-empty list)."""
    if not spans:
        raise ValueError("hull of no spans")
    return TimeSpan(start=min(s.start for s in spans), end=max(s.end for s in spans))


def parent_span(window: TimeSpan | None, children: list[TimeSpan]) -> TimeSpan:
    """Span of a parent: hull of its window (if any) and its children's spans."""
    return hull(([window] if window else []) + children)


def check_containment(parent: TimeSpan, children: list[TimeSpan], what: str = "parent") -> None:
    """Raise :class:`InvariantError` unless ``parent`` contains every child span."""
    for c in children:
        if not parent.contains(c):
            raise InvariantError(
                f"temporal containment violated: {what} span {parent.start.isoformat()}..{parent.end.isoformat()} "
                f"does not contain child span {c.start.isoformat()}..{c.end.isoformat()}. "
                "This is a bug in window assignment; run `timem check` and report it.")


def closed_sessions(sessions: Sequence[SessionInfo], watermark: datetime, idle: timedelta,
                    flush: bool = False, *, latest_start: datetime | None = None) -> dict[str, bool]:
    """Whether each of the user's ``sessions`` is closed in event time, by session id: it was ended, a later session
    of the user has started, the user's latest event (``watermark``, UTC-aware) is ``idle`` past its last turn, or
    ``flush``; its L2 session memory is written then. One pass: a later session has started exactly when the latest
    start is after the session's last turn (asking that of every other session, per session, was quadratic: 60 ms
    for 1,000 sessions and 2.5 s for 5,000, on every chat write).
    ``latest_start`` (UTC-aware): the latest start of *all* the user's sessions when ``sessions`` are some of them
    (:meth:`timem.store.turns.TurnTables.sessions_among`); by default the latest of ``sessions``."""
    if not sessions:
        return {}
    latest = max(o.started_at for o in sessions) if latest_start is None else latest_start
    return {s.session_id: flush or s.ended or latest > s.last_event_at or watermark - s.last_event_at >= idle
            for s in sessions}
