"""Deterministic keyword extraction for recall planning (no model).

Keywords feed the BM25 half of leaf selection, so they must be content words: stopwords,
question words, time words (they go to the time window instead) and person names are dropped.
Person names are the participants' names when the caller knows them; otherwise a capitalised
token that is not at the start of a sentence and is not an acronym (``LGBTQ`` stays) is taken for
a name. That heuristic also drops capitalised places ("Sweden"); the question text itself still
reaches BM25, so only the keyword list loses them.

A Chinese question (:func:`timem.recall.cjk.is_chinese`) also gets its Chinese content words, cut by jieba
(:func:`timem.recall.cjk.content_words`), before its English ones; other questions are unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from timem.recall import cjk
from timem.recall.time_window import MONTHS, WEEKDAYS

MAX_KEYWORDS = 5

_STOPWORD_TEXT = """
a about above after again against ago all also am an and any are as at back be been before being below
between both but by can could did do does doing done down during each either else even ever every few for
from further get gets getting go goes going gone got had has have having he her here hers herself him
himself his how i if in into is it its itself just last least let like likely lot made make many may me
might more most much must my myself never next no nor not now of off on once one only or other our ours
ourselves out over own past per perhaps quite rather really recent recently same see seem seems she should
since so some something still such than that the their theirs them themselves then there these they thing
things this those though through to too under until up upon us very via was we were what whatever when
where whether which while who whom whose why will with within without would yes yet you your yours
yourself yourselves ever someone somebody anyone anything everything kind sort type way ways time times
today tonight yesterday tomorrow week weeks month months year years day days weekend morning evening
afternoon night ago first second earlier later lately usually often always sometimes tell mention
mentioned say said talk talked think thought know knew new old happen happened happens
two three four five six seven eight nine ten eleven twelve hundred thousand couple
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_TIME_WORDS = frozenset(MONTHS) | frozenset(WEEKDAYS) | frozenset(m[:3] for m in MONTHS)
#: a word of Latin script: ASCII letters and digits, and the accented letters of Latin-1 and Latin Extended-A/B
#: (× and ÷ aside), so that "Zürich", "café" and "señora" are one keyword each, not "rich", "caf" and "se ora"
_LATIN = "A-Za-z0-9\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u024F"
_TOKEN = re.compile(rf"[{_LATIN}][{_LATIN}'’\-]*")


def strip_possessive(token: str) -> str:
    """``token`` without a final possessive ``'s`` (``’s``) or bare apostrophe (``James'``)."""
    return re.sub(r"['’]s?$", "", token)


def name_words(participants: Iterable[str]) -> set[str]:
    """The lower-cased names in ``participants`` and each word of them (``Caroline Smith``: ``caroline smith``,
    ``caroline``, ``smith``): what a token must equal to be taken for a name (:func:`person_names`)."""
    return {p.lower() for name in participants for p in [name, *name.split()] if p}


def _starts_sentence(text: str, start: int) -> bool:
    """Whether the token at ``text[start]`` opens a sentence: only whitespace before it, or whitespace after a
    ``.``, ``?`` or ``!``, or whitespace holding a line break. It looks back over the whitespace only, so a scan
    of every token stays linear in the text's length."""
    i = start
    while i > 0 and text[i - 1].isspace():
        i -= 1
    gap = text[i:start]
    return i == 0 or "\n" in gap or (bool(gap) and text[i - 1] in ".?!")


def person_names(text: str, participants: Iterable[str] = ()) -> set[str]:
    """Lower-cased person names in ``text``: the given participants' names (first names and full
    names) if any, otherwise capitalised non-initial tokens that are not acronyms, months or weekdays."""
    known = name_words(participants)
    if known:
        return {t for t in (strip_possessive(m.group()).lower() for m in _TOKEN.finditer(text)) if t in known}
    names = set()
    for m in _TOKEN.finditer(text):
        tok = strip_possessive(m.group())
        at_start = _starts_sentence(text, m.start())
        if (not at_start and tok[:1].isupper() and not tok.isupper() and tok.lower() not in _TIME_WORDS
                and tok.lower() not in STOPWORDS):
            names.add(tok.lower())
    return names


def extract_keywords(question: str, participants: Sequence[str] = (), limit: int = MAX_KEYWORDS) -> list[str]:
    """Up to ``limit`` lower-cased content words of ``question``, in order of appearance, without
    duplicates, stopwords, time words, numbers or person names (see :func:`person_names`).

    A Chinese question's content words (:func:`timem.recall.cjk.content_words`: 我的狗叫什么名字？ -> 狗叫, 名字)
    come first. Returns an empty list only when the question has no such word (e.g. "Who is Anna?").
    """
    names = person_names(question, participants)
    out: list[str] = cjk.content_words(question, limit) if cjk.is_chinese(question) else []
    if len(out) >= limit:
        return out[:limit]
    for m in _TOKEN.finditer(question):
        tok = strip_possessive(m.group()).lower().strip("-")
        if (len(tok) < 2 or tok in STOPWORDS or tok in names or tok in _TIME_WORDS or not re.search(r"[a-z]", tok)
                or tok in out):
            continue
        out.append(tok)
        if len(out) == limit:
            break
    return out


def clean_keywords(keywords: Iterable[str], question: str, participants: Sequence[str] = (),
                   limit: int = MAX_KEYWORDS) -> list[str]:
    """Keywords proposed by a model, with person names, stopwords and duplicates removed, at most ``limit``."""
    names = person_names(question, participants) | {p.lower() for n in participants for p in n.split()}
    out: list[str] = []
    for kw in keywords:
        if cjk.is_chinese(kw):  # a Chinese keyword: kept when it holds a content word
            zh = kw.strip()
            if cjk.content_words(zh) and zh not in out:
                out.append(zh)
            if len(out) == limit:
                break
            continue
        words = [strip_possessive(w).lower() for w in _TOKEN.findall(kw)]
        words = [w for w in words if w not in names and w not in STOPWORDS]
        phrase = " ".join(words)
        if phrase and phrase not in out:
            out.append(phrase)
        if len(out) == limit:
            break
    return out
