"""Dates read out of a text: the annotations of :mod:`timem.reldates` read back, and days of a month written out.

:func:`mentioned_periods` is what an L1 segment's content mentions, for ``node_mentions``
(:mod:`timem.store.mentions`) and the time channel's exact test (:mod:`timem.recall.time_channel`):

    "On 20 May 2024 (Monday) 10:00:\nOn 7 May I went to the dentist." -> [(7 May 2024, 7 May 2024)]
    "I went hiking yesterday [= 7 May 2023]." -> [(7 May 2023, 7 May 2023)]

* :func:`annotated_periods` reads the ``[= <label>]`` annotations that
  :func:`timem.reldates.resolve_relative_dates` writes (English and Chinese labels) as
  ``(first, last)`` calendar dates, both inclusive, in the zone the text was annotated in.
* :func:`said_on` is the speaker's local date of the date line that opens verbatim L1 content.
* the days of a month written in a text ("on 7 May", "May 7th", "7 May 2024", "2024-05-07") are
  read by ``dateutil``; a year-less day is dated against :func:`said_on` (see
  :func:`_absolute_dates`).

Nothing here raises on odd text: every L1 text a store writes is read here.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from functools import lru_cache

from dateutil import parser as date_parser
from dateutil.relativedelta import relativedelta

__all__ = ["annotated_periods", "mentioned_periods", "said_on"]

#: English month names, also the labels of :mod:`timem.reldates`
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")


def _month(first: date) -> tuple[date, date]:
    """The first and last day of the calendar month of ``first``."""
    return first + relativedelta(day=1), first + relativedelta(day=31)


# ---------------------------------------------------------------- reading annotations back
_MONTH_NO = {m.lower(): i for i, m in enumerate(_MONTHS, 1)}
_EN_DATE = r"(?:(\d{1,2})\s+)?(" + "|".join(_MONTHS) + r")(?:\s+(\d{4}))?"
#: a label of :func:`timem.reldates._label` (the first date of a weekend's range is not read: its Sunday, the last,
#: names it)
_EN_LABEL = re.compile(r"^(week of |weekend of )?(?:[^–]{1,30}–)?" + _EN_DATE + r"$|^(\d{4})$")
_ZH_DATE = r"(?:(\d{4})年)?(?:(\d{1,2})月)?(?:(\d{1,2})日)?"
_ZH_LABEL = re.compile(r"^" + _ZH_DATE + r"(?:至" + _ZH_DATE + r")?(周末)?$")
_ANNOTATED = re.compile(r"[\[［]=\s?([^\]］]+)[\]］]")


@lru_cache(maxsize=16384)  # labels repeat: the time channel reads thousands of texts naming the same days (~3 MB)
def _period(label: str) -> tuple[date, date] | None:
    """The inclusive ``(first, last)`` calendar dates a label of :func:`timem.reldates._label` names, or ``None``
    for other text."""
    label = label.strip()
    if m := _EN_LABEL.match(label):
        if m[5]:
            return date(int(m[5]), 1, 1), date(int(m[5]), 12, 31)
        kind, day, month, year = m[1], m[2], _MONTH_NO[m[3].lower()], m[4]
        if year is None:
            return None
        last = date(int(year), month, int(day or 1))
        if kind == "week of ":
            return last, last + timedelta(days=6)
        if kind == "weekend of ":
            return last - timedelta(days=1), last
        return (last, last) if day else _month(last)
    if (m := _ZH_LABEL.match(label)) and m[1]:
        zy, zm, zd = int(m[1]), int(m[2]) if m[2] else None, int(m[3]) if m[3] else None
        if zm is None:
            return (date(zy, 1, 1), date(zy, 12, 31)) if not m[7] else None
        first = date(zy, zm, zd or 1)
        if zd is None:
            return _month(first)
        if not m[6]:
            return first, first
        end = date(int(m[4] or zy), int(m[5] or zm), int(m[6]))
        return first, end
    return None


def annotated_periods(text: str) -> list[tuple[date, date]]:
    """The calendar periods that the annotations of :func:`timem.reldates.resolve_relative_dates` in ``text`` name,
    in text order: ``(first, last)`` dates, both inclusive, in the zone the text was annotated in ("yesterday [= 7
    May 2023]" -> ``(7 May 2023, 7 May 2023)``; "[= week of 1 May 2023]" -> Monday 1 to Sunday 7 May;
    "上周末[=2023年4月29日至30日周末]" -> 29-30 April). A bracket that holds no such label ("[= soon]", an
    impossible date, a week past year 9999) is skipped: every L1 text a store writes is read here
    (:mod:`timem.store.mentions`), so this never raises.

    >>> annotated_periods("On 8 May: I went hiking yesterday [= 7 May 2023].")
    [(datetime.date(2023, 5, 7), datetime.date(2023, 5, 7))]
    """
    out = []
    for m in _ANNOTATED.finditer(text):
        try:
            found = _period(m[1])
        except (ValueError, OverflowError):  # "[= 31 February 2023]", "[= week of 27 December 9999]": typed here
            found = None
        if found is not None:
            out.append(found)
    return out


# ---------------------------------------------------------------- absolute dates said in a text
#: the date line that opens verbatim L1 content (:func:`timem.consolidation.segments.render_segment`), the speaker's
#: local date: "On 7 May 2024 (Tuesday) 22:00:"
_SAID_LINE = re.compile(r"^On (\d{1,2} (?:" + "|".join(_MONTHS) + r") \d{4}) \(\w+\) \d{2}:\d{2}:[ \t]*(?:\n|$)")
_MON = (r"(Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
        r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_YEAR = r"(?:,?\s+(\d{4})\b)?"
#: a written day of a month: "7 May", "7th of May 2024", "May 7th", "May 7, 2024", "2024-05-07" (not "May 10:30")
_ABSOLUTE = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON}\b{_YEAR}"
                       rf"|\b{_MON}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?!\s*[:.]\d){_YEAR}"
                       r"|\b(\d{4})-(\d{2})-(\d{2})\b", re.IGNORECASE)
#: a month written in lower case counts only in full and when it is no other word ("I may 7 …", "march 5 miles")
_LOWER_OK = {m.lower() for m in _MONTHS} - {"may", "march"}
#: words that put a clause in the future: "I'm flying to Rome on 7 June" is the next 7 June, not the last one
_FUTURE = re.compile(r"\b(?:will|won't|shall|going\s+to|gonna|plan(?:s|ning)?\s+to|scheduled|upcoming|coming\s+up"
                     r"|looking\s+forward|can't\s+wait)\b|['’]ll\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.!?。！？\n]")


def said_on(text: str) -> date | None:
    """The speaker's local date of verbatim L1 content: its date line "On 7 May 2024 (Tuesday) 22:00:" (written by
    :func:`timem.consolidation.segments.render_segment`) -> ``date(2024, 5, 7)``; ``None`` without one."""
    m = _SAID_LINE.match(text)
    return date_parser.parse(m[1]).date() if m else None


def _clause(text: str, start: int, end: int) -> str:
    left = max((m.end() for m in _CLAUSE_END.finditer(text, 0, start)), default=0)
    right = _CLAUSE_END.search(text, end)
    return text[left:right.start() if right else len(text)]


def _absolute_dates(text: str, ref: date | None) -> list[date]:
    """The days of the month written in ``text`` (:data:`_ABSOLUTE`), outside annotations, read by ``dateutil``; a
    date without a year is the nearest such day not after ``ref`` (said on 8 May 2024, "on 7 May" is 7 May 2024 and
    "on 9 May" 9 May 2023), or not before it when its clause is in the future tense (:data:`_FUTURE`: "I'll fly on
    9 May"); without ``ref`` such a date is skipped. An impossible date ("31 June", "29 Feb" of a year without one)
    is skipped."""
    taken = [m.span() for m in _ANNOTATED.finditer(text)]
    out = []
    for m in _ABSOLUTE.finditer(text):
        if any(a <= m.start() < b for a, b in taken):
            continue
        month = m[2] or m[4]
        if month and month.islower() and month not in _LOWER_OK:
            continue
        year = m[3] or m[6] or m[7]
        if year is None and ref is None:
            continue
        try:
            d = date_parser.parse(m[0], default=datetime((ref.year if ref else 2000), 1, 1),
                                  dayfirst=m[7] is None).date()  # ISO "2024-05-07" is year-month-day
        except (ValueError, OverflowError):
            continue
        if year is None and ref is not None:
            ahead = bool(_FUTURE.search(_clause(text, m.start(), m.end())))
            if ahead and d < ref:
                d += relativedelta(years=1)
            elif not ahead and d > ref:
                d -= relativedelta(years=1)
        out.append(d)
    return out


def mentioned_periods(text: str) -> list[tuple[date, date]]:
    """The calendar periods ``text`` mentions: its relative-date annotations (:func:`annotated_periods`), then the
    days of a month written in it ("on 7 May", "May 7th", "7 May 2024", "2024-05-07"; :func:`_absolute_dates`),
    ``(first, last)`` dates, both inclusive, in text order within each kind. ``text`` is an L1 segment's content:
    its date line (:func:`said_on`, the speaker's local date) is not a mention, and it dates a year-less day ("on 7
    May" said on 8 May 2024 is 7 May 2024; in the future tense, the next 7 May); content without a date line
    mentions only days written with their year. Never raises (every L1 text a store writes is read here)."""
    ref = said_on(text)
    body = _SAID_LINE.sub("", text, count=1) if ref else text
    return annotated_periods(body) + [(d, d) for d in _absolute_dates(body, ref)]
