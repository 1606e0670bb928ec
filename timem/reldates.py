"""Deterministic resolution of relative time expressions ("yesterday", "上周五", ...).

:func:`resolve_relative_dates` annotates each relative phrase with the absolute date(s) it
means, so that no model ever sees an unresolved "yesterday":

    "I went there yesterday" (said 8 May 2023) -> "I went there yesterday [= 7 May 2023]"
    "我昨天去了" -> "我昨天[=2023年5月7日]去了"

Conventions (``d`` = the calendar date of ``ref`` in ``ref``'s own zone; weeks are ISO weeks,
Monday-Sunday; a weekend is the Saturday-Sunday of an ISO week):

* today / tonight / this morning|afternoon|evening = ``d``; yesterday / last night = ``d - 1``;
  the day before yesterday = ``d - 2``; tomorrow = ``d + 1``; the day after tomorrow = ``d + 2``.
* last / this / next week = the ISO week before / holding / after ``d``'s week, labelled by its
  Monday ("week of 1 May 2023"); "the week before last" = two ISO weeks back.
* last / this / next month (year) = the calendar month (year) before / holding / after ``d``'s.
* last weekend, this past weekend = the weekend of the previous ISO week; this / next weekend
  = the weekend of ``d``'s / the next ISO week; "N weekends ago" = N ISO weeks back.
* last Friday, this past Friday = the most recent Friday strictly before ``d``; next Friday,
  this coming Friday = the first Friday strictly after ``d``. Abbreviations (Fri, Tues) count
  only when capitalised ("last sat down" is not a date).
* "N days|weeks|months|years ago", "N ... from now" and "in N ..." (N a digit or one..twelve,
  "a"/"an" = 1) shift ``d`` by N units and report the unit that contains the result (the day,
  ISO week, month or year). "in a/one <unit>" is not resolved ("Rome wasn't built in a day").
* Chinese: 今天/今晚/今早 ``d``, 昨天/昨晚 ``d-1``, 前天 ``d-2``, 大前天 ``d-3``, 明天/明晚/明早
  ``d+1``, 后天 ``d+2``, 大后天 ``d+3``; 上(上)周/上个星期/上礼拜, 这周/本周, 下(下)周 are ISO
  weeks; 上周五 etc. = that weekday *of the previous ISO week* (Chinese usage, unlike English
  "last Friday"); 上周末/这周末/下周末 weekends; 上个月/上月, 这个月/本月, 下个月 months; 前年
  去年 今年 明年 后年 years; "三天前", "两个月前", "10年前" = N units ago. Chinese phrases get
  Chinese annotations without a space: "昨天[=2023年5月7日]".

Not resolved, on purpose (ambiguous): bare weekdays ("Friday", "周五"), "this Friday", month
names ("May"), seasons, "recently", "a few/couple of days ago", "三天后"-style narrative
offsets, and phrases after a determiner that makes them a duration or an ordinal ("the last
week", "my last year at school", "the next month", "last week of June").

Idempotent: a phrase already followed by a ``[=`` annotation, or inside one, is left alone.

Reading the annotations back, and the days of a month written out ("on 7 May"), is
:mod:`timem.written_dates`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from dateutil.relativedelta import FR, MO, SA, SU, TH, TU, WE, relativedelta

from timem.written_dates import _MONTHS

#: the reading of dates out of a text (annotations read back, days written out) lives in :mod:`timem.written_dates`
__all__ = ["Resolution", "resolve_relative_dates"]

_WEEKDAYS = (MO, TU, WE, TH, FR, SA, SU)
_EN_WEEKDAY = {"monday": 0, "mon": 0, "tuesday": 1, "tue": 1, "tues": 1, "wednesday": 2, "wed": 2,
               "weds": 2, "thursday": 3, "thu": 3, "thur": 3, "thurs": 3, "friday": 4, "fri": 4,
               "saturday": 5, "sat": 5, "sunday": 6, "sun": 6}
_EN_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_ZH_DIGIT = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_ZH_OFFSET = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}


@dataclass(frozen=True)
class Resolution:
    """One resolved phrase.

    ``start``/``end`` are character offsets of ``phrase`` in the *input* text; ``start_date`` and
    ``end_date`` bound the meant period (both inclusive, calendar dates in ``ref``'s zone);
    ``granularity`` is ``day``, ``week``, ``weekend``, ``month`` or ``year``; ``label`` is the
    annotation text (e.g. ``"week of 1 May 2023"``, ``"2023年4月"``); ``lang`` is ``en`` or ``zh``.
    """

    phrase: str
    start: int
    end: int
    start_date: date
    end_date: date
    granularity: str
    label: str
    lang: str


# ---------------------------------------------------------------- spans and labels
def _span(gran: str, d: date) -> tuple[date, date]:
    if gran == "day":
        return d, d
    if gran in ("week", "weekend"):
        monday = d + relativedelta(weekday=MO(-1))
        return (monday, monday + relativedelta(days=6)) if gran == "week" else (
            monday + relativedelta(weekday=SA), monday + relativedelta(weekday=SU))
    if gran == "month":
        return d + relativedelta(day=1), d + relativedelta(day=31)
    return date(d.year, 1, 1), date(d.year, 12, 31)


def _en_day(d: date, year: bool = True) -> str:
    return f"{d.day} {_MONTHS[d.month - 1]}" + (f" {d.year}" if year else "")


def _en_range(a: date, b: date) -> str:
    if a.year != b.year:
        return f"{_en_day(a)}–{_en_day(b)}"
    if a.month != b.month:
        return f"{_en_day(a, False)}–{_en_day(b)}"
    return f"{a.day}–{_en_day(b)}"


def _zh_range(a: date, b: date) -> str:
    head = f"{a.year}年{a.month}月{a.day}日至"
    if a.year != b.year:
        return f"{head}{b.year}年{b.month}月{b.day}日"
    return f"{head}{b.month}月{b.day}日" if a.month != b.month else f"{head}{b.day}日"


def _label(gran: str, lo: date, hi: date, lang: str) -> str:
    if lang == "zh":
        return {"day": f"{lo.year}年{lo.month}月{lo.day}日", "month": f"{lo.year}年{lo.month}月",
                "year": f"{lo.year}年"}.get(gran) or _zh_range(lo, hi) + ("周末" if gran == "weekend" else "")
    return {"day": _en_day(lo), "week": f"week of {_en_day(lo)}",
            "weekend": f"weekend of {_en_range(lo, hi)}",
            "month": f"{_MONTHS[lo.month - 1]} {lo.year}", "year": str(lo.year)}[gran]


def _shift(gran: str, d: date, n: int) -> date:
    unit = {"day": "days", "week": "weeks", "weekend": "weeks", "month": "months", "year": "years"}[gran]
    return d + relativedelta(**{unit: n})  # type: ignore[arg-type]  # one keyword: days/weeks/months/years


# ---------------------------------------------------------------- English rules
_NUM = r"(\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_WD = "|".join(sorted(_EN_WEEKDAY, key=len, reverse=True))
#: words before "last/next ..." that make it an ordinal or a duration ("the last week", "my last year");
#: "her"/"that" are left out on purpose ("I called her last Friday", "I said that yesterday").
_DETERMINER = re.compile(r"\b(?:the|these|those|every|each|my|your|his|our|their|its)\s+$", re.IGNORECASE)
_OF_AFTER = re.compile(r"\s+of\b", re.IGNORECASE)
Found = tuple[str, date] | None  #: (granularity, a date inside the meant period)


def _num(s: str) -> int:
    return int(s) if s.isdigit() else _EN_NUM[s.lower()]


def _en_weekday(m: re.Match[str], d: date) -> Found:
    word = m.group(2)
    if len(word) < 6 and not word[0].isupper():
        return None  # lower-case abbreviation: "last sat", "last sun" are rarely dates
    wd = _WEEKDAYS[_EN_WEEKDAY[word.lower()]]
    if m.group(1).lower().split()[-1] in ("next", "coming"):
        return "day", d + relativedelta(days=1, weekday=wd(+1))
    return "day", d + relativedelta(days=-1, weekday=wd(-1))


def _en_weekend(m: re.Match[str], d: date) -> Found:
    which = m.group(1).lower().split()
    offset = -1 if which[-1] in ("last", "past") else {"this": 0, "next": 1}[which[0]]
    return "weekend", _shift("week", d, offset)


def _en_rel(m: re.Match[str], d: date) -> Found:
    which, gran = m.group(1).lower().split()[0], m.group(2).lower()
    return gran, _shift(gran, d, {"last": -1, "this": 0, "next": 1}[which])


def _en_day_word(m: re.Match[str], d: date) -> Found:
    w = " ".join(m.group(0).lower().split())
    off = {"yesterday": -1, "last night": -1, "tomorrow": 1}.get(w, 0)
    return "day", d + relativedelta(days=off)


def _en_ago(m: re.Match[str], d: date) -> Found:
    n, gran = _num(m.group(1)), m.group(2).lower()
    return gran, _shift(gran, d, -n if m.group(3).lower() == "ago" else n)


def _en_in(m: re.Match[str], d: date) -> Found:
    n = _num(m.group(1))
    before = m.string[max(0, m.start() - 12):m.start()].lower().split()
    if n < 2 or (before and before[-1] in ("once", "twice", "times", "just", "only", "all", "even")):
        return None
    return m.group(2).lower(), _shift(m.group(2).lower(), d, n)


_I = re.IGNORECASE
_EN_RULES: list[tuple[re.Pattern[str], Callable[[re.Match[str], date], Found], bool]] = [
    # (pattern, resolver, guarded by determiner-before / "of"-after checks)
    (re.compile(r"\bthe\s+day\s+before\s+yesterday\b", _I),
     lambda m, d: ("day", d - timedelta(days=2)), False),
    (re.compile(r"\bthe\s+day\s+after\s+tomorrow\b", _I), lambda m, d: ("day", d + timedelta(days=2)), False),
    (re.compile(r"\bthe\s+(week|month|year)\s+before\s+last\b", _I),
     lambda m, d: (m.group(1).lower(), _shift(m.group(1).lower(), d, -2)), False),
    (re.compile(rf"\b(last|this\s+past|next|this\s+coming)\s+({_WD})\b", _I), _en_weekday, True),
    (re.compile(r"\b(last|this\s+past|this|next)\s+weekend\b", _I), _en_weekend, True),
    (re.compile(r"\b(last|this|next)\s+(week|month|year)\b", _I), _en_rel, True),
    (re.compile(r"\b(?:yesterday|today|tonight|tomorrow|last\s+night"
                r"|this\s+(?:morning|afternoon|evening))\b", _I), _en_day_word, True),
    (re.compile(rf"\b{_NUM}\s+(day|week|weekend|month|year)s?\s+(ago|from\s+now)\b", _I), _en_ago, False),
    (re.compile(rf"\bin\s+{_NUM}\s+(day|week|month|year)s?\b", _I), _en_in, False),
]


# ---------------------------------------------------------------- Chinese rules
_ZH_PRE = r"(上上|上|下下|下|这|本)"
#: characters before 上/下 that make them part of another word (马上, 晚上, 一下, 以下, 登上 ...)
_ZH_BAD_BEFORE = {"上": set("马晚早登爬跟赶路身手线网"), "下": set("一以如底天乡留放地手私剩")}


def _zh_num(s: str) -> int | None:
    if s.isdigit():
        return int(s)
    if "十" in s:
        tens, _, ones = s.partition("十")
        if len(tens) > 1 or len(ones) > 1:
            return None
        return _ZH_DIGIT.get(tens, 1 if not tens else 0) * 10 + _ZH_DIGIT.get(ones, 0)
    return _ZH_DIGIT.get(s) if len(s) == 1 else None


def _zh_prefix_ok(m: re.Match[str]) -> bool:
    before = m.string[m.start() - 1] if m.start() else ""
    return before not in _ZH_BAD_BEFORE.get(m.group(1)[0], set())


def _zh_weekday(m: re.Match[str], d: date) -> Found:
    if not _zh_prefix_ok(m):
        return None
    monday = _shift("week", d, _ZH_OFFSET[m.group(1)]) + relativedelta(weekday=MO(-1))
    return "day", monday + relativedelta(weekday=_WEEKDAYS[_ZH_WEEKDAY[m.group(2)]](+1))


def _zh_rel(gran: str) -> Callable[[re.Match[str], date], Found]:
    def f(m: re.Match[str], d: date) -> Found:
        if not _zh_prefix_ok(m):
            return None
        return gran, _shift(gran, d, _ZH_OFFSET[m.group(1)])
    return f


def _zh_month(m: re.Match[str], d: date) -> Found:
    key = m.group(1)
    if key in ("上", "下") and not _zh_prefix_ok(m):
        return None  # 登上月球, 晚上月亮 ...
    return "month", _shift("month", d, _ZH_OFFSET[key.removesuffix("个")])


_ZH_DAYS = {"大前天": -3, "前天": -2, "昨天": -1, "昨晚": -1, "今天": 0, "今晚": 0, "今早": 0,
            "明天": 1, "明晚": 1, "明早": 1, "后天": 2, "大后天": 3}
_ZH_YEARS = {"大前年": -3, "前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2, "大后年": 3}


def _zh_word(table: dict[str, int], gran: str) -> Callable[[re.Match[str], date], Found]:
    def f(m: re.Match[str], d: date) -> Found:
        w, s = m.group(0), m.string
        before, after = (s[m.start() - 1] if m.start() else ""), s[m.end():m.end() + 1]
        if w[0] in "前后" and ((before != "" and before in "以之从提目当先然最") or after in ("性", "期")
                             or s[max(0, m.start() - 2):m.start()] == "先天"):
            return None  # 以前天天, 先天后天, 后天性 ...
        return gran, _shift(gran, d, table[w])
    return f


def _zh_ago(m: re.Match[str], d: date) -> Found:
    n, ge, unit = _zh_num(m.group(1)), m.group(2), m.group(3)
    before = m.string[m.start() - 1] if m.start() else ""
    part_of_bigger_number = before != "" and (before.isdigit() or before in "第几十两" + "".join(_ZH_DIGIT))
    if n is None or n > 100 or (unit == "月" and not ge) or part_of_bigger_number:
        return None
    gran = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month",
            "年": "year"}[unit]
    return gran, _shift(gran, d, -n)


_ZH_RULES: list[tuple[re.Pattern[str], Callable[[re.Match[str], date], Found], bool]] = [
    (re.compile(_ZH_PRE + r"个?(?:周|星期|礼拜)([一二三四五六日天])"), _zh_weekday, False),
    (re.compile(_ZH_PRE + r"个?周末"), _zh_rel("weekend"), False),
    (re.compile(_ZH_PRE + r"个?(?:周|星期|礼拜)(?![一二三四五六日天末围边期岁年])"), _zh_rel("week"), False),
    (re.compile(r"(上上个|上个|上|下下个|下个|下|这个|本)月(?![份球亮光])"), _zh_month, False),
    (re.compile("|".join(sorted(_ZH_DAYS, key=len, reverse=True))), _zh_word(_ZH_DAYS, "day"), False),
    (re.compile("|".join(sorted(_ZH_YEARS, key=len, reverse=True))), _zh_word(_ZH_YEARS, "year"), False),
    (re.compile(r"(\d{1,3}|[一二两三四五六七八九十]{1,3})(个)?(天|日|周|星期|礼拜|月|年)(?:以前|之前|前)"),
     _zh_ago, False),
]

_ANNOTATION = re.compile(r"\s?[\[［]=[^\]］]*[\]］]")
_POSSESSIVE = re.compile(r"['’]s\b")


def resolve_relative_dates(text: str, ref: datetime | date) -> tuple[str, list[Resolution]]:
    """Annotate relative time phrases in ``text`` with the absolute dates they mean.

    Args:
        text: an utterance (English and/or Chinese).
        ref: when it was said, as *local* time: pass ``event_time.astimezone(user_tz)``. Its own
            wall-clock calendar date is used (a naive datetime or a ``date`` is taken as is).

    Returns:
        ``(annotated_text, resolutions)``: each resolved phrase is followed by ``" [= <label>]"``
        (English; after a possessive "'s" if present) or ``"[=<label>]"`` (Chinese);
        ``resolutions`` are in text order with offsets into the *input* text. Text without
        relative phrases comes back unchanged; already-annotated phrases are skipped.
    """
    d = ref.date() if isinstance(ref, datetime) else ref
    taken = [(m.start(), m.end()) for m in _ANNOTATION.finditer(text)]
    found: list[tuple[Resolution, int]] = []
    for rules, lang in ((_EN_RULES, "en"), (_ZH_RULES, "zh")):
        for pattern, resolve, guarded in rules:
            for m in pattern.finditer(text):
                s, e = m.span()
                if any(s < b and a < e for a, b in taken):
                    continue
                if guarded and (_DETERMINER.search(text[max(0, s - 12):s]) or _OF_AFTER.match(text, e)):
                    continue
                pos = e
                if lang == "en" and (pm := _POSSESSIVE.match(text, e)):
                    pos = pm.end()
                if re.match(r"\s?[\[［]=", text[pos:pos + 3]):
                    taken.append((s, e))  # already annotated
                    continue
                hit = resolve(m, d)
                if hit is None:
                    continue
                lo, hi = _span(*hit)
                label = _label(hit[0], lo, hi, lang)
                found.append((Resolution(m.group(0), s, e, lo, hi, hit[0], label, lang), pos))
                taken.append((s, e))
    found.sort(key=lambda r: r[0].start)
    out, last = [], 0
    for r, pos in found:
        out += [text[last:pos], f" [= {r.label}]" if r.lang == "en" else f"[={r.label}]"]
        last = pos
    return "".join(out) + text[last:], [r for r, _ in found]
