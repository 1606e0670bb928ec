"""How far a forget request reaches (:mod:`timem.memory.forget`): whose lines.

* **Someone else's line** (:func:`someone_elses`): a request in the user's own voice ("I work as a nurse",
  :func:`in_own_voice`) does not take a line where the words it matched belong to someone else, that is where every
  clause holding them has another subject ("My brother is a nurse at the hospital", "she is a nurse too"; the
  clauses and subjects of :mod:`timem.memory.grounding`, which refuses such a clause as the speaker's fact). A line
  where one clause holding them is the user's own ("My brother and I are nurses", "I'm a nurse like my brother")
  goes. A request about someone else ("my brother is a nurse") is not in the user's own voice and takes the line.
  The thing asked about is no one else when it is a clause's subject ("Berlin was home for five years" goes for "I
  lived in Berlin"). The sources of an item the request names always go. A new-user trial: ``timem forget "I work
  as a nurse"`` also took "My brother is a nurse at the hospital".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from timem.item_values import mentions
from timem.memory.forget_words import holds
from timem.memory.grounding import about_speaker, clauses

#: the user speaking of themselves: "I work as a nurse", "I'm vegetarian", "we moved to Porto"
_OWN_VOICE = re.compile(r"\b(?:I|we)\b|\bI['’](?:m|ve|d|ll)\b", re.IGNORECASE)


def in_own_voice(text: str) -> bool:
    """Whether the request ``text`` is said in the user's own voice ("I work as a nurse") and not about someone
    else ("my brother is a nurse", "my brother and I went to Rome")."""
    return bool(_OWN_VOICE.search(text)) and all(about_speaker(c) for c in clauses(text) if c.strip())


def said(content: str) -> list[str]:
    """The lines of an L1 segment's ``content`` without its date line and each line's ``Speaker:`` (the format of
    :func:`timem.consolidation.segments.render_segment`)."""
    lines = content.splitlines()
    if lines and re.match(r"On \d", lines[0]) and lines[0].rstrip().endswith(":"):
        lines = lines[1:]
    return [re.sub(r"^[^:\n]{1,80}:\s+", "", line) for line in lines if line.strip()]


def someone_elses(content: str, words: Iterable[str], values: Iterable[str] = ()) -> bool:
    """Whether every clause of ``content`` holding one of the request's key ``words`` (by stem) or an item's
    ``values`` (as words) is about someone else; ``False`` when no clause holds any (the line was matched otherwise)."""
    words, values = list(words), list(values)
    holding = [c for line in said(content) for c in clauses(line)
               if c.strip() and (any(holds(c, w) for w in words) or any(mentions(c, v) for v in values))]
    # the thing asked about may be the clause's subject: "Berlin was home for five years" is no one else's
    asked = re.compile(r"(?<![\w'’-])(?:" + "|".join(re.escape(w) for w in [*words, *values] if w) + r")(?:s|es)?"
                       r"(?![\w'’-])", re.IGNORECASE) if [*words, *values] else None
    return bool(holding) and not any(about_speaker(asked.sub("", c) if asked else c) for c in holding)
