"""A change whose relative date lies before what it ends was said: "I live in Dublin.", then a few minutes later in the
same chat "Actually I moved to Galway last week". Galway started when it was said (a second after Dublin, which held
that one second): the move's date was dropped because Dublin was said after it. The statement dates the change (event
time is not ingest time), and Dublin, out of date when it was said, held until Galway started. Real DuckDB file, the
rules, no LLM."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from trial_support import fixtures

embedder, eng = fixtures()

SAID = datetime(2024, 6, 12, 9, tzinfo=UTC)  #: a Wednesday; "last week" is Monday 3 to Sunday 9 June
LAST_MONDAY = datetime(2024, 6, 3, tzinfo=UTC)


def _cities(eng):
    return {i.value: i for i in eng.memory_items("leo") if i.attribute == "home city"}


def test_a_move_last_week_said_just_after_the_old_city_holds_from_last_week(eng):
    eng.add_exchange("leo", "s1", "I live in Dublin.", "Noted.", SAID)
    eng.add_exchange("leo", "s1", "Actually I moved to Galway last week", "Noted.", SAID + timedelta(minutes=5))
    eng.extract_items(["leo"])
    cities = _cities(eng)
    dublin, galway = cities["Dublin"], cities["Galway"]
    assert galway.valid_from == LAST_MONDAY and galway.is_open
    assert galway.event_time == SAID + timedelta(minutes=5)  # when it was said stays its event time
    assert dublin.superseded_by == galway.id and dublin.valid_to == galway.valid_from  # supersession, no gap
    assert dublin.valid_from < dublin.valid_to  # it held (before the move): not a correction's empty interval
    assert dublin.event_time == SAID
    assert dublin.valid_at(LAST_MONDAY - timedelta(seconds=1)) and not dublin.valid_at(SAID)


def test_a_move_dated_in_the_period_the_old_city_was_said_still_starts_after_it(eng):
    """The rule kept: "I live in Porto" said on Tuesday 4 June, within "last week", then "I moved to Braga last week"
    on 12 June: Porto held when it was said, so Braga starts just after it, not at last week's Monday."""
    eng.add_exchange("leo", "s1", "I live in Porto.", "Noted.", LAST_MONDAY + timedelta(days=1, hours=9))
    eng.add_exchange("leo", "s2", "I moved to Braga last week", "Noted.", SAID)
    eng.extract_items(["leo"])
    cities = _cities(eng)
    porto, braga = cities["Porto"], cities["Braga"]
    assert porto.valid_from < porto.valid_to == braga.valid_from <= porto.event_time + timedelta(seconds=1)


def test_an_end_dated_before_what_it_ends_was_said_ends_it_then(eng):
    """The same for an end with no new value: "I work at Google.", then minutes later "I left Google last week"
    ended Google a second after it was said."""
    eng.add_exchange("leo", "s1", "I work at Google.", "Noted.", SAID)
    eng.add_exchange("leo", "s1", "I left Google last week.", "Oh.", SAID + timedelta(minutes=5))
    eng.extract_items(["leo"])
    (google,) = [i for i in eng.memory_items("leo") if i.attribute == "employer"]
    assert google.valid_to == LAST_MONDAY and google.valid_from < google.valid_to and google.superseded_by is None
