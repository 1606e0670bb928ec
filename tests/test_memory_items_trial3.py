"""A third new-user trial of the memory layer's rules, with no LLM: statements written as chat exchanges and the
memories listed. Each of these read wrongly or not at all; each test names what was seen. Real DuckDB file, no LLM."""

from __future__ import annotations

from datetime import timedelta

import pytest
from trial_support import T0, fixtures, say_lines

embedder, eng = fixtures()


def _items(eng) -> list[tuple[str, str]]:
    return sorted((i.attribute, i.value) for i in eng.memory_items("mia"))


def _open(eng) -> list[tuple[str, str]]:
    return sorted((i.attribute, i.value) for i in eng.memory_items("mia") if i.is_open)


@pytest.mark.parametrize(("line", "items"), [
    ("I live in 上海.", [("home city", "上海")]),
    ("I moved to 北京 last week.", [("home city", "北京")]),
    ("I'm living in 杭州 now, near the lake.", [("home city", "杭州")]),
    ("I grew up in 成都.", [("hometown", "成都")]),
    ("My sister lives in 上海.", []),
    ("I was in 上海 for a conference.", []),
])
def test_a_chinese_place_name_in_an_english_sentence_is_read(eng, line, items):
    """"I live in 上海." recorded no home city: an English name must be capitalised, the Chinese rules need 我."""
    say_lines(eng, [line])
    assert _items(eng) == items


@pytest.mark.parametrize("end", ["I'm no longer at Google.", "I got fired from Google.", "I quit my job at Google.",
                                 "I was laid off by Google last week.", "I lost my job at Google.",
                                 "I'm not with Google anymore."])
def test_being_no_longer_at_an_employer_ends_it(eng, end):
    """"I'm no longer at Google", "I got fired from Google" ended nothing: the employer Google stayed open, while "I
    quit Google" ends it. They end it the same way (and the job stated with it holds on)."""
    say_lines(eng, ["I work at Google as an engineer.", end])
    items = {i.attribute: i for i in eng.memory_items("mia")}
    assert not items["employer"].is_open and items["employer"].value == "Google"
    assert items["job"].is_open


@pytest.mark.parametrize(("line", "items"), [
    ("I got fired from Google.", [("employer", "Google")]),  # said to be the employer: history
    ("I'm no longer at Google.", []),  # also a place one is at: nothing held, nothing written
    ("I'm no longer at Heathrow.", []),
])
def test_an_employer_end_with_nothing_held(eng, line, items):
    say_lines(eng, [line])
    assert _items(eng) == items and _open(eng) == []


@pytest.mark.parametrize(("held", "end"), [
    ("I love jazz.", "I stopped liking jazz."),
    ("I love jazz.", "I've stopped enjoying jazz lately."),
    ("I'm a big fan of the Beatles.", "I stopped being a fan of the Beatles."),
    ("I hate jazz.", "I stopped hating jazz."),
])
def test_stopping_liking_ends_the_like(eng, held, end):
    """"I stopped liking jazz" ended nothing, while "I no longer like jazz" ends "likes jazz". It ends it the same way,
    and stores no dislike (no longer liking is not disliking)."""
    say_lines(eng, [held, end])
    (item,) = eng.memory_items("mia")
    assert not item.is_open


def test_stopping_liking_what_no_item_holds_writes_nothing(eng):
    say_lines(eng, ["I stopped liking jazz."])
    assert _items(eng) == []


def _said(eng, lines_after: list[tuple[str, timedelta]]) -> None:
    """Each line said by Mia at ``T0`` plus its offset, in its own session."""
    for k, (line, after) in enumerate(lines_after):
        eng.remember("mia", f"s{k}", line, T0 + after, reply="Noted.", user_name="Mia")
    eng.extract_items(["mia"])


def _cities(eng) -> list[tuple[str, bool, bool]]:
    """The home cities in order: ``(value, held (a non-empty interval), open)``."""
    items = sorted((i for i in eng.memory_items("mia") if i.attribute == "home city"),
                   key=lambda i: (i.valid_from, i.event_time))
    return [(i.value, i.valid_to is None or i.valid_to > i.valid_from, i.is_open) for i in items]


@pytest.mark.parametrize("later", ["Scratch that, I live in Bristol again.", "Actually, I live in Bristol.",
                                   "Sorry, I meant Bristol."])
def test_a_correction_a_month_later_is_a_new_move(eng, later):
    """A month after "I live in Cardiff", "scratch that, I live in Bristol again" was read as a correction of the old
    message: Cardiff's month became an empty interval, a value that never held (history erased). A correction takes
    back what was just said; a month on, it is news of a change."""
    _said(eng, [("I live in Bristol.", timedelta(0)), ("I live in Cardiff.", timedelta(days=1)),
                (later, timedelta(days=32))])
    assert _cities(eng) == [("Bristol", True, False), ("Cardiff", True, False), ("Bristol", True, True)]


@pytest.mark.parametrize(("later", "after"), [
    ("Scratch that, I live in Bristol.", timedelta(minutes=2)),
    ("Actually, I live in Bristol.", timedelta(hours=20)),
    ("Actually, I moved to Bristol, not Cardiff.", timedelta(days=32)),  # names what it corrects: at any distance
])
def test_a_recent_or_named_correction_still_corrects(eng, later, after):
    _said(eng, [("I live in Cardiff.", timedelta(0)), (later, after)])
    assert _cities(eng) == [("Cardiff", False, False), ("Bristol", True, True)]


def _from(eng, attribute: str) -> str:
    (item,) = [i for i in eng.memory_items("mia") if i.attribute == attribute]
    return item.valid_from.isoformat()


@pytest.mark.parametrize(("line", "dated", "undated"), [
    ("I moved to Cardiff yesterday and I work at Google.", "home city", "employer"),
    ("I started working as a nurse last week and I live in Cardiff.", "job", "home city"),
    ("Yesterday, I moved to Cardiff, and I work at Google.", "home city", "employer"),
    ("I work at Google; I moved to Cardiff yesterday.", "home city", "employer"),
])
def test_a_relative_date_dates_only_its_own_clause(eng, line, dated, undated):
    """"I moved to Cardiff yesterday and I work at Google" dated the employer to yesterday too: the relative date was
    read from the whole sentence. It dates the clause it is in; the other clause holds from when it was said."""
    (said,) = say_lines(eng, [line])
    assert _from(eng, dated) < said.isoformat()
    assert _from(eng, undated) == said.isoformat()


def test_yesterday_said_on_1_june_holds_from_31_may(eng):
    """"I moved to Cardiff yesterday" said on 1 June holds from 31 May (its start in the user's zone, UTC here); the
    item's ``event_time`` stays when it was said, 1 June."""
    said = T0.replace(month=6, day=1)
    eng.remember("mia", "s0", "I moved to Cardiff yesterday and I love sushi.", said, reply="Noted.", user_name="Mia")
    eng.extract_items(["mia"])
    items = {i.attribute: i for i in eng.memory_items("mia")}
    assert items["home city"].valid_from.isoformat() == "2024-05-31T00:00:00+00:00"
    assert items["home city"].event_time == said
    assert items["likes"].valid_from == said


@pytest.mark.parametrize(("line", "likes"), [
    ("My favourite band is Radiohead.", ["Radiohead"]),
    ("my favourite food is sushi.", ["sushi"]),
    ("My favourite bands are the Rolling Stones and the Beatles.", ["Beatles", "Rolling Stones"]),
    ("我最喜欢的运动是游泳。", ["游泳"]),
    ("My favourite hobby is hiking.", []),
    ("My sister's favourite band is Muse.", []),
])
def test_a_favourite_is_also_a_like(eng, line, likes):
    """"My favourite band is X" recorded "favourite band: X" only, so what Mia likes did not hold it. A favourite is
    also liked: it records both."""
    say_lines(eng, [line])
    assert sorted(i.value for i in eng.memory_items("mia") if i.attribute == "likes" and i.is_open) == likes


def test_a_new_favourite_ends_the_old_favourite_not_the_like(eng):
    """Radiohead stops being the favourite band when Muse is, but is still liked; hating Muse ends both of Muse's."""
    say_lines(eng, ["My favourite band is Radiohead.", "My favourite band is Muse now.", "I hate Muse now."])
    assert _open(eng) == [("dislikes", "Muse"), ("likes", "Radiohead")]  # the dislike ends the like and the favourite
