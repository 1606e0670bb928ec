"""TIDER dual-channel temporal retrieval (arXiv 2610.23598): a time localiser, a time channel and
distance decay, merged with the semantic channel of leaf selection.

1. **Localiser** (:func:`localise`, rule-based): ``detect`` says whether the question needs a
   time constraint; ``windows`` are the half-open UTC windows it names, at most two (two for
   comparisons such as "in March or in May"). It finds every time expression that
   :func:`timem.recall.time_window.resolve_time_window` knows, left to right.
2. **Time channel**: the leaves *in* a window, merged with the semantic/BM25 candidates (a time-only
   candidate gets its cosine from its stored vector and BM25 0). A leaf is in a window when its span
   (when it was said) overlaps it (:meth:`Store.segments_in_windows`), or when a date its text mentions does
   (:func:`mentions_in`; the store finds the candidates in its table of mentioned dates, ``node_mentions``, by
   :func:`mention_days`): event time is not said time. "Yesterday I went hiking", said on 8 May, is stored as
   "yesterday [= 7 May 2023]" (:func:`timem.reldates.resolve_relative_dates`), and "What did I do on 7 May?"
   finds it. A mentioned period counts only when it is no longer than the window: "yesterday" is in "last
   week", "last month" is not in "on 7 May" (a leaf about a whole month says little about one day of it).
3. **Scoring** (:func:`tider_score`, TIDER §3.3): ``s' = (s + 0.3·[in a window]) · f(Δ)``
   where ``Δ`` is the distance in days from the leaf's span to the nearest window (0 when the leaf is
   in one) and ``f(Δ) = 1`` for ``Δ ≤ 14``, then ``1 − 0.05·(Δ − 14)``, never below 0.3.
   ``detect = false`` turns the channel and the decay off: scores are unchanged.

Every candidate carries its ``time_bonus`` and ``time_factor`` in the trace.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import date, datetime, timedelta, tzinfo
from functools import lru_cache

from pydantic import BaseModel, Field

from timem.models import TimeSpan
from timem.recall.time_window import MONTHS, WEEKDAYS, day_window, resolve_time_window
from timem.tokens import content_stems
from timem.written_dates import mentioned_periods

OVERLAP_BONUS = 0.3
FLAT_DAYS = 14.0
DECAY_PER_DAY = 0.05
DECAY_FLOOR = 0.3
MAX_WINDOWS = 2
#: slack when a mentioned period is compared with a window's length (a day of 25 hours at a DST change)
_SLACK = timedelta(hours=2)
#: :func:`day_window` of a mentioned period, remembered: a year window reads thousands of texts naming the same days
_period_window = lru_cache(maxsize=16384)(day_window)  # at most ~4 MB
#: :func:`mentioned_periods` of a leaf's text, remembered: the same leaves come back for the windows of many questions
_mentioned = lru_cache(maxsize=16384)(mentioned_periods)


class TimeLocalisation(BaseModel):
    """The localiser's answer: whether to constrain by time, the windows and the phrases they came from."""

    detect: bool
    windows: list[TimeSpan] = Field(default_factory=list)
    phrases: list[str] = Field(default_factory=list)


def localise(question: str, question_time: datetime, tz: tzinfo) -> TimeLocalisation:
    """Rule-based TIDER localiser: every time expression of ``question`` (at most two) as windows, earliest first.

    Args:
        question_time: when the question is asked (UTC-aware); relative phrases count from it.
        tz: the user's zone; calendar units are cut at local midnight.
    """
    windows: list[TimeSpan] = []
    phrases: list[str] = []
    rest = question
    while len(windows) < MAX_WINDOWS:
        found = resolve_time_window(rest, question_time, tz)
        if found is None:
            break
        phrase, span = found
        if span not in windows:
            windows.append(span)
            phrases.append(phrase)
        cut = re.sub(re.escape(phrase), " ", rest, count=1)
        if cut == rest:
            break
        rest = cut
    order = sorted(range(len(windows)), key=lambda i: windows[i].start)
    return TimeLocalisation(detect=bool(windows), windows=[windows[i] for i in order],
                            phrases=[phrases[i] for i in order])


def distance_factor(days: float) -> float:
    """TIDER's distance decay ``f(Δ)``: 1 up to 14 days, then −0.05 per day, never below 0.3.

    >>> [distance_factor(d) for d in (0, 14, 15, 28, 100)]
    [1.0, 1.0, 0.95, 0.3, 0.3]
    """
    if days <= FLAT_DAYS:
        return 1.0
    return round(max(DECAY_FLOOR, 1.0 - DECAY_PER_DAY * (days - FLAT_DAYS)), 6)


def distance_days(start: datetime, end: datetime, windows: Sequence[TimeSpan]) -> float:
    """Days from the span ``[start, end]`` to the nearest half-open window ``[ws, we)``; 0 when they overlap."""
    best = float("inf")
    for w in windows:
        if start < w.end and end >= w.start:
            return 0.0
        gap = (w.start - end) if end < w.start else (start - w.end)
        best = min(best, gap.total_seconds() / 86400)
    return best


def mentions_in(text: str, windows: Sequence[TimeSpan], tz: tzinfo) -> bool:
    """Whether a date that ``text`` mentions (its relative-date annotations and written days of a month,
    :func:`timem.written_dates.mentioned_periods`, read as calendar days in ``tz``) lies in one of the half-open
    ``windows``: the period overlaps the window and is no longer than it (module docstring, step 2)."""
    if not windows:
        return False
    for first, last in _mentioned(text):
        period = _period_window(first, last, tz)
        for w in windows:
            if period.start < w.end and period.end > w.start and \
                    period.end - period.start <= max(w.end - w.start, timedelta(days=1)) + _SLACK:
                return True
    return False


#: words that name a time, not a topic: a question's window is about them already (:func:`topical`)
_TIME_WORDS = frozenset(
    [m.lower() for m in MONTHS] + [m[:3] for m in MONTHS] + ["sept"] + list(WEEKDAYS) + [w[:3] for w in WEEKDAYS]
    + "today yesterday tomorrow tonight morning afternoon evening night day days week weeks weekend weekends month "
      "months year years ago last next past earlier later recently date dates time times happen happened".split())
_ANNOTATION = re.compile(r"\s?[\[［]=[^\]］]*[\]］]")
_LINE_HEAD = re.compile(r"^(?:On \d{1,2} \w+ \d{4} \(\w+\) \d{2}:\d{2}:\s*$|[^:\n]{1,60}:\s)", re.MULTILINE)


@lru_cache(maxsize=65536)
def topic_stems(text: str, names: frozenset[str] = frozenset()) -> frozenset[str]:
    """The content stems (:func:`timem.tokens.content_stems`) of ``text`` that say what, not when or who: without
    relative-date annotations, an L1 date line, speakers' ``Name:`` prefixes, numbers, time words (month and weekday
    names, "yesterday", "week", ...) and ``names`` (lower case)."""
    plain = _LINE_HEAD.sub("", _ANNOTATION.sub("", text))
    return frozenset(s for s in content_stems(plain, _TIME_WORDS | names) if not s.isdigit())


def topical(question: str, text: str, names: frozenset[str] = frozenset()) -> bool:
    """Whether ``text`` (a leaf's content) shares a content word with ``question`` beyond its time and the person
    ``names`` (lower case; :func:`topic_stems`): "What did I cook on 17 April?" and "I cooked a curry" do; "What did
    I do on 10 April?" and "Today [= 3 April 2024] I went to the gym" do not, nor do "Where did Caroline go on 3
    May?" and "That's great, Caroline!"."""
    return bool(topic_stems(question, names) & topic_stems(text, names))


def mention_days(windows: Sequence[TimeSpan], tz: tzinfo) -> list[tuple[date, date, int]]:
    """What :meth:`Store.segments_mentioning` looks up for the half-open UTC ``windows``: per window ``(first, last,
    max_days)``, the calendar days in ``tz`` it touches, a day wider on each side, and the most days a mentioned
    period in it may last (its length in days rounded up, plus one). A superset of what :func:`mentions_in` takes
    (its slack for a day of 23 or 25 hours at a DST change, a zone whose midnight repeats), which then reads the
    texts it finds for the exact test."""
    out = []
    for w in windows:
        first = w.start.astimezone(tz).date() - timedelta(days=1)
        last = (w.end - timedelta(microseconds=1)).astimezone(tz).date() + timedelta(days=1)
        out.append((first, last, math.ceil(max(w.end - w.start, timedelta(days=1)) / timedelta(days=1)) + 1))
    return out


def tider_score(score: float, start: datetime, end: datetime, loc: TimeLocalisation, *, decay: bool = True,
                mentioned: bool = False) -> tuple[float, float, float]:
    """``(new score, bonus, factor)`` of one candidate spanning ``[start, end]`` (formula in the module
    docstring); ``mentioned``: its text mentions a date in a window (:func:`mentions_in`), which puts it in the
    window as its span would. ``decay=False`` keeps the overlap bonus and sets the factor to 1 (the "+ time channel"
    step of TIDER's cumulative ablation)."""
    if not loc.detect:
        return score, 0.0, 1.0
    days = 0.0 if mentioned else distance_days(start, end, loc.windows)
    bonus = OVERLAP_BONUS if days == 0 else 0.0
    factor = distance_factor(days) if decay else 1.0
    return round((score + bonus) * factor, 6), bonus, factor
