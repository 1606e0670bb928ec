"""The facts block of an L5 profile: the memory items that hold at the end of the profile's window.

Issue 14 §2: "The L5 profile of a month uses the items valid at its end." The block is appended to the
L5 node in every consolidation mode (extractive, hybrid, abstractive); it is rendered from the items,
never written by a model, so it is grounded by construction. It follows the selection and is outside the
extractive token cap (at most :data:`PROFILE_FACT_LIMIT` lines). An item *holds at* ``t`` when
``valid_from <= t < valid_to`` (:meth:`timem.models.MemoryItem.valid_at`), as known when the profile is
written: a superseded value is absent from the profile of a month that ended after its successor was
said and present in the months before; a corrected value (``valid_to == valid_from``: it never held)
is in no profile written after the correction, and the correction is in those of the months it covers.
The engine reads the items of a write before it writes L2–L5 (:meth:`timem.engine.MemoryEngine._consolidate`),
so a bulk import's profiles see the whole file's corrections; a profile written online is not
rewritten by a later correction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from timem.item_holding import single_valued
from timem.item_values import subject_spellings
from timem.models import MemoryItem

PROFILE_FACT_LIMIT = 12  #: items at most in one profile block (the most recently said win)
HEADER = "Facts as of {day}:"
FACTS_SEPARATOR = "\n\nFacts as of "  #: where the block starts in a profile's content (blank line, header)


def last_instant(window_end: datetime) -> datetime:
    """The last instant of a half-open window ``[start, window_end)``: the time a profile's facts hold at."""
    return window_end - timedelta(microseconds=1)


def listed_in(item: MemoryItem, content: str) -> bool:
    """Whether a profile's ``content`` lists ``item`` in its facts block (by its line, whatever its date; the subject
    in any case: the block spells it as first stored, :func:`facts_as_of`)."""
    return f"- {item.label()} (since ".casefold() in content.casefold()


def facts_as_of(items: Sequence[MemoryItem], window_end: datetime, tz: ZoneInfo, people: Sequence[str] = (),
                limit: int = PROFILE_FACT_LIMIT) -> str:
    """The lines of the items that hold at the last instant before ``window_end``, grouped by subject, or ``""``.

    Args:
        items: the user's memory items (any status; deleted ones are skipped).
        window_end: the exclusive end of the profile's window (UTC-aware), e.g. 1 May 00:00 local for April.
        tz: the user's zone, for the dates shown.
        people: the window's participants; when given, only items about them are listed, in that order.
        limit: at most this many items, the most recently said ones.

    Subjects match case-insensitively (a participant ``leo`` is the subject ``Leo``) and each is shown as the user's
    items first spelled it (:func:`timem.item_values.subject_spellings`, as the writer stores new items); items
    stored under two spellings of one subject read as one: of a single-valued attribute only the value said last
    is listed (a new-user trial: a nameless turn of user ``leo`` left Leo's items out of the month's profile).

    Returns:
        ``"Facts as of 2024-04-30:\n- Mia's home city: Porto (since 2024-04-21)"`` — one line per item.
    """
    at = last_instant(window_end)
    spelling = subject_spellings(items)
    order: dict[str, int] = {}
    for p in people:
        order.setdefault(p.casefold(), len(order))
    held = [i.model_copy(update={"subject": spelling.get(i.subject.casefold(), i.subject)})
            for i in items if i.status == "active" and i.valid_at(at) and (not people or i.subject.casefold() in order)]
    last: dict[tuple[str, str], MemoryItem] = {}  # one subject, one value of a single-valued attribute
    for i in sorted((i for i in held if single_valued(i)), key=lambda i: (i.event_time, i.created_at, i.id)):
        last[(i.subject, i.attribute)] = i
    held = [i for i in held if not single_valued(i) or last[(i.subject, i.attribute)] is i]
    held = sorted(held, key=lambda i: (i.event_time, i.id))[-limit:] if limit else []
    if not held:
        return ""
    held.sort(key=lambda i: (order.get(i.subject.casefold(), len(order)), i.subject, i.valid_from, i.id))
    day = at.astimezone(tz).date().isoformat()
    lines = [f"- {i.label()} (since {i.valid_from.astimezone(tz).date().isoformat()})" for i in held]
    return "\n".join([HEADER.format(day=day), *lines])
