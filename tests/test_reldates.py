"""Relative-date resolution: exact dates on fixed references, conventions, Chinese, idempotency."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from timem.reldates import Resolution, resolve_relative_dates

BERLIN = ZoneInfo("Europe/Berlin")
MON = datetime(2023, 5, 8, 13, 56, tzinfo=BERLIN)  # Monday 8 May 2023


def annotate(text: str, ref: datetime | date = MON) -> str:
    return resolve_relative_dates(text, ref)[0]


@pytest.mark.parametrize("text, expected", [
    ("I went there yesterday", "I went there yesterday [= 7 May 2023]"),
    ("Last week was busy.", "Last week [= week of 1 May 2023] was busy."),
    ("We moved last month.", "We moved last month [= April 2023]."),
    ("I painted it last year", "I painted it last year [= 2022]"),
    ("two weeks ago", "two weeks ago [= week of 24 April 2023]"),
    ("3 days ago", "3 days ago [= 5 May 2023]"),
    ("a month ago", "a month ago [= April 2023]"),
    ("ten years ago", "ten years ago [= 2013]"),
    ("a day ago", "a day ago [= 7 May 2023]"),
    ("in 2 days", "in 2 days [= 10 May 2023]"),
    ("in three weeks", "in three weeks [= week of 29 May 2023]"),
    ("two months from now", "two months from now [= July 2023]"),
    ("see you tomorrow!", "see you tomorrow [= 9 May 2023]!"),
    ("the day before yesterday", "the day before yesterday [= 6 May 2023]"),
    ("the day after tomorrow", "the day after tomorrow [= 10 May 2023]"),
    ("tonight", "tonight [= 8 May 2023]"),
    ("this morning", "this morning [= 8 May 2023]"),
    ("Last night was amazing", "Last night [= 7 May 2023] was amazing"),
    ("today", "today [= 8 May 2023]"),
    ("last Friday", "last Friday [= 5 May 2023]"),
    ("this past Friday", "this past Friday [= 5 May 2023]"),
    ("last Monday", "last Monday [= 1 May 2023]"),
    ("next Friday", "next Friday [= 12 May 2023]"),
    ("next Monday", "next Monday [= 15 May 2023]"),
    ("this coming Sunday", "this coming Sunday [= 14 May 2023]"),
    ("Last Fri I went", "Last Fri [= 5 May 2023] I went"),
    ("last Tues", "last Tues [= 2 May 2023]"),
    ("last weekend", "last weekend [= weekend of 6–7 May 2023]"),
    ("this past weekend", "this past weekend [= weekend of 6–7 May 2023]"),
    ("this weekend", "this weekend [= weekend of 13–14 May 2023]"),
    ("next weekend", "next weekend [= weekend of 20–21 May 2023]"),
    ("two weekends ago", "two weekends ago [= weekend of 29–30 April 2023]"),
    ("next week", "next week [= week of 15 May 2023]"),
    ("this week", "this week [= week of 8 May 2023]"),
    ("the week before last", "the week before last [= week of 24 April 2023]"),
    ("next month", "next month [= June 2023]"),
    ("this month", "this month [= May 2023]"),
    ("next year", "next year [= 2024]"),
    ("last year's festival", "last year's [= 2022] festival"),
    ("I called her last Friday", "I called her last Friday [= 5 May 2023]"),
    ("I realised that yesterday", "I realised that yesterday [= 7 May 2023]"),
    ("Yesterday I went, and tomorrow I go.",
     "Yesterday [= 7 May 2023] I went, and tomorrow [= 9 May 2023] I go."),
])
def test_english_exact_dates(text: str, expected: str) -> None:
    assert annotate(text) == expected


@pytest.mark.parametrize("text", [
    "Friday was fun", "I saw her in May", "May I come in?", "Rome wasn't built in a day",
    "the last week of June", "over the last week", "my last year at school", "for the next month",
    "the last Friday of the month", "I last sat down", "it will last a year", "recently",
    "a few weeks ago", "a couple of days ago", "I did it once in two weeks", "this Friday",
    "Nothing relative here.", "",
])
def test_ambiguous_or_absent_phrases_are_left_alone(text: str) -> None:
    out, res = resolve_relative_dates(text, MON)
    assert out == text and res == []


@pytest.mark.parametrize("text, expected", [
    ("我昨天去了", "我昨天[=2023年5月7日]去了"),
    ("今天", "今天[=2023年5月8日]"), ("前天", "前天[=2023年5月6日]"), ("明天", "明天[=2023年5月9日]"),
    ("后天见", "后天[=2023年5月10日]见"), ("大前天", "大前天[=2023年5月5日]"),
    ("昨晚", "昨晚[=2023年5月7日]"),
    ("上周", "上周[=2023年5月1日至7日]"), ("上个星期", "上个星期[=2023年5月1日至7日]"),
    ("下周", "下周[=2023年5月15日至21日]"), ("下个星期", "下个星期[=2023年5月15日至21日]"),
    ("这周", "这周[=2023年5月8日至14日]"), ("本周", "本周[=2023年5月8日至14日]"),
    ("上上周", "上上周[=2023年4月24日至30日]"),
    ("上个月", "上个月[=2023年4月]"), ("下个月", "下个月[=2023年6月]"), ("这个月", "这个月[=2023年5月]"),
    ("本月", "本月[=2023年5月]"), ("上月", "上月[=2023年4月]"),
    ("去年", "去年[=2022年]"), ("明年", "明年[=2024年]"), ("今年", "今年[=2023年]"),
    ("前年", "前年[=2021年]"),
    ("上周五", "上周五[=2023年5月5日]"), ("上星期一", "上星期一[=2023年5月1日]"),
    ("上周日", "上周日[=2023年5月7日]"), ("下周五", "下周五[=2023年5月19日]"),
    ("这周五", "这周五[=2023年5月12日]"),
    ("上周末", "上周末[=2023年5月6日至7日周末]"),
    ("三天前", "三天前[=2023年5月5日]"), ("两个月前", "两个月前[=2023年3月]"), ("10年前", "10年前[=2013年]"),
    ("二十三天前", "二十三天前[=2023年4月15日]"),
])
def test_chinese_exact_dates(text: str, expected: str) -> None:
    assert annotate(text) == expected


@pytest.mark.parametrize("text", ["以前天天跑步", "先天后天", "登上月球", "马上周末", "看一下周末的安排",
                                  "这周围很安静",
                                  "2023年前", "第三天前", "周五", "几天前"])
def test_chinese_look_alikes_are_left_alone(text: str) -> None:
    assert annotate(text) == text


def test_chinese_last_weekday_means_previous_iso_week() -> None:
    # Sunday 14 May 2023: English "last Friday" is 12 May, Chinese 上周五 is Friday of the week before.
    sun = date(2023, 5, 14)
    assert annotate("last Friday", sun) == "last Friday [= 12 May 2023]"
    assert annotate("上周五", sun) == "上周五[=2023年5月5日]"


def test_resolution_fields() -> None:
    text = "I went there yesterday and last week"
    out, res = resolve_relative_dates(text, MON)
    assert [r.phrase for r in res] == ["yesterday", "last week"]
    y, w = res
    assert isinstance(y, Resolution)
    assert text[y.start:y.end] == "yesterday" and text[w.start:w.end] == "last week"
    assert (y.start_date, y.end_date, y.granularity, y.label, y.lang) == (
        date(2023, 5, 7), date(2023, 5, 7), "day", "7 May 2023", "en")
    assert (w.start_date, w.end_date, w.granularity) == (date(2023, 5, 1), date(2023, 5, 7), "week")
    with pytest.raises(AttributeError):
        y.label = "x"  # type: ignore[misc]
    m = resolve_relative_dates("last month", MON)[1][0]
    assert (m.start_date, m.end_date) == (date(2023, 4, 1), date(2023, 4, 30))
    yr = resolve_relative_dates("去年", MON)[1][0]
    assert (yr.start_date, yr.end_date, yr.lang) == (date(2022, 1, 1), date(2022, 12, 31), "zh")


def test_boundaries_across_month_and_year() -> None:
    new_year = date(2024, 1, 1)  # a Monday
    assert annotate("yesterday", new_year) == "yesterday [= 31 December 2023]"
    assert annotate("last week", new_year) == "last week [= week of 25 December 2023]"
    assert annotate("last month", new_year) == "last month [= December 2023]"
    assert annotate("last year", new_year) == "last year [= 2023]"
    assert annotate("last weekend", new_year) == "last weekend [= weekend of 30–31 December 2023]"
    oct1 = date(2023, 10, 1)  # a Sunday
    assert annotate("this weekend", oct1) == "this weekend [= weekend of 30 September–1 October 2023]"
    assert annotate("last weekend", oct1) == "last weekend [= weekend of 23–24 September 2023]"
    assert annotate("a month ago", date(2023, 3, 31)) == "a month ago [= February 2023]"
    assert annotate("上周", new_year) == "上周[=2023年12月25日至31日]"
    assert annotate("last weekend", date(2023, 1, 2)) == (
        "last weekend [= weekend of 31 December 2022–1 January 2023]")


def test_ref_uses_its_own_local_date() -> None:
    # 00:30 on 8 May in Berlin is still 7 May in UTC; the local date counts.
    ref = datetime(2023, 5, 8, 0, 30, tzinfo=BERLIN)
    assert annotate("yesterday", ref) == "yesterday [= 7 May 2023]"


def test_idempotent_on_annotated_text() -> None:
    text = "Yesterday I ran; last week [= week of 1 May 2023] I swam; 我昨天[=2023年5月7日]去了。"
    once = annotate(text)
    assert once == ("Yesterday [= 7 May 2023] I ran; last week [= week of 1 May 2023] I swam; "
                    "我昨天[=2023年5月7日]去了。")
    out, res = resolve_relative_dates(once, MON)
    assert out == once and res == []


_PHRASES = ["yesterday", "last week", "last month", "last year", "two weeks ago", "in 3 days", "tomorrow",
            "last Friday", "next Friday", "this past Sunday", "last weekend", "next month", "昨天", "上周五",
            "下个月", "去年", "三天前", "the day before yesterday", "tonight", "last year's", "上周末"]


@given(st.dates(min_value=date(1990, 1, 1), max_value=date(2090, 12, 31)),
       st.lists(st.sampled_from(_PHRASES), min_size=1, max_size=4))
def test_property_idempotent_and_offsets_valid(ref: date, phrases: list[str]) -> None:
    text = " and ".join(f"it was {p}" for p in phrases)
    out, res = resolve_relative_dates(text, ref)
    assert len(res) == len(phrases)
    assert all(text[r.start:r.end] == r.phrase and r.start_date <= r.end_date for r in res)
    again, res2 = resolve_relative_dates(out, ref)
    assert again == out and res2 == []


@given(st.dates(min_value=date(1990, 1, 1), max_value=date(2090, 12, 31)),
       st.sampled_from(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]))
def test_property_weekday_conventions(ref: date, day: str) -> None:
    (last,) = resolve_relative_dates(f"last {day}", ref)[1]
    (nxt,) = resolve_relative_dates(f"next {day}", ref)[1]
    assert last.start_date.strftime("%A") == day and nxt.start_date.strftime("%A") == day
    assert ref - timedelta(days=7) <= last.start_date < ref < nxt.start_date <= ref + timedelta(days=7)


@given(st.dates(min_value=date(1990, 1, 1), max_value=date(2090, 12, 31)))
def test_property_week_month_year_conventions(ref: date) -> None:
    (w,) = resolve_relative_dates("last week", ref)[1]
    assert w.start_date.weekday() == 0 and w.end_date - w.start_date == timedelta(days=6)
    assert w.start_date.isocalendar()[:2] == (ref - timedelta(days=7)).isocalendar()[:2]
    (m,) = resolve_relative_dates("last month", ref)[1]
    assert m.start_date.day == 1 and m.end_date + timedelta(days=1) == ref.replace(day=1)
    (y,) = resolve_relative_dates("next year", ref)[1]
    assert (y.start_date, y.end_date) == (date(ref.year + 1, 1, 1), date(ref.year + 1, 12, 31))
    (we,) = resolve_relative_dates("this weekend", ref)[1]
    assert we.start_date.weekday() == 5 and we.end_date - we.start_date == timedelta(days=1)
    assert we.start_date.isocalendar()[:2] == ref.isocalendar()[:2]
