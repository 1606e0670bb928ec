"""When a stated value starts to hold, from a relative date of the clause that states it (for
:mod:`timem.memory.writer`).

"I moved to Braga last week" (said Wednesday 12 June) holds from Monday 3 June: the start of the first past period a
relative date names (:func:`timem.reldates.resolve_relative_dates`). The date dates only the clause it is in: "I moved
to Cardiff yesterday and I work at Google" dates the move, not the employer (a new-user trial dated both to
yesterday). A turn is cut into its sentences, and a sentence before each further clause with a first-person subject
of its own ("…, I …", "… and I …", "…，我…"); a piece with no such subject ("Yesterday, I moved to Cardiff") stays with
the one after it. The clause is the first piece that holds the value; when none does (a normal form, "vegetarian" for
"I don't eat meat"), the whole text is read, as before.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta, tzinfo

from timem.item_values import mentions
from timem.prompts.common import SENTENCES
from timem.reldates import resolve_relative_dates

#: where a further clause with its own first-person subject starts: "I moved to Cardiff yesterday, and I love sushi",
#: "… and we …", "…; I …", "…，我…" (not "I'd": "… and I'd like …" is a wish, and no date of its own either way)
_OWN_CLAUSE = re.compile(r"(?:\s*[,;]\s*(?:(?:and|but|then|so|also)\s+)?|\s+(?:and|but|then|so|while|because)\s+)"
                         r"(?=(?:i|we)\b)|[，；,;]\s*(?=我)", re.IGNORECASE)
#: a first-person subject: a piece without one is no clause of its own ("Yesterday," before "I moved …")
_FIRST_PERSON = re.compile(r"\b(?:i|we)\b|我", re.IGNORECASE)


def pieces(text: str) -> list[str]:
    """``text`` cut into the clauses a relative date may date (see the module doc): "Yesterday, I moved to Cardiff and I
    love sushi" -> ``["Yesterday, I moved to Cardiff", "I love sushi"]``."""
    out: list[str] = []
    for sent in filter(None, (x.strip() for x in SENTENCES.split(text))):
        start = 0
        for m in _OWN_CLAUSE.finditer(sent):
            head = sent[start:m.start()]
            if _FIRST_PERSON.search(head):
                out.append(head)
                start = m.end()
        out.append(sent[start:])
    return [p for p in out if p.strip()]


def own_clause(text: str, value: str) -> str:
    """The clause of ``text`` (one of :func:`pieces`) that states ``value``, or ``text`` when none holds it."""
    return next((p for p in pieces(text) if mentions(p, value)), text)


def dated_period(text: str, value: str, at: datetime, tz: tzinfo) -> tuple[datetime, datetime] | None:
    """The first past period a relative date of ``value``'s own clause names ("last week", "yesterday", "上个月"), in
    ``text`` said at ``at`` (UTC), as ``(start, end)``: midnight in ``tz`` of its first day and of the day after its
    last, both UTC ("I moved to Braga last week", said Wednesday 12 June 2024 in UTC: 3 June 00:00 to 10 June 00:00);
    ``None`` when the clause names none."""
    local = at.astimezone(tz)
    _, found = resolve_relative_dates(own_clause(text, value), local)
    past = [r for r in found if r.end_date < local.date()]
    if not past:
        return None
    start = datetime.combine(past[0].start_date, time(), tz).astimezone(UTC)
    end = datetime.combine(past[0].end_date + timedelta(days=1), time(), tz).astimezone(UTC)
    return start, end


def holds_since(text: str, value: str, at: datetime, tz: tzinfo) -> datetime:
    """When ``value``, stated in ``text`` at ``at`` (UTC), starts to hold: the start of :func:`dated_period`, else
    ``at``."""
    period = dated_period(text, value, at, tz)
    return period[0] if period else at
