"""Turns -> exchanges -> L1 segment text.

An *exchange* is a run of consecutive turns by one speaker followed by the next run by another
speaker (a user turn and the assistant's reply; in a two-person dialogue such as LoCoMo, the two
speakers' consecutive turns). A trailing single run is its own exchange, never dropped. An L1
segment holds ``size`` consecutive exchanges (1 by default; the benchmark varies it).
"""

from __future__ import annotations

from collections.abc import Sequence
from zoneinfo import ZoneInfo

from timem.models import Turn
from timem.reldates import resolve_relative_dates


def exchanges(turns: Sequence[Turn]) -> list[list[Turn]]:
    """Split one session's turns (in seq order) into exchanges of at most two speaker runs."""
    out: list[list[Turn]] = []
    runs = 0
    for t in turns:
        new_run = not out or out[-1][-1].speaker != t.speaker
        if not out or (new_run and runs == 2):
            out.append([t])
            runs = 1
        else:
            out[-1].append(t)
            runs += 1 if new_run else 0
    return out


def group_segments(exs: Sequence[list[Turn]], size: int = 1) -> list[list[Turn]]:
    """Concatenate every ``size`` consecutive exchanges into one segment's turns."""
    if size < 1:
        raise ValueError("segment size must be >= 1 exchange")
    return [[t for ex in exs[i:i + size] for t in ex] for i in range(0, len(exs), size)]


def cut_segments(turns: Sequence[Turn], unit: str = "exchange", size: int = 1, *, closed: bool = True
                 ) -> list[list[Turn]]:
    """One session's turns (seq order) cut into L1 segments.

    Args:
        unit: ``"exchange"`` (``size`` exchanges per segment, see :func:`exchanges`) or ``"turn"``
            (``size`` turns per segment; one turn by default, the finest leaf unit).
        closed: whether the session is closed. In an open session an exchange segment waits until
            its last exchange has a reply and the segment is full; a turn segment waits until it is full.

    Raises:
        ValueError: an unknown unit or ``size < 1``.
    """
    if size < 1:
        raise ValueError("segment size must be >= 1")
    if unit == "turn":
        segs = [list(turns[i:i + size]) for i in range(0, len(turns), size)]
        if not closed and segs and len(segs[-1]) < size:
            segs = segs[:-1]
        return segs
    if unit != "exchange":
        raise ValueError(f"unknown L1 unit {unit!r}; use 'exchange' or 'turn'")
    exs = exchanges(turns)
    if not closed and exs and len({t.speaker for t in exs[-1]}) < 2:
        exs = exs[:-1]  # the last exchange still waits for its reply
    segs = group_segments(exs, size)
    if not closed and segs and len(exchanges(segs[-1])) < size:
        segs = segs[:-1]
    return segs


#: the mark that starts every further line of a multi-line turn in L1 content (:func:`continued`)
CONTINUATION = "  | "


def continued(text: str) -> str:
    """``text`` with each line after the first (blank lines dropped) marked by :data:`CONTINUATION`, so that no
    line of a turn can pass for another speaker's turn: a pasted ``Assistant: …`` line inside a message (issue 27
    #11, the fake-dialogue injection) stays visibly part of the message that quoted it."""
    first, *rest = text.split("\n")
    return "\n".join([first.rstrip(), *(CONTINUATION + r.strip() for r in rest if r.strip())])


def turn_line(turn: Turn, tz: ZoneInfo) -> str:
    """``Speaker: text`` with relative dates resolved against the speaker's local time (the turn's own
    UTC offset if known, else ``tz``; see :meth:`timem.models.Turn.local_time`); the lines of a multi-line text
    after the first are marked (:func:`continued`)."""
    text, _ = resolve_relative_dates(turn.text, turn.local_time(tz))
    line = f"{turn.speaker}: {continued(text.strip())}"
    if turn.image_caption:
        line += f" [shares a photo: {turn.image_caption.strip()}]"
    return line


def render_segment(turns: Sequence[Turn], tz: ZoneInfo) -> str:
    """Verbatim L1 content: a date line, then one ``Speaker: text`` line per turn (relative dates resolved).

    The date line is the first turn's time in the speaker's local time, the zone its relative dates are resolved in
    (:meth:`timem.models.Turn.local_time`: its own UTC offset, else ``tz``), so that the line and a "yesterday [= …]"
    of the same turn never disagree; the recall context's header is read from it
    (:func:`timem.recall.context.said_zone`).

    Example::

        On 8 May 2023 (Monday) 13:56:
        Caroline: I went to a LGBTQ support group yesterday [= 7 May 2023] ...
        Melanie: Wow, that's cool, Caroline!
    """
    t0 = turns[0].local_time(tz)
    head = f"On {t0.day} {t0:%B %Y (%A) %H:%M}:"
    return "\n".join([head, *(turn_line(t, tz) for t in turns)])
