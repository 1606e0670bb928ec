"""Answer check: an answer that names only things found in no memory was invented (issue 27 #5).

The answer prompt (:mod:`timem.prompts.answer`) asks for an answer "using only the memories given". A new-user trial
forgot "I moved to Lisbon", then asked "Which city do I live in now?": recall gave off-topic lines (hiking, the
pool) that passed the score gate, and the embedded 1.5B model answered "You live in Porto." with no Porto in any
memory. A system-message rule did not stop it; this check does, after the answer call and without another one.

**Rule.** The answer's *names* are its capitalised words that do not open a sentence, less stop words, month and
weekday names, "I" and the names of who is talking (the asker, the assistant). When the answer has at least one name
and **none** of them occurs in the sources (the quoted memories, the question and its date line, the pinned
profile), it is unsupported. Only when none does: "You live in Lisbon, Portugal." over a memory that says Lisbon is
kept, since a model may add what it knows about a supported name. A name occurs in the sources when a source word
equals it case-insensitively, possessive removed, or one is a prefix of the other and the shorter has at least four
letters ("Japan" / "Japanese"; "Porto" does not match "Portugal").

**Chinese.** A Chinese answer's names are the words jieba's part-of-speech cut tags as a place, a person, an
organisation or another proper noun (``ns``, ``nr``, ``nrt``, ``nrfg``, ``nt``, ``nz``: "你住在上海。" names 上海), less
who is talking; each is supported when it occurs in the sources as written. They are checked only when the memories
themselves hold Han characters: over English memories a Chinese answer transliterates ("Lisbon" → 里斯本), which
no string match can confirm.

**Someone else's.** A question about a relation of the person ("Where does my sister live?", "my dog's name") may be
answered only from lines about that relation: lines that name the relation word, or a name that such a line gives
(``My sister Ana …`` makes lines about Ana count). A trial asked the service "Where does my sister live?" over
memories that never mention a sister and got "Berlin", the person's own former city. English questions only.

Not checked: numbers and dates (an answer computes them: "last week" from a memory's date), lower-case words, and
Japanese or Korean names.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from timem.prompts.answer import not_in_memories
from timem.prompts.common import asks

_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s?$")
#: a sentence opens at the text's start or after . ! ? : and spaces, quotes or brackets
_OPENS = re.compile(r"(?:^|[.!?:;。！？；\n])[\s\"'“‘(\[*-]*$")
_NOT_NAMES = frozenset({
    *(m.lower() for names in (calendar.month_name, calendar.month_abbr, calendar.day_name, calendar.day_abbr)
      for m in names if m), "sept", "i", "i'm", "i've", "i'd", "i'll", "ok", "okay", "yes", "no", "user",
    "assistant", "today", "yesterday", "tomorrow",
})


def _norm(word: str) -> str:
    return _POSSESSIVE.sub("", word.lower()).strip("'’-")


def proper_words(text: str) -> set[str]:
    """The words ``text`` capitalises inside a sentence (lower case, possessive removed): its proper nouns."""
    return {_norm(m.group()) for m in _WORD.finditer(text)
            if m.group()[0].isupper() and not _OPENS.search(text[max(0, m.start() - 8):m.start()])}


def names(answer: str, speakers: Iterable[str] = (), known: AbstractSet[str] = frozenset()) -> list[str]:
    """The names in ``answer`` (see the module docstring), in order, without repeats: capitalised words that do not
    open a sentence, less stop words, month / weekday names and every word of ``speakers`` (who is talking). A word
    that opens a sentence is a name too when it is in ``known`` (:func:`proper_words` of the memories): a bare
    "Berlin." answers as much as "You live in Berlin."."""
    own = {_norm(w) for s in speakers for w in _WORD.findall(s)}
    out: list[str] = []
    for m in _WORD.finditer(answer):
        word = m.group()
        if not word[0].isupper() or (_OPENS.search(answer[:m.start()]) and _norm(word) not in known):
            continue
        key = _norm(word)
        if key and key not in _NOT_NAMES and key not in ENGLISH_STOP_WORDS and key not in own and key not in out:
            out.append(key)
    return out


#: jieba's part-of-speech tags of proper nouns: place, person (and transliterated person), organisation, other
_PROPER = frozenset({"ns", "nr", "nrt", "nrfg", "nt", "nz"})
_HAN = re.compile(r"[\u3400-\u9fff]")


def han_names(answer: str, speakers: Iterable[str] = ()) -> list[str]:
    """The proper nouns of a Chinese ``answer`` by jieba's part-of-speech cut (:data:`_PROPER`), in order, without
    repeats and without the words of ``speakers``."""
    if not _HAN.search(answer):
        return []
    import jieba.posseg  # loaded on the first Chinese answer (about 1 s)

    own = set(speakers)
    out: list[str] = []
    for pair in jieba.posseg.cut(answer):
        word, flag = pair.word, pair.flag
        if flag in _PROPER and _HAN.search(word) and word not in own and word not in out:
            out.append(word)
    return out


def _supported(name: str, source_words: set[str]) -> bool:
    if name in source_words:
        return True
    return any((w.startswith(name) or name.startswith(w)) and min(len(w), len(name)) >= 4 for w in source_words)


def unsupported_names(answer: str, sources: Iterable[str], speakers: Iterable[str] = (),
                      known: AbstractSet[str] = frozenset()) -> list[str]:
    """The names of ``answer`` when none of them occurs in ``sources``, else ``[]`` (also when it names nothing).

    Args:
        answer: the LLM's answer.
        sources: what the answer may draw on: the recalled context first (its Han characters decide whether Chinese
            names are checked), then the question and the pinned lines.
        speakers: who is talking (the asker's name, the assistant's): their names are no evidence either way.
        known: proper nouns of the memories (:func:`proper_words`): an answer's opening word that is one is a name.

    Returns:
        The answer's names (lower case, possessive removed), when the answer is unsupported by this rule.
    """
    sources = list(sources)
    speakers = list(speakers)
    found = names(answer, speakers, known)
    han = han_names(answer, speakers) if _HAN.search(sources[0] if sources else "") else []
    if not found and not han:
        return []
    words = {_norm(w) for text in sources for w in _WORD.findall(text)}
    joined = "\n".join(sources)
    if any(_supported(n, words) for n in found) or any(n in joined for n in han):
        return []
    return [*found, *han]


#: a question about what the assistant itself said ("What did you suggest?", "your advice", "你推荐了什么？"): its own
#: lines are evidence then; "Do you know where I live?" asks about the person, not about the assistant's words
_ADDRESSES_ASSISTANT = re.compile(
    r"\byou\s+(?:\w+\s+)?(?:suggest|recommend|propos|advis|said|say|told|tell\s+me\s+(?:about|to)|mention|plan|"
    r"pick|choose|chose|think)\w*|\byour\s+(?:suggestion|recommendation|advice|idea|plan|tip|answer|reply|pick)"
    r"|[你您](?:之前|刚才|上次)?(?:推荐|建议|说|提到|告诉|觉得|认为)", re.IGNORECASE)


def without_lines_of(context: str, speakers: Iterable[str]) -> str:
    """``context`` without the lines that ``speakers`` said (``"Assistant: …"``)."""
    heads = tuple(f"{s}:" for s in speakers if s)
    if not heads:
        return context
    return "\n".join(line for line in context.splitlines() if not line.lstrip().startswith(heads))


#: relation words of a person: family, partners, friends, colleagues, pets (singular; a plural "s" is allowed)
RELATIONS = frozenset(
    "sister brother sibling mother mom mum father dad parent wife husband partner spouse boyfriend girlfriend fiance "
    "fiancee son daughter kid child baby grandson granddaughter friend bestie boss manager colleague coworker "
    "roommate flatmate housemate neighbour neighbor cousin aunt uncle niece nephew grandma grandmother grandpa "
    "grandfather nan granny stepmother stepfather dog cat puppy kitten pet".split())
_RELATION = re.compile(r"\bmy\s+(?:(?:\w+|\w+-\w+)\s+)?(" + "|".join(sorted(RELATIONS)) + r")(?:s|es)?\b",
                       re.IGNORECASE)


def asked_relation(question: str) -> str | None:
    """The relation word (of :data:`RELATIONS`, lower case) of a "my <relation>" the question names ("Where does my
    sister live?" -> ``"sister"``), or ``None``."""
    rel = _RELATION.search(question)
    return None if rel is None else rel.group(1).lower()


def relation_lines(evidence: str, relation: str) -> str:
    """The lines of ``evidence`` about ``relation`` (a word of :data:`RELATIONS`): those naming it, and those naming a
    person or pet that such a line names ("My sister Ana …" makes "Ana moved to Hamburg." count)."""
    word = re.compile(rf"\b{re.escape(relation)}(?:s|es|'s|’s)?\b", re.IGNORECASE)
    lines = evidence.splitlines()
    about = [x for x in lines if word.search(x)]
    aliases = {n for x in about for n in names(x.split(":", 1)[-1])}
    if aliases:
        alias = re.compile(r"\b(?:" + "|".join(re.escape(a) for a in sorted(aliases)) + r")\b", re.IGNORECASE)
        about += [x for x in lines if x not in about and alias.search(x)]
    return "\n".join(about)


def check_answer(answer: str, question: str, context: str, pinned: Iterable[str], asker: str | None,
                 mode: str, assistants: Iterable[str] = ()) -> tuple[str, str | None]:
    """The answer to give, and a trace note when the check replaced the model's.

    With ``mode = "names"`` (``Config.recall.answer_check``) an answer to a question (a chat message that asks
    nothing is acknowledged, not answered, and is kept) whose names are all unsupported
    (:func:`unsupported_names`) becomes :func:`timem.prompts.answer.not_in_memories`, in the question's language.

    Args:
        answer: the LLM's answer, stripped.
        question: the question (or chat message), verbatim.
        context: the recalled context as rendered for the prompt.
        pinned: the pinned profile lines in the prompt.
        asker: a chat's speaker (answered as "you"), or ``None``.
        mode: "names" or "off".
        assistants: the speaker names of the assistant's turns in the context. Their lines are no evidence unless the
            question speaks to the assistant ("What did you suggest?"): a new-user trial's chat stored the reply "Your
            sister lives in Porto." (wrong: she married there), and a later "Which city do I live in now?" was
            answered "You live in Porto." on the strength of that reply alone.

    Returns:
        ``(answer, None)`` when kept, else ``(replacement, note)``.
    """
    if mode == "off" or (asker is not None and not asks(question)):
        return answer, None
    assistants = list(assistants)
    evidence = context if _ADDRESSES_ASSISTANT.search(question) else without_lines_of(context, assistants)
    if (rel := _RELATION.search(question)) is not None:  # only lines about the relation can answer for it
        evidence = relation_lines(evidence, rel.group(1).lower())
        pinned = [p for p in pinned if relation_lines(p, rel.group(1).lower())]
    asked = "" if rel is not None else question  # "Does my sister live in Porto?" is no evidence that she does
    known = proper_words("\n".join([context, question, *pinned]))
    found = unsupported_names(answer, [evidence, asked, *pinned], [asker or "", "Assistant", *assistants], known)
    if not found:
        return answer, None
    return not_in_memories(question), (f"answer check: the model answered {answer!r}, but no memory, question or "
                                       f"pinned line names {', '.join(found)}; answered 'don't know' instead")
