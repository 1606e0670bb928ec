"""The key words of a forget request (:mod:`timem.memory.forget`): what an L1 segment must hold when none holds every
content word of the request.

A request states a thing ("I lived in Berlin", "I used to play the cello", "我以前住在柏林"); the conversation said it
in its own words ("Berlin was home for five years", "我在柏林待了五年"), and the request's verb is the word least
likely to be among them. A new-user trial: ``timem forget "I lived in Berlin"`` matched nothing where ``timem forget
"Berlin"`` found the segment. The request's **key words** are its content words less its verbs:

* English (no part-of-speech tagger at hand, so a verb is known by its place): the word its subject does, right after
  I, we, you, he, she, they (or "my sister", "my sister Ana", a name), past auxiliaries and adverbs ("I lived", "I
  have always lived", "I didn't like", "my sister moves"); after a form of *be* or *have* only a participle ("I was
  living", "I've moved", "I was born"), since "I'm vegetarian" and "I have a cat" name things; the infinitive after
  "used to", "want to", "plan to" ... ("I used to live in Berlin"), but not after "like to" ("I love to swim": the
  swimming is the thing); an ``-ed`` word after "and", "but", "then" ("... and worked at Siemens").
* Chinese: jieba's part-of-speech tags (:mod:`jieba.posseg`); the key words are the nouns (place and person names
  included), the verbs (v*) are let go, the function words (pronouns, particles, adverbs, numerals) never count.

With no subject, the first word is a verb only when it is a past form ("loved", "Lived in Berlin", "Just moved to
Porto": -ed but not -eed, or an irregular participle), not a gerund or noun ("hiking", "painting", "jazz", "garden",
"Sweden"), and not a name leading a verb ("Ahmed moved to Porto"). Its capital is no evidence of a name: a request
starts with one either way. A past form standing alone ("Loved", "Painted", "Ahmed") is read as a verb
(:attr:`RequestWords.maybe_name` names it); the memories tell whether it is a name (:func:`written_as_name`). A
new-user trial: "Loved" and "Painted" were read as names and reached every line saying "love" or "paint", where
"loved" and "painted" were refused.

Only the verbs are let go, so "I like jazz" keeps "jazz" and never reaches every "I like …" line. A request of verbs
only ("loved", "I painted", "I lived in", "我喜欢": :attr:`RequestWords.only_verbs`) names no thing to look for and
is refused (:func:`timem.memory.forget.preview`): its verbs alone would reach every line that uses them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from timem.item_values import normalise
from timem.tokens import content_stems

_TOKEN = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)?")
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_HAN_RUN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")

_PRONOUNS = frozenset("i we you he she they".split())
_POSSESSIVES = frozenset("my our your his her their".split())
_BE = frozenset("am is are was were be been being 'm 're 's".split())
_HAVE = frozenset("have has had 've".split())
#: words after which the next word is a bare verb ("I didn't like", "I'll visit", "I never went")
_MODALS = frozenset("""do does did don't doesn't didn't will would shall should can could may might must won't
can't cannot couldn't wouldn't shouldn't not never 'd 'll""".split())
_ADVERBS = frozenset("""just still also once always often already recently finally actually currently only sometimes
usually ever again even then now really mostly first no longer""".split())
#: verbs whose "to" leads another verb that is no thing of its own ("used to live", "want to visit")
_TO_VERBS = frozenset("""use used want wants wanted need needs needed plan plans planned try tries tried decide decides
decided hope hopes hoped going have has had got ought""".split())
#: participles that end in neither -ed nor -en ("I was born in Berlin", "I have met Tom")
_IRREGULAR = frozenset("""born grown raised known gone been done seen taken given made met got left lost had kept spent
taught brought bought built sold told found thought went came ran swam sang drank ate wrote eaten written broken
forgotten spoken chosen driven stolen fallen""".split())
_CONJUNCTIONS = frozenset("and but then or".split())
#: words of the request that are never key words (auxiliaries, adverbs)
_FUNCTION = _BE | _HAVE | _MODALS | _ADVERBS

#: jieba part-of-speech tags of the Chinese key words (nouns, names, abbreviations) and of the verbs let go
_ZH_KEY = ("n", "j")
_ZH_VERB = ("v",)


#: Latin letters that no decomposition takes apart: "Łódź" is "Lodz", "Øresund" "Oresund", "Straße" "Strasse"
_LATIN_LETTERS = str.maketrans({"ł": "l", "Ł": "L", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D", "ß": "ss", "æ": "ae",
                                "Æ": "AE", "œ": "oe", "Œ": "OE", "ı": "i"})


def fold(text: str) -> str:
    """``text`` with the accents of its Latin letters dropped, for matching only ("Zürich" -> "Zurich", "café" ->
    "cafe"): a request typed without them reaches a memory written with them, and the other way round. Other scripts
    are left as they are (a Japanese voiced kana keeps its mark, Cyrillic and Chinese are untouched). A new-user trial:
    ``timem forget "zurich"`` found nothing where the memories said "Zürich"."""
    if text.isascii():
        return text
    out: list[str] = []
    for ch in unicodedata.normalize("NFD", text.translate(_LATIN_LETTERS)):
        if unicodedata.combining(ch) and out and out[-1].isascii():
            continue  # a mark on a Latin letter (its base is ASCII after the decomposition)
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


@dataclass(frozen=True)
class RequestWords:
    """A forget request's content words, as typed and in order: ``key`` (what a segment must hold) and ``verbs``
    (let go; a segment holding more of them is preferred)."""

    key: tuple[str, ...]
    verbs: tuple[str, ...]
    #: a capitalised past form standing alone ("Loved", "Ahmed"), read as a verb: it may be a name
    #: (:func:`written_as_name`, :meth:`as_name`)
    maybe_name: str | None = None

    @property
    def only_verbs(self) -> bool:
        """Whether every content word of the request is a verb: it names no thing to look for."""
        return not self.key and bool(self.verbs)

    def as_name(self) -> RequestWords:
        """The request with :attr:`maybe_name` read as a name: a key word, no verb."""
        if self.maybe_name is None:
            return self
        return RequestWords(key=(*self.key, self.maybe_name),
                            verbs=tuple(v for v in self.verbs if v != self.maybe_name))


def request_words(text: str) -> RequestWords:
    """The key words and the verbs of the forget request ``text`` (see the module doc); English content words are
    those :func:`timem.tokens.content_stems` keeps (stop words and words of one or two letters never count)."""
    tokens = [m.group() for m in _TOKEN.finditer(text)]
    verb_at = _english_verbs(tokens)
    key: list[str] = []
    verbs: list[str] = []
    for i, tok in enumerate(tokens):
        w = tok.lower().replace("’", "'")
        if content_stems(tok, ascii_only=True) and not _contraction(w) and w not in _FUNCTION:
            (verbs if i in verb_at else key).append(tok)
    if _HAN.search(text):
        zh_key, zh_verbs = _chinese_words(text)
        key += zh_key
        verbs += zh_verbs
    return RequestWords(key=tuple(dict.fromkeys(key)), verbs=tuple(dict.fromkeys(verbs)),
                        maybe_name=_lone_past(tokens) if not key else None)


def holds(content: str, word: str, stems: set[str] | None = None) -> bool:
    """Whether a segment's ``content`` holds the request's ``word``: a Chinese word as a part of it, an English word
    by its stem ("lived" is held by "living"); ``stems``: the content's ASCII stems, if already computed."""
    if _HAN.search(word):
        return normalise(word) in normalise(content)
    return content_stems(word, ascii_only=True) <= (stems if stems is not None else content_stems(content,
                                                                                                  ascii_only=True))


def written_as_name(word: str, contents: Iterable[str]) -> bool:
    """Whether the memories ``contents`` write ``word`` (a capitalised request word, :attr:`RequestWords.maybe_name`)
    as a name: capitalised within a sentence (after a lower-case word, a comma or a resolved date: "I met Ahmed",
    "Yesterday [= 9 May 2024] Ahmed moved"; a sentence's first word is capitalised either way) and never in lower
    case, by its stem ("I loved it", "I love jazz" for "Loved"), since the request reaches those too."""
    stems = content_stems(word, ascii_only=True)
    inside = re.compile(rf"[a-z0-9,;)\]]\s+{re.escape(word)}\b")  # "] ": after a resolved date "[= 9 May 2024]"
    lower = re.compile(rf"(?<![A-Za-z]){re.escape(word[:3].lower())}[a-z]*")
    named = False
    for content in contents:
        if any(content_stems(m.group(), ascii_only=True) & stems for m in lower.finditer(content)):
            return False
        named = named or inside.search(content) is not None
    return named


def _lone_past(tokens: list[str]) -> str | None:
    """The capitalised past form the request ends with, when it is the verb of no subject ("Loved", "Just Moved",
    "Ahmed"): a name or a verb."""
    lead = _verbs_after([t.lower().replace("’", "'") for t in tokens], 0, agreeing=False, mode="lead")
    first = min(lead, default=None)
    return tokens[first] if first is not None and first + 1 == len(tokens) and tokens[first][0].isupper() else None


def _english_verbs(tokens: list[str]) -> set[int]:
    """The positions of the verbs among ``tokens`` (see the module doc)."""
    low = [t.lower().replace("’", "'") for t in tokens]
    verbs = _verbs_after(low, 0, agreeing=False, mode="lead")  # no subject: "Lived in Berlin", "Just moved to Porto"
    first = min(verbs, default=None)
    if first is not None and tokens[first][0].isupper() and _verbs_after(low, first + 1, agreeing=True):
        verbs = set()  # a name leading a verb: "Ahmed moved to Porto" (alone, "Ahmed" may be "Loved": RequestWords)
    for i, w in enumerate(low):
        start = _subject_end(tokens, low, i)
        if start is not None:
            agreeing = w not in _PRONOUNS and not _contracted_subject(w)
            verbs |= _verbs_after(low, start, agreeing=agreeing, mode=_contraction_mode(w))
        elif w in _CONJUNCTIONS and i + 1 < len(low) and _is_past(low[i + 1]):
            verbs.add(i + 1)
    return verbs


def _contraction(w: str) -> bool:
    """Whether ``w`` is a contraction ("I'm", "we've", "didn't", "I'll"): function words, never key words."""
    return _contracted_subject(w) or w.endswith("n't") or w.endswith(("'m", "'re", "'ve", "'d", "'ll"))


def _contracted_subject(w: str) -> bool:
    head, _, tail = w.partition("'")
    return bool(tail) and head in _PRONOUNS


def _contraction_mode(w: str) -> str:
    """How the word after a contracted subject reads: "I'm" (be), "I've" (have), "I'll", "I'd" (bare)."""
    tail = "'" + w.partition("'")[2] if "'" in w else ""
    return "be" if tail in {"'m", "'re", "'s"} else "have" if tail == "'ve" else "bare"


def _subject_end(tokens: list[str], low: list[str], i: int) -> int | None:
    """The position after a subject starting at ``i`` (a pronoun, "my" + noun + an optional name, a name), or
    ``None`` when no subject starts there."""
    w = low[i]
    if w in _PRONOUNS or _contracted_subject(w):
        return i + 1
    if w in _POSSESSIVES and i + 1 < len(low):
        j = i + 2
        while j < len(tokens) and tokens[j][0].isupper():  # "my sister Ana"
            j += 1
        return j
    if tokens[i][0].isupper() and content_stems(w) and (i == 0 or low[i - 1] not in _POSSESSIVES):
        return i + 1  # a name: "Ana moved to Porto" (a common word counts only when a verb follows, see below)
    return None


def _verbs_after(low: list[str], j: int, *, agreeing: bool, mode: str = "bare") -> set[int]:
    """The verb (and the verb its "to" leads) after a subject ending before ``j``. ``agreeing``: the subject is a
    noun or a name, whose bare verb is seen only with an -s or -ed ("my sister moves", "Ana moved"). ``mode``: what
    the words before left to read: a bare verb, after *be* or *have* a participle only, or with no subject
    (``"lead"``) a past form only (:func:`_is_past`)."""
    while j < len(low):
        w = low[j]
        if w in _ADVERBS or (w.endswith("ly") and len(w) > 4):
            pass
        elif w in _BE:
            mode = "be"
        elif w in _HAVE:
            mode = "have"
        elif w in _MODALS:
            mode, agreeing = "bare", False
        else:
            break
        j += 1
    if j >= len(low):
        return set()
    w = low[j]
    if mode == "lead":
        verb = _is_past(w)
    elif mode in ("be", "have"):
        verb = _is_participle(w, be=mode == "be")
    elif agreeing:
        verb = _is_participle(w, be=False) or (w.endswith("s") and not w.endswith("ss") and len(w) > 3)
    else:
        verb = bool(content_stems(w)) or w in _TO_VERBS
    if not verb:
        return set()
    found = {j}
    if w in _TO_VERBS and j + 2 < len(low) and low[j + 1] == "to":
        found |= _verbs_after(low, j + 2, agreeing=False)
    return found


def _is_participle(w: str, *, be: bool) -> bool:
    """Whether ``w`` reads as a participle: -ed, -en, an irregular one, or (after *be*) -ing."""
    return (len(w) > 4 and w.endswith(("ed", "en"))) or w in _IRREGULAR or (be and len(w) > 4 and w.endswith("ing"))


def _is_past(w: str) -> bool:
    """Whether ``w`` reads as a past form with no subject before it: -ed (not -eed: "speed", "greed") or an
    irregular participle; not -en ("garden", "chicken", "Sweden") nor -ing ("hiking", "painting": things done)."""
    return (len(w) > 4 and w.endswith("ed") and not w.endswith("eed")) or w in _IRREGULAR


def _chinese_words(text: str) -> tuple[list[str], list[str]]:
    """The Chinese key words (nouns) and verbs of ``text`` by jieba's part-of-speech tags."""
    key: list[str] = []
    verbs: list[str] = []
    for run in _HAN_RUN.findall(text):
        for pair in _posseg().cut(run):
            word, flag = pair.word, pair.flag
            if flag.startswith(_ZH_KEY):
                key.append(word)
            elif flag.startswith(_ZH_VERB):
                verbs.append(word)
    return key, verbs


@lru_cache(maxsize=1)
def _posseg() -> Any:  # jieba.posseg
    from timem.store.segmenter import jieba_words

    jieba_words("")  # jieba's dictionary loaded once, its log lines silenced
    import jieba.posseg

    return jieba.posseg
