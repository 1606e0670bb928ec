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


def turn_line(turn: Turn, tz: ZoneInfo) -> str:
    """``Speaker: text`` with relative dates resolved against the speaker's local time (the turn's own
    UTC offset if known, else ``tz``; see :meth:`timem.models.Turn.local_time`)."""
    text, _ = resolve_relative_dates(turn.text, turn.local_time(tz))
    line = f"{turn.speaker}: {text.strip()}"
    if turn.image_caption:
        line += f" [shares a photo: {turn.image_caption.strip()}]"
    return line


def render_segment(turns: Sequence[Turn], tz: ZoneInfo) -> str:
    """Verbatim L1 content: a date line, then one ``Speaker: text`` line per turn (relative dates resolved).

    Example::

        On 8 May 2023 (Monday) 13:56:
        Caroline: I went to a LGBTQ support group yesterday [= 7 May 2023] ...
        Melanie: Wow, that's cool, Caroline!
    """
    t0 = turns[0].event_time.astimezone(tz)
    head = f"On {t0.day} {t0:%B %Y (%A) %H:%M}:"
    return "\n".join([head, *(turn_line(t, tz) for t in turns)])
