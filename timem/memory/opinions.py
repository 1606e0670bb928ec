"""Opinions the rules must not read as held, for :mod:`timem.memory.rules` and :mod:`timem.memory.hobbies`: one
denied or hedged (:func:`hedged`), and one of the past (:func:`ended_opinion`), which ends the opinion held.
"""

from __future__ import annotations

import re

#: an opinion said only to be denied or hedged: "I wouldn't say I love techno", "not that I like jazz", "I don't think I
#: like it", "I never said I love jazz", "it's not like I enjoy hiking", "I'm not sure I like jazz" (a new-user trial:
#: the first gave "likes techno", ending "dislikes techno"). A plain denial ("I don't love jazz") names no opinion
#: (the like patterns start at "I <verb>"); "I can't tell you how much I love jazz" still likes it
_HEDGE = re.compile(r"(?:\bnot|\bnever|n['’]t)\s+(?:[a-z]+\s+){0,2}?(?:say|said|saying|think|thought|know|knew|mean|"
                    r"means|meant|sure|claim\w*|pretend\w*|like|that|as\s+if|as\s+though|believe|guess|suppose)"
                    r"\s+(?:that\s+|if\s+)?$", re.IGNORECASE)
#: an opinion of the past: "I used to love jazz (as a kid)" ends "likes jazz", "I used to hate jazz" ends "dislikes
#: jazz", "I used to be into techno" ends "likes techno"; not "I used to love jazz and I still do", "I used to like it"
_USED_TO = re.compile(r"\bi\s+used\s+to\s+(?:really\s+|absolutely\s+)?(?:(?P<like>love|like|enjoy|adore|"
                      r"be\s+(?:really\s+|so\s+)?into)|hate|dislike|can't\s+stand)\s+(?:the\s+)?"
                      r"(?!(?:it|that|this|you|him|her|them|the|a|an|my|your|to|how|when|what|being)\b)"
                      r"(?P<v>[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,2}?)(?=\s*(?:[,.!?;]|$|\s+(?:so\s+much|a\s+lot|too|"
                      r"as|when|back|before|but|and|in|until|growing|years|once)\b))", re.IGNORECASE)
_STILL = re.compile(r"\b(?:still|again)\b", re.IGNORECASE)


def hedged(before: str) -> bool:
    """Whether the text ``before`` an opinion ("I wouldn't say " before "I love techno") denies or hedges it."""
    return _HEDGE.search(before) is not None


def ended_opinion(sentence: str) -> tuple[str, str] | None:
    """``("likes", "jazz")`` for "I used to love jazz" (``"dislikes"`` for "I used to hate jazz"): the opinion the
    sentence says is over, as written ("Rolling Stones"), or ``None`` (also when it still holds: "… and I still do")."""
    m = _USED_TO.search(sentence)
    if m is None or hedged(sentence[:m.start()]) or _STILL.search(sentence, m.end()):
        return None
    return ("likes" if m["like"] else "dislikes"), m["v"]
