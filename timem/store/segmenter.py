"""Word segmentation of Chinese, Japanese and Korean text for the BM25 index and its queries.

The DuckDB fts tokenizer splits on whitespace and ASCII punctuation only, so a CJK clause
("我今天去了北京的天安门。") was one term and a question sharing its words found nothing.
:func:`search_text` rewrites every CJK run into space-separated terms; the fts index is built over
``nodes.search_text`` (:mod:`timem.store.search`) and every BM25 query goes through the same
function, so both sides are cut alike.

Rules (the whole text decides the language):

* Text without a CJK character is returned **unchanged** (English terms, and so English BM25
  scores, are exactly what they were over ``content``).
* Text with CJK characters is NFKC-normalised (full-width letters and digits become ASCII,
  half-width katakana full-width) and CJK punctuation becomes a space.
* Japanese (the text holds kana): every run of Han and kana characters becomes its character
  bigrams plus its Han characters as unigrams (one-kanji words such as 犬 stay findable); a run of
  one character is itself.
* Korean: every Hangul run becomes its bigrams (a one-syllable run itself), so a word matches
  with or without its attached particle (바둑이 / 바둑이야).
* Chinese (Han without kana): jieba's search-mode cut (``jieba.lcut_for_search``: words plus
  their dictionary sub-words), the usual segmenter for Chinese search.
"""

from __future__ import annotations

import logging
import math
import re
import unicodedata
from functools import lru_cache
from typing import Any

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA = "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff"
_HANGUL = "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
_CJK_ANY = re.compile(f"[{_HAN}{_KANA}{_HANGUL}\uff66-\uff9f]")
_KANA_ANY = re.compile(f"[{_KANA}]")
_CJK_PUNCT = re.compile("[\u3000-\u303f\u30fb\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65\u2018-\u201f\u2026]+")
_JA_RUN = re.compile(f"[{_HAN}{_KANA}]+")
_HAN_RUN = re.compile(f"[{_HAN}]+")
_HANGUL_RUN = re.compile(f"[{_HANGUL}]+")
_HAN_CHAR = re.compile(f"[{_HAN}]")


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Han, kana or Hangul character."""
    return bool(_CJK_ANY.search(text))


def search_text(text: str) -> str:
    """``text`` with its CJK runs cut into space-separated terms (see the module doc); unchanged without CJK."""
    if not has_cjk(text):
        return text
    text = _CJK_PUNCT.sub(" ", unicodedata.normalize("NFKC", text))
    if _KANA_ANY.search(text):
        text = _JA_RUN.sub(lambda m: f" {_bigrams(m.group(), unigrams=_HAN_CHAR)} ", text)
    else:
        text = _HAN_RUN.sub(
            lambda m: f" {' '.join(w for w in _jieba().lcut_for_search(m.group()) if w.strip())} ", text)
    text = _HANGUL_RUN.sub(lambda m: f" {_bigrams(m.group())} ", text)
    return " ".join(text.split())


def jieba_words(text: str) -> list[str]:
    """jieba's accurate-mode cut of ``text`` (``jieba.lcut``: each character in exactly one word; whitespace and
    punctuation come back as their own pieces). Recall's Chinese keywords use it (:mod:`timem.recall.cjk`)."""
    return [w for w in _jieba().lcut(text) if w.strip()]


def word_log_probability(word: str) -> float | None:
    """The natural log of ``word``'s probability in jieba's dictionary (its count over the dictionary's total), which
    jieba's cut maximises over a sentence; ``None`` for a word the dictionary does not hold (or holds with count 0,
    e.g. one its HMM guessed)."""
    jieba = _jieba()
    count = jieba.dt.FREQ.get(word) or 0
    return math.log(count / jieba.dt.total) if count > 0 else None


def _bigrams(run: str, unigrams: re.Pattern[str] | None = None) -> str:
    if len(run) == 1:
        return run
    grams = [run[i:i + 2] for i in range(len(run) - 1)]
    if unigrams is not None:
        grams += [c for c in run if unigrams.fullmatch(c)]
    return " ".join(grams)


@lru_cache(maxsize=1)
def _jieba() -> Any:
    """jieba with its dictionary loaded (about 1 s, once per process; its log lines silenced)."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba
