"""Resolve a time expression in a question ("last week", "in May", "3 days ago") to a time window.

Deterministic, relative to the question time in the user's zone. Relative phrases ("yesterday",
"last week", "3 days ago", "last Friday", Chinese ones too) are resolved by
:func:`timem.reldates.resolve_relative_dates` (one set of conventions for the whole project); this
module adds what a *question* needs beyond that: explicit dates (parsed with ``dateutil``), month
and year names ("in May", "May 2023", "in 2022") and rolling windows ("in the past 3 weeks").
Used by both recall planners (the LLM planner only names the phrase; the arithmetic stays here,
because small models get it wrong).

Windows are half-open ``[start, end)`` in UTC: ``end`` is the first instant after the window
(midnight in the user's zone after the last day), stored in a :class:`~timem.models.TimeSpan`.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, tzinfo

from dateutil import parser as date_parser
from dateutil.relativedelta import relativedelta

from timem.models import TimeSpan
from timem.reldates import resolve_relative_dates
from timem.tree.windows import midnight

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_ZH_MONTHS = ("一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3}
_MON = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|" \
       r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_NUM = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple of|few)"
_UNIT = r"(day|week|month|year)s?"
_ORD = r"(?:st|nd|rd|th)?"


def day_window(first: date, last: date, tz: tzinfo) -> TimeSpan:
    """``[midnight of first, midnight after last)`` in ``tz``, as UTC."""
    return TimeSpan(start=midnight(first, tz), end=midnight(last + timedelta(days=1), tz))


def _unit_window(d: date, unit: str, tz: tzinfo) -> TimeSpan:
    """The calendar month or year holding ``d``."""
    if unit == "month":
        first = d.replace(day=1)
        return day_window(first, first + relativedelta(months=1) - timedelta(days=1), tz)
    return day_window(date(d.year, 1, 1), date(d.year, 12, 31), tz)


def _shift(d: date, unit: str, n: int) -> date:
    """``d`` moved by ``n`` days, weeks, months or years (``unit`` in the singular, as :data:`_UNIT` matches it)."""
    match unit:
        case "day":
            return d + relativedelta(days=n)
        case "week":
            return d + relativedelta(weeks=n)
        case "month":
            return d + relativedelta(months=n)
        case "year":
            return d + relativedelta(years=n)
    raise ValueError(f"unknown calendar unit {unit!r}")


def _count(token: str) -> int:
    token = token.lower()
    return int(token) if token.isdigit() else _NUMBERS[token]


def _month_index(token: str) -> int:
    return next(i for i, m in enumerate(MONTHS, 1) if m.startswith(token.lower()[:3]))


def _explicit_day(text: str, today: date) -> date | None:
    """``dateutil`` parse of a matched date phrase; a missing year means the latest such date not after today."""
    try:
        dt = date_parser.parse(text, default=datetime(today.year, 1, 1), dayfirst=True)
    except (ValueError, OverflowError):
        return None
    d = dt.date()
    if not re.search(r"\d{4}", text) and d > today:
        d = d - relativedelta(years=1)
    return d


def resolve_time_window(question: str, question_time: datetime, tz: tzinfo) -> tuple[str, TimeSpan] | None:
    """The first time expression in ``question`` and its window, or ``None`` if there is none.

    Args:
        question: a question or a bare phrase such as ``"last week"``.
        question_time: when the question is asked (UTC-aware); relative phrases count from its
            calendar date in ``tz``.
        tz: the user's zone (``Config.time.tz``); calendar units are cut at local midnight.

    Returns:
        ``(phrase as found, window)``. Recognised: ISO and written dates ("8 May 2023", "May 8"), the
        Monday-Sunday week of one ("the week of 25 March", as the relative-date annotations write a week),
        "in May", "May 2023", "in 2022", Chinese months ("三月", "2024年3月", not "三个月"),
        "the past N days|weeks|months|years" / "the past week" (a rolling window ending at the
        question time), then everything :func:`resolve_relative_dates` knows ("yesterday",
        "last/this/next week|month|year|weekend", "N units ago", "last Friday", ...).
    """
    today = question_time.astimezone(tz).date()
    q = question
    flags = re.IGNORECASE
    if m := re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", q):
        d = date(int(m[1]), int(m[2]), int(m[3]))
        return m[0], day_window(d, d, tz)
    if m := (re.search(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?{_MON}\b,?(\s+\d{{4}})?", q, flags)
             or re.search(rf"\b{_MON}\s+(\d{{1,2}}){_ORD}\b,?(\s+\d{{4}})?", q, flags)):
        day = _explicit_day(m[0].replace("of ", ""), today)
        if day is not None and (week := re.search(r"\b(?:the\s+)?week\s+of\s+$", q[:m.start()], flags)):
            # "the week of 25 March", as the annotations write a week ("last week [= week of 25 March 2024]"): the
            # Monday-Sunday week holding it (a new-user trial got the one day, which "last week" was longer than)
            monday = day - timedelta(days=day.weekday())
            return q[week.start():m.end()].strip(), day_window(monday, monday + timedelta(days=6), tz)
        if day is not None:
            return m[0].strip(), day_window(day, day, tz)
    if m := re.search(rf"\b(?:in\s+)?{_MON}\s+(\d{{4}})\b", q, flags):
        first = date(int(m[2]), _month_index(m[1]), 1)
        return m[0], _unit_window(first, "month", tz)
    if m := re.search(rf"\b(?:in|during|of)\s+(?:early\s+|late\s+|mid-?\s*)?{_MON}\b", q, flags):
        month = _month_index(m[1])
        year = today.year if month <= today.month else today.year - 1
        return m[0], _unit_window(date(year, month, 1), "month", tz)
    if m := re.search(r"(?:((?:19|20)\d{2})年)?(1[0-2]|[1-9]|十[一二]?|[一二三四五六七八九])"
                      r"月份?(?![前后底初\d日号])", q):
        month = _ZH_MONTHS.index(m[2]) + 1 if not m[2].isdigit() else int(m[2])
        year = int(m[1]) if m[1] else (today.year if month <= today.month else today.year - 1)
        return m[0], _unit_window(date(year, month, 1), "month", tz)
    if m := re.search(r"\b(?:in|during)\s+((?:19|20)\d{2})\b", q, flags):
        return m[0], _unit_window(date(int(m[1]), 1, 1), "year", tz)
    if m := re.search(rf"\b(?:in\s+|over\s+|during\s+)?the\s+(?:past|last)\s+{_NUM}\s+{_UNIT}\b", q, flags):
        start = _shift(today, m[2].lower(), -_count(m[1]))
        return m[0], TimeSpan(start=midnight(start, tz), end=question_time)
    if m := re.search(r"\b(?:in\s+|over\s+|during\s+)?the\s+(?:past|last)\s+(week|month|year)\b", q, flags):
        start = _shift(today, m[1].lower(), -1)
        return m[0], TimeSpan(start=midnight(start, tz), end=question_time)
    found = resolve_relative_dates(q, question_time.astimezone(tz))[1]
    if found:
        earliest = min(found, key=lambda r: r.start)
        return earliest.phrase, day_window(earliest.start_date, earliest.end_date, tz)
    return None
