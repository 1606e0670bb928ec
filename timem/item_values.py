"""Comparing item values: the normalised key of near-duplicate merge and of "switched from X" matches."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from datetime import datetime

from timem.models import MemoryItem, Role, Turn

#: attributes that hold several values at once: a new value adds to them, only an explicit end closes one (the memory
#: layer's writer) and recall gives each open value, not only the latest (:mod:`timem.recall.items`)
MULTI_VALUED = frozenset({"hobby", "likes", "dislikes"})

#: a general word names its kinds: "switched from coffee" ends an espresso
KINDS_OF: dict[str, tuple[str, ...]] = {
    "coffee": ("espresso", "black coffee", "latte", "cappuccino", "flat white", "americano", "decaf"),
    "tea": ("green tea", "black tea", "herbal tea", "matcha", "chai", "sencha", "longjing"),
    "vegetarian": ("vegan",),  # "I eat meat again" ends a vegan diet too
    "咖啡": ("黑咖啡", "拿铁", "美式", "浓缩咖啡"), "茶": ("绿茶", "红茶", "奶茶", "龙井"),
}


def normalise(value: str) -> str:
    """Comparison key of a value: NFKC, lower case, articles / "now" / punctuation dropped, a trailing
    市 dropped ("上海市" = "上海"), whitespace collapsed."""
    v = unicodedata.normalize("NFKC", value).lower().strip()
    v = re.sub(r"[\"'“”‘’.,!?;:，。！？；：、()（）]", " ", v)
    v = re.sub(r"\b(?:a|an|the|now|these days|nowadays)\b", " ", v)
    v = re.sub(r"(?<=[\u4e00-\u9fff])市$", "", v.strip())
    return " ".join(v.split())


def mentions(value: str, named: str) -> bool:
    """Whether ``named`` ("coffee") names ``value`` ("black coffee"): equal normalised, one of its kinds
    (:data:`KINDS_OF`: "espresso" is a coffee), or a whole-word part of it (any part for Chinese: "咖啡" in
    "黑咖啡")."""
    v, n = normalise(value), normalise(named)
    if not n:
        return False
    if v == n or v in KINDS_OF.get(n, ()):
        return True
    if re.search(r"[\u4e00-\u9fff]", n):
        return n in v
    return re.search(rf"(?<!\w){re.escape(n)}(?!\w)", v) is not None


#: the subjects items had before :func:`item_subject` (a file written then still holds them): no spelling of anyone
PLACEHOLDER_SUBJECTS = ("User", "user")


def first_spellings(rows: Iterable[tuple[str, datetime, str]]) -> dict[str, str]:
    """How a user's items spell each subject, from ``(subject, created_at, item id)`` rows (any order): its
    case-folded form -> the spelling of the first item stored under it (by ``created_at``, then id), as the memory
    writer keeps it (:func:`timem.memory.history.stored_subject`); the placeholders :data:`PLACEHOLDER_SUBJECTS` are
    left out."""
    first: dict[str, tuple[datetime, str, str]] = {}
    for subject, at, iid in rows:
        key = subject.casefold()
        if subject not in PLACEHOLDER_SUBJECTS and (key not in first or (at, iid) < first[key][:2]):
            first[key] = (at, iid, subject)
    return {k: v[2] for k, v in first.items()}


def subject_spellings(items: Iterable[MemoryItem]) -> dict[str, str]:
    """:func:`first_spellings` of ``items`` (one user's, any status)."""
    return first_spellings((i.subject, i.created_at, i.id) for i in items)


def item_subject(turn: Turn) -> str:
    """Whom a statement of ``turn`` is about: its speaker's name, or the user id as written when the speaker is only
    the user role's placeholder (``User`` / ``user``: the library's and chat's default name, a JSONL turn without
    ``speaker``). A new-user trial: ``timem.open(path).remember(...)`` wrote "User's likes: jazz", JSONL ingest
    "user's likes: jazz"."""
    if turn.role == Role.USER and turn.speaker.casefold() == Role.USER.value:
        return turn.user_id.rsplit("/", 1)[-1]  # the memory service stores "tenant/user"
    return turn.speaker
