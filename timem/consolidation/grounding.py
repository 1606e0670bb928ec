"""Deterministic grounding filter for consolidated memories (L2-L5) written by small models.

Measured on real LoCoMo sessions with the embedded 1.5B model: shown the 3 latest same-level
memories as history (TiMem's consolidation prompt), it copied them into the new memory — 19 session
memories of conv-26 had only 6 distinct texts — and it added facts found in no input ("a
30-year-old woman who enjoys hiking"). Prompt wording alone did not stop either. So every summary
sentence is checked against its inputs before it is stored:

* **copied**: the sentence is a near-duplicate of a history sentence (content-word Jaccard >=
  ``copy_jaccard``) and is better supported by the history than by the children;
* **unsupported**: fewer than ``min_support`` of its content words occur in the inputs (children,
  plus the history where carrying it over is legitimate, as for profiles), or it states a number that no
  input holds (:func:`numbers`: digits, and spelled-out ages such as "thirty-year-old"). Issue 27 #12: the
  abstractive May profile "Mia is a 30-year-old woman who loves jazz now" passed on its other words; an
  age, a price or a count the conversation never said is an invented fact whatever surrounds it.

Content words: lower-cased, Porter-stemmed (nltk) words minus scikit-learn's English stop words,
numbers, month/weekday names and summary verbs ("discussed", "shared", ...); every CJK character
counts as a word. Sentences with fewer than 3 content words are kept. Nothing is invented or
rewritten: sentences are only kept or dropped, and the drops are returned for the caller to log.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from nltk.stem.porter import PorterStemmer
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from timem.prompts.common import split_sentences

_WORD = re.compile(r"[\u3400-\u9fff]|[^\W\d_]+", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u9fff]")
_SKIP = {
    *(m.lower() for names in (calendar.month_name, calendar.month_abbr, calendar.day_name, calendar.day_abbr)
      for m in names if m), "sept",
    # what a summary says about the conversation itself, not about its content
    "discuss", "discussed", "discussion", "talk", "talked", "share", "shared", "sharing", "express", "expressed",
    "mention", "mentioned", "convers", "conversation", "chat", "chatted", "session", "sessions", "day", "week",
    "month", "also", "including", "include", "included", "topic", "topics", "summary", "memory", "memories",
    "participant", "participants", "told", "tell", "said", "say", "ask", "asked", "explain", "explained",
}


@lru_cache(maxsize=1)
def _stemmer() -> PorterStemmer:
    return PorterStemmer()


def content_words(text: str) -> set[str]:
    """The stemmed content words of ``text`` (see the module docstring); CJK characters one by one."""
    stem = _stemmer().stem
    out: set[str] = set()
    for w in _WORD.findall(text.lower()):
        if _CJK.match(w):
            out.add(w)
        elif len(w) > 1 and w not in ENGLISH_STOP_WORDS and w not in _SKIP:
            s = stem(w)
            if s not in _SKIP:
                out.add(s)
    return out


_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
          "sixteen seventeen eighteen nineteen").split()
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}
_SPELLED_AGE = re.compile(r"\b(" + "|".join([*_TENS, *_UNITS[1:]]) + r")(?:[- ](" + "|".join(_UNITS[1:10])
                          + r"))?[- ]years?[- ]old\b", re.IGNORECASE)


def numbers(text: str) -> set[float]:
    """The numbers ``text`` states: its digit runs (``"05"`` and ``"5"`` alike, ``"3.5"``, ``"3,000"`` as 3000)
    and spelled-out ages ("thirty-year-old", "twenty-five years old")."""
    out = {float(m.replace(",", "")) if re.fullmatch(r"\d{1,3}(,\d{3})+", m) else float(m.replace(",", "."))
           for m in _NUMBER.findall(text)}
    for m in _SPELLED_AGE.finditer(text):
        tens, unit = m.group(1).lower(), (m.group(2) or "").lower()
        out.add(float(_TENS.get(tens, _UNITS.index(tens) if tens in _UNITS else 0)
                      + (_UNITS.index(unit) if unit else 0)))
    return out


@dataclass
class Grounded:
    """Result of :func:`ground`: the kept text and every dropped sentence with its reason."""

    text: str
    dropped: list[tuple[str, str]] = field(default_factory=list)  #: (sentence, "copied" | "unsupported")


def ground(summary: str, children: Sequence[str], history: Sequence[str], *, history_is_source: bool = False,
           min_support: float = 0.5, copy_jaccard: float = 0.6) -> Grounded:
    """Keep the sentences of ``summary`` that its inputs support.

    Args:
        summary: the model's (already cleaned) text; sentences split as :func:`split_sentences`.
        children: texts of the nodes being consolidated (with their date lines).
        history: texts of the same-level history nodes shown to the model.
        history_is_source: count history words as support (profiles carry stable facts forward);
            the copy check is then skipped.
        min_support: least share of a sentence's content words found in the inputs.
        copy_jaccard: content-word Jaccard with a history sentence from which a sentence counts as copied.

    Returns:
        :class:`Grounded`; ``text`` is empty when no sentence survives (the caller decides).
    """
    child_words = set().union(*(content_words(t) for t in children)) if children else set()
    hist_sents = [content_words(s) for h in history for s in split_sentences(h)]
    hist_words = set().union(*hist_sents) if hist_sents else set()
    source = child_words | hist_words if history_is_source else child_words
    said = set().union(*(numbers(t) for t in (*children, *(history if history_is_source else ())))) \
        if children or history_is_source else set()
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    for sent in split_sentences(summary):
        words = content_words(sent)
        if len(words) >= 3 and not history_is_source and hist_sents:
            jac = max(len(words & h) / len(words | h) for h in hist_sents if h) if any(hist_sents) else 0.0
            if jac >= copy_jaccard and len(words & hist_words) > len(words & child_words):
                dropped.append((sent, "copied"))
                continue
        if numbers(sent) - said:  # an age, price or count no input states (issue 27 #12)
            dropped.append((sent, "unsupported"))
            continue
        if len(words) < 3:
            kept.append(sent)
            continue
        support = len(words & source) / len(words)
        if support < min_support:
            dropped.append((sent, "unsupported"))
            continue
        kept.append(sent)
    return Grounded(" ".join(kept).strip(), dropped)


def ground_content(content: str, children: Sequence[str], history: Sequence[str], *,
                   profile_lines: bool = False) -> tuple[str, list[tuple[str, str]]]:
    """:func:`ground` a rendered memory; ``profile_lines``: one ``Name: profile`` line each, history as source.

    Returns:
        ``(text, dropped)``; ``text`` is ``""`` when nothing survives.
    """
    if not profile_lines:
        g = ground(content, children, history)
        return g.text, g.dropped
    lines, dropped = [], []
    for line in content.splitlines():
        name, sep, text = line.partition(": ")
        if not sep:
            name, text = "", line
        g = ground(text, children, history, history_is_source=True)
        dropped += g.dropped
        if g.text:
            lines.append(f"{name}: {g.text}" if sep else g.text)
    return "\n".join(lines), dropped
