"""Which lines a forget request reaches, for :mod:`timem.memory.forget`: content stems (:func:`stems_of`), a thing named
by the name a line gave it (:func:`linked`: "forget my cat" and "a grey cat called Pixel" reach "Pixel chewed my
shoes"), the request's key words when no line holds all its words (:func:`by_key_words`), what the user said
(:func:`said_by_user`) and how far the request reaches by whose line and which spelling (:func:`in_scope`, with
:mod:`timem.memory.forget_scope`).
"""

from __future__ import annotations

import re

from timem.memory.forget_scope import (
    about_party,
    about_someone_else,
    holds_as_name,
    in_own_voice,
    name_words,
    party,
    someone_elses,
)
from timem.memory.forget_words import RequestWords, fold, holds, request_words
from timem.models import MemoryItem, MemoryNode, Role
from timem.store.ports import MemoryStore
from timem.tokens import content_stems


def stems_of(text: str) -> set[str]:
    """ASCII content stems (:func:`timem.tokens.content_stems`: "Your cat's name" holds "cat", as "my cat" does)."""
    return content_stems(text, ascii_only=True)


def covers(content: str, stems: set[str]) -> bool:
    return bool(stems) and stems <= stems_of(content)


#: capitalised words that follow a noun without being its name ("my cat I think", "the dog The next day")
NOT_NAMES = frozenset({"The", "This", "That", "These", "Those", "And", "But", "So", "Then", "Now", "Today",
                        "Yesterday", "Tomorrow", "He", "She", "It", "They", "We", "You", "My", "Our", "His", "Her"})


def named_by(noun: str, content: str) -> set[str]:
    """The names that ``content`` gives a ``noun`` of the request: "a grey cat called Pixel", "my cat Pixel",
    "my sister, Ana" (English, a capitalised word right after the noun)."""
    rx = re.compile(rf"\b{re.escape(noun)}s?,?\s+(?:(?:who\s+is\s+|is\s+)?(?:called|named)\s+)?"
                    r"(?P<name>[A-Z][a-z]{1,20})\b")
    return {m["name"] for m in rx.finditer(content)} - NOT_NAMES


#: the stems of the verbs that give a thing its name ("a cat called Pixel", "a dog named Rex")
_NAMING = frozenset(stems_of("called named"))


def request_stems(text: str) -> set[str]:
    """The content stems of a forget request. When it gives a thing its name ("I have a cat called Pixel"), the
    naming verb is no content: the request is "my cat Pixel" (a new-user trial: "Forget that I have a cat called
    Pixel" matched nothing, since no line said "called")."""
    stems = stems_of(text)
    if any(named_by(w.lower(), text) for w in re.findall(r"[a-z][a-z'-]*", text)):
        stems -= _NAMING
    return stems


def linked(text: str, segments: list[MemoryNode], all_segments: list[MemoryNode]) -> list[MemoryNode]:
    """The segments that name what ``text`` is about by its name: "forget my cat" and a matched segment saying "a
    grey cat called Pixel" reach "Pixel chewed my shoes" (a new-user trial: they stayed). Only when the request is
    that thing and nothing more (its content words are the nouns that were given a name, and the names):
    "forget that my sister Ana lives in Porto" reaches no other line about Ana."""
    words = re.findall(r"[A-Za-z][a-z'-]*", text)
    names = {w for w in words if w[0].isupper() and stems_of(w) and w not in NOT_NAMES}
    naming = [w.lower() for w in words if w[0].islower() and stems_of(w)
              and any(named_by(w.lower(), n.content) for n in segments)]
    names |= {x for w in naming for n in segments for x in named_by(w, n.content)}
    if not naming or not request_stems(text) <= stems_of(" ".join([*naming, *names])):
        return []
    rx = re.compile(r"\b(?:" + "|".join(re.escape(x) for x in sorted(names)) + r")\b")
    chosen = {n.id for n in segments}
    return [n for n in all_segments if n.id not in chosen and rx.search(n.content)]


def in_scope(text: str, segments: list[MemoryNode], items: list[MemoryItem], sources: set[str],
              words: RequestWords | None, *, typed: str, stored: dict[str, MemoryNode]) -> list[MemoryNode]:
    """Of the ``segments`` the request ``text`` matched, those it reaches (:mod:`timem.memory.forget_scope`): a
    capitalised word that is also a common word only where a line writes it as a name ("Will"), and a request in
    the user's own voice not where its words belong to someone else ("I work as a nurse" leaves "My brother is a
    nurse"). The ``sources`` of the items it names always go. ``text`` and ``segments`` are folded (no accents);
    a name is told by the request as ``typed`` and the lines as ``stored``: "Zurich" is no word that "zürich"
    writes in lower case."""
    names = name_words(typed, (n.content for n in stored.values()))
    if names:
        segments = [n for n in segments
                    if n.id in sources or all(holds_as_name(stored[n.id].content, w) for w in names)]
    if in_own_voice(text):
        key, values = (words or request_words(text)).key, [fold(i.value) for i in items]
        segments = [n for n in segments if n.id in sources or not someone_elses(n.content, key, values)]
    elif about_someone_else(text):  # "my brother is a nurse": only a clause about the brother, never the user's own
        who, key = party(text), (words or request_words(text)).key
        segments = [n for n in segments if about_party(n.content, who, key)]
    return segments


_FIRST_PERSON = re.compile(r"\b(?:I|me|my|mine|myself)\b|\bI['’](?:m|ve|d|ll)\b|我", re.IGNORECASE)


def first_person(text: str) -> bool:
    """Whether the request speaks of the user ("I painted a lake", "my kids", "我住在柏林")."""
    return bool(_FIRST_PERSON.search(text))


def said_by_user(store: MemoryStore, user_id: str, segments: list[MemoryNode],
                  sources: set[str]) -> list[MemoryNode]:
    """Of ``segments`` matched by a request in the first person, those the user said or the assistant said to them
    (a turn of role ``user`` or ``assistant``: "Your cat's name is Miso" goes with "I have a cat"), not what another
    person in the conversation said of themselves (role ``other``; a trial: "I painted a lake" reached the other
    LoCoMo speaker's lines), and those in ``sources`` (of an item the request names). When the sessions of those
    segments hold no turn of the user, the speakers cannot be told apart (e.g. a JSONL file naming its speakers):
    all of them."""
    found = [n for n in segments if n.id not in sources]
    if not found:
        return segments
    turns = store.turns(user_id, ids=[t for n in found for t in n.source_turn_ids])
    users = {t.id for t in turns if t.role != Role.OTHER}
    sessions = {t.session_id for t in turns}
    if not any(t.role == Role.USER for t in turns) and not any(
            t.role == Role.USER for s in sessions for t in store.turns(user_id, s)):
        return segments
    return [n for n in segments if n.id in sources or users.intersection(n.source_turn_ids)]


def by_key_words(segments: list[MemoryNode], words: RequestWords, stems: set[str]) -> list[MemoryNode]:
    """The segments holding every key word of the request (:mod:`timem.memory.forget_words`: "I lived in Berlin" ->
    "Berlin"), for a request no segment holds whole; of those, the ones holding the most of its verbs. None when
    the request has no key word, or its key words are all its content words (nothing would be let go)."""
    key = [w for w in words.key if content_stems(w, ascii_only=True) & stems or not w.isascii()]
    if not key or not words.verbs:
        return []
    held = []
    for n in segments:
        have = stems_of(n.content)
        if all(holds(n.content, w, have) for w in key):
            held.append((sum(holds(n.content, v, have) for v in words.verbs), n))
    best = max((score for score, _ in held), default=0)
    return [n for score, n in held if score == best]
