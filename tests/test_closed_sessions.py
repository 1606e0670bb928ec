"""Which of a user's sessions are closed in event time (timem.tree.windows): the one-pass form every write's
consolidation uses gives what the per-session rule gives, for sessions in any order."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from timem.models import SessionInfo
from timem.tree.windows import closed_sessions

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def session_closed(s, sessions, watermark, idle, flush=False):
    """The rule as written, one session at a time (what every caller did before closed_sessions): ended, a later
    session of the user started, idle since its last turn, or flush."""
    if flush or s.ended:
        return True
    if any(o.started_at > s.last_event_at for o in sessions):
        return True
    return watermark - s.last_event_at >= idle


def _sessions(rng: random.Random, n: int) -> list[SessionInfo]:
    out = []
    for i in range(n):
        start = T0 + timedelta(minutes=rng.randrange(0, 5000))
        out.append(SessionInfo(session_id=f"s{i}", started_at=start,
                               last_event_at=start + timedelta(minutes=rng.randrange(0, 300)),
                               ended=rng.random() < 0.2))
    rng.shuffle(out)
    return out


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("flush", [False, True])
def test_one_pass_equals_the_rule_per_session(seed, flush):
    rng = random.Random(seed)
    sessions = _sessions(rng, rng.randrange(1, 40))
    watermark = max(s.last_event_at for s in sessions) + timedelta(minutes=rng.choice([0, 10, 45]))
    idle = timedelta(minutes=30)
    want = {s.session_id: session_closed(s, sessions, watermark, idle, flush) for s in sessions}
    got = closed_sessions(sessions, watermark, idle, flush)
    assert got == want


def test_no_sessions():
    assert closed_sessions([], T0, timedelta(minutes=30)) == {}


def test_a_later_start_or_an_idle_gap_closes_a_session_and_the_newest_stays_open():
    def sess(sid, start_min, last_min, ended=False):
        return SessionInfo(session_id=sid, started_at=T0 + timedelta(minutes=start_min),
                           last_event_at=T0 + timedelta(minutes=last_min), ended=ended)
    sessions = [sess("newest", 100, 110), sess("old", 0, 20), sess("ended", 105, 106, ended=True)]
    got = closed_sessions(sessions, T0 + timedelta(minutes=115), timedelta(minutes=30))
    assert got == {"newest": False, "old": True, "ended": True}
    assert closed_sessions(sessions, T0 + timedelta(minutes=140), timedelta(minutes=30))["newest"] is True


def test_sessions_among_gives_the_asked_sessions_and_the_latest_of_all(store):
    """Closing a write's sessions reads those sessions and the latest start and event of all, not every session."""
    from timem.models import Role, Turn

    def turn(sid, seq, minute):
        return Turn(id=f"u:{sid}:{seq}", user_id="u", session_id=sid, seq=seq, speaker="Ann", role=Role.USER,
                    text=f"turn {seq} of {sid}", event_time=T0 + timedelta(minutes=minute))

    store.add_turns([turn("a", 0, 0), turn("a", 1, 10), turn("b", 0, 60), turn("c", 0, 200), turn("c", 1, 230),
                     Turn(id="v:z:0", user_id="v", session_id="z", seq=0, speaker="Bo", role=Role.USER, text="hi",
                          event_time=T0 + timedelta(days=9))])
    got, latest, watermark = store.sessions_among("u", ["b", "a", "nope"])
    assert [s.session_id for s in got] == ["a", "b"]
    assert (latest, watermark) == (T0 + timedelta(minutes=200), T0 + timedelta(minutes=230))
    closed = closed_sessions(got, watermark, timedelta(minutes=30), latest_start=latest)
    assert closed == {s.session_id: session_closed(s, store.sessions("u"), watermark, timedelta(minutes=30))
                      for s in got} == {"a": True, "b": True}
    newest, _, _ = store.sessions_among("u", ["c"])
    assert closed_sessions(newest, watermark, timedelta(minutes=30), latest_start=latest) == {"c": False}
    assert store.sessions_among("u", ["nope"]) == ([], latest, watermark)
    assert store.sessions_among("nobody", ["a"]) == ([], None, None)
    assert store.sessions_among("u", []) == ([], None, None)
