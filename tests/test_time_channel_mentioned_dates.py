"""Found by trying it: said on 8 May, "Yesterday I went hiking" is stored as "yesterday [= 7 May 2024]", yet "What did
I do on 7 May?" did not find it through the TIDER time channel, which read only when a line was said (8 May). Event
time is not said time: a date a leaf's text mentions puts it in a question's window as its said time does, when that
date is no longer than the window. Real DuckDB file, the rules, no LLM."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from trial_support import fixtures

from timem.models import TimeSpan
from timem.recall.time_window import day_window
from timem.reldates import _label, _span, resolve_relative_dates

embedder, eng = fixtures()

MAY8 = datetime(2024, 5, 8, 18, tzinfo=UTC)
LINES = [  # (days after 1 May 09:00 UTC, line)
    (0, "I repainted the garden fence."),
    (3, "I baked sourdough bread for the neighbours."),
    (6, "I watched a documentary about volcanoes."),  # said on 7 May
    (7, "Yesterday I went hiking up Mount Rigi with my sister."),  # said on 8 May, about 7 May
    (7, "Last month I started learning the cello."),  # said on 8 May, about April
    (9, "I fixed the bike's rear brake."),
]


WORDS = ("fence", "sourdough", "volcanoes", "hiking", "cello", "brake")


def _say(eng) -> dict[str, str]:
    """Mia's lines, each in its own session; returns the L1 leaf id of each line by its word of :data:`WORDS`."""
    start = datetime(2024, 5, 1, 9, tzinfo=UTC)
    for k, (day, line) in enumerate(LINES):
        eng.remember("mia", f"s{k}", line, start + timedelta(days=day, minutes=k), user_name="Mia")
    return {w: n.id for n in eng.nodes("mia", 1) for w in WORDS if w in n.content}


def _candidate(res, node_id: str):
    return next(c for c in res.trace.candidates if c.node_id == node_id)


@pytest.mark.parametrize(("question", "asked"), [
    ("What did I do on 7 May?", datetime(2024, 5, 20, 12, tzinfo=UTC)),
    ("What did I do yesterday?", MAY8),
])
def test_a_leaf_is_in_the_window_of_the_date_it_mentions(eng, question, asked):
    ids = _say(eng)
    res = eng.recall("mia", question, asked)
    hiking = _candidate(res, ids["hiking"])
    assert hiking.time_bonus == 0.3 and hiking.time_factor == 1.0 and hiking.kept
    said_that_day = _candidate(res, ids["volcanoes"])  # said on 7 May: in the window, as before
    assert said_that_day.time_bonus == 0.3
    assert ids["hiking"] in {n.id for n in res.nodes}
    assert any("1 mention a date in it" in note for note in res.trace.notes), res.trace.notes


def test_a_mentioned_period_longer_than_the_window_does_not_count(eng):
    """"Last month [= April 2024]" is not in the window of "on 20 April": a month says little about one day."""
    ids = _say(eng)
    res = eng.recall("mia", "What did I do on 20 April?", datetime(2024, 5, 20, 12, tzinfo=UTC))
    cello = [c for c in res.trace.candidates if c.node_id == ids["cello"]]
    assert all(c.time_bonus == 0.0 for c in cello)
    res = eng.recall("mia", "What did I do in April 2024?", datetime(2024, 5, 20, 12, tzinfo=UTC))
    assert _candidate(res, ids["cello"]).time_bonus == 0.3


def test_a_leaf_said_in_the_window_still_counts_without_a_mention(eng):
    ids = _say(eng)
    res = eng.recall("mia", "What did I do on 4 May?", datetime(2024, 5, 20, 12, tzinfo=UTC))
    assert _candidate(res, ids["sourdough"]).time_bonus == 0.3
    hiking = [c for c in res.trace.candidates if c.node_id == ids["hiking"]]
    assert all(c.time_bonus == 0.0 for c in hiking)


@pytest.mark.parametrize("gran", ["day", "week", "weekend", "month", "year"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_annotation_label_reads_back_as_its_period(gran, lang):
    from timem.written_dates import annotated_periods

    for k in range(0, 800, 7):
        lo, hi = _span(gran, date(2022, 12, 20) + timedelta(days=k))
        label = _label(gran, lo, hi, lang)
        text = f"x [= {label}] y" if lang == "en" else f"x[={label}]y"
        assert annotated_periods(text) == [(lo, hi)], label


def test_annotations_of_real_sentences_read_back():
    from timem.written_dates import annotated_periods

    said = datetime(2023, 5, 8, 13, 56)
    text, found = resolve_relative_dates("Yesterday I ran; last weekend we hiked; 上周五我去了; two weeks ago", said)
    assert annotated_periods(text) == [(r.start_date, r.end_date) for r in found]
    assert annotated_periods("I'll come [= soon] on [= 31 February 2023]") == []


def test_mentions_in_needs_overlap_and_no_longer_period():
    from timem.recall.time_channel import mentions_in

    tz = ZoneInfo("Europe/Berlin")
    day = [day_window(date(2023, 5, 7), date(2023, 5, 7), tz)]
    week = [day_window(date(2023, 5, 1), date(2023, 5, 7), tz)]
    assert mentions_in("hiking yesterday [= 7 May 2023]", day, tz)
    assert mentions_in("hiking yesterday [= 7 May 2023]", week, tz)
    assert not mentions_in("hiking yesterday [= 8 May 2023]", day, tz)
    assert not mentions_in("last week [= week of 1 May 2023]", day, tz)
    assert mentions_in("last week [= week of 1 May 2023]", week, tz)
    rolling = [TimeSpan(start=datetime(2023, 5, 6, 12, tzinfo=UTC), end=datetime(2023, 5, 8, 12, tzinfo=UTC))]
    assert mentions_in("yesterday [= 7 May 2023]", rolling, tz)


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/Santiago", "Pacific/Kiritimati"])
def test_the_stored_dates_find_every_leaf_mentions_in_takes(store, zone):
    """The store looks the leaves up by the dates they mention (``node_mentions``, by :func:`mention_days`) before
    :func:`mentions_in` reads them: it must find every leaf that :func:`mentions_in` takes over all leaves, in both
    languages and in zones with DST and a skipped midnight (Santiago) or 14 hours from UTC, and narrow: find none
    whose every mentioned period is days away from the windows or longer than they allow."""
    import numpy as np

    from timem.models import Level, MemoryNode
    from timem.recall.time_channel import mention_days, mentions_in
    from timem.written_dates import annotated_periods

    tz = ZoneInfo(zone)
    said = [datetime(2023, 3, 1, 12, tzinfo=UTC) + timedelta(days=k, hours=7 * k) for k in range(0, 120, 2)]
    phrases = "yesterday; last week; last weekend; last month; 昨天; 上周; 上周末; 上个月; three days ago; last year"
    texts = [resolve_relative_dates(phrase, at)[0] for at in said for phrase in phrases.split("; ")]
    nodes = [MemoryNode(id=f"n{k:04d}", user_id="mia", level=Level.SEGMENT, window_key=f"segment:t{k}",
                        span_start=said[0], span_end=said[0], content=text, source_turn_ids=[f"t{k}"],
                        model_id="verbatim", prompt_version="v") for k, text in enumerate(texts)]
    vecs = np.zeros((len(nodes), store.dim), dtype=np.float32)
    vecs[:, 0] = 1.0
    store.add_nodes(nodes, vecs)
    windows = {"day": [day_window(date(2023, 5, 7), date(2023, 5, 7), tz)],
               "week": [day_window(date(2023, 5, 1), date(2023, 5, 7), tz)],
               "month": [day_window(date(2023, 5, 1), date(2023, 5, 31), tz)],
               "two": [day_window(date(2023, 3, 1), date(2023, 3, 31), tz),
                       day_window(date(2023, 5, 1), date(2023, 5, 31), tz)],
               "year": [day_window(date(2023, 1, 1), date(2023, 12, 31), tz)],
               "rolling": [TimeSpan(start=datetime(2023, 4, 6, 12, tzinfo=UTC),
                                    end=datetime(2023, 4, 8, 12, tzinfo=UTC))]}
    for name, ws in windows.items():
        found = dict(store.segments_mentioning("mia", mention_days(ws, tz), None))
        taken = {n.id for n in nodes if mentions_in(n.content, ws, tz)}
        assert taken and taken <= set(found), name
        for text in found.values():  # it narrows: a period a day from a window at most, as long as it + 1 day
            assert any(day_window(a, b, tz).start < w.end + timedelta(days=2)
                       and day_window(a, b, tz).end > w.start - timedelta(days=2)
                       and (b - a).days <= (w.end - w.start).days + 2
                       for a, b in annotated_periods(text) for w in ws), (name, text)
        assert name == "year" or len(found) < len(nodes), name  # every text mentions a date in 2022-2023
