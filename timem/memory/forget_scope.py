"""How far a forget request reaches (:mod:`timem.memory.forget`): whose lines, which spellings, which replies.

* **Someone else's line** (:func:`someone_elses`): a request in the user's own voice ("I work as a nurse",
  :func:`in_own_voice`) does not take a line where the words it matched belong to someone else, that is where every
  clause holding them has another subject ("My brother is a nurse at the hospital", "she is a nurse too"; the
  clauses and subjects of :mod:`timem.memory.grounding`, which refuses such a clause as the speaker's fact). A line
  where one clause holding them is the user's own ("My brother and I are nurses", "I'm a nurse like my brother")
  goes. Reported speech of someone else about someone else is theirs ("Tom said he's a nurse", "my sister told me
  she works as a nurse"; "I told Tom I'm a nurse" and "Tom said I'm a nurse" are the user's), and so is a line about
  the user's relative as the assistant says it ("So your brother is a nurse now!"); a new-user trial: both went with
  "I work as a nurse". The thing asked about may be a possessive ("Your cat's name is Miso" goes for "I have a cat").
  In Chinese ("我是护士"), a clause is someone else's when it speaks of a relative, friend or pet ("我姐姐是护士",
  "你姐姐也是护士吗") or its subject is 他, 她, 他们 ("她是护士"), and has no 我 of the user's own ("我姐姐和我都是
  护士", "她说我是护士" are the user's). A new-user trial: ``timem forget "我是护士"`` took "我姐姐是护士。" and
  "她是护士。".
* **A request about someone else** (:func:`about_someone_else`: "my brother is a nurse", "my sister Ana is a nurse",
  "Tom is a nurse", "我姐姐是护士"; no "I" or "we", a subject that is someone else, and a word besides who it is)
  names no item (the items are the user's own facts) and reaches only a line with a clause holding its words that
  is someone else's and names that party (:func:`party`, :func:`about_party`): "My brother is a nurse at the
  hospital", not "I work as a nurse", "My sister Ana said she is a nurse too", nor "I told Tom I'm a nurse" for
  "Tom is a nurse". A new-user trial: "my brother is a nurse" took ``job: nurse``, the user's line, the sister's.
  The thing asked about is no one else when it is a clause's subject ("Berlin was home for five years" goes for "I
  lived in Berlin"). The sources of an item the request names always go. A new-user trial: ``timem forget "I work
  as a nurse"`` also took "My brother is a nurse at the hospital".
* **A name that is also a word** (:func:`name_words`, :func:`holds_as_name`): a capitalised request word that the
  memories also write in lower case ("Will", "Rose": "I will call", "the sun rose") is read as the name, and matches
  only where a line writes it capitalised and not at a sentence's start ("lunch with Will", "my neighbour Rose", not
  "Will you remind me?"). Its first word is capitalised in any request, so there it is a name only when the memories
  write it as one somewhere (capitalised within a sentence); "Jazz" stays the word jazz. A new-user trial: "Will"
  took "I will start a new job soon", "Rose" "The sun rose over the hills".
* **The reply of the exchange** (:func:`replies`): a user's line that goes takes the assistant's reply to it (the
  assistant turns right after it in its session, before the user speaks again), whatever the reply says: it mostly
  repeats what was said ("Nice, jazz is great!") or answers it, and it would be left answering nothing. The preview
  lists it, labelled as the reply. A new-user trial: forgetting a line left the reply that echoed it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from timem.item_values import mentions
from timem.memory.forget_words import holds, request_words
from timem.memory.grounding import CLOSE, about_speaker, clauses
from timem.models import MemoryNode, Role
from timem.store.ports import MemoryStore
from timem.tokens import content_stems

#: the user speaking of themselves: "I work as a nurse", "I'm vegetarian", "we moved to Porto"
_OWN_VOICE = re.compile(r"\b(?:I|we)\b|\bI['’](?:m|ve|d|ll)\b", re.IGNORECASE)
#: the people close to a speaker in Chinese (姐姐, 朋友, 老公 …), and with the pets (猫, 狗)
_ZH_PEOPLE = (r"妈妈|爸爸|母亲|父亲|姐姐|妹妹|哥哥|弟弟|朋友|老公|老婆|丈夫|妻子|男朋友|女朋友|同事|儿子|女儿|"
              r"家人|父母|奶奶|爷爷|外婆|外公|老板|邻居|室友")
_ZH_CLOSE = _ZH_PEOPLE + "|猫|狗"
#: "我姐姐", "我的朋友", "我们的猫": the user's relative, friend or pet, no "I" of its own
_ZH_MY_CLOSE = re.compile(rf"我们?的?(?:{_ZH_CLOSE})")
#: a Chinese clause whose subject is someone else: 他, 她, 他们, "你姐姐" (the assistant), "我姐姐", "姐姐" (people
#: only), after a lead word (也, 但是, 昨天 …)
_ZH_OTHER = re.compile(r"^\W*(?:(?:也|还|而且|但是?|可是|不过|所以|然后|后来|其实|现在|最近|昨天|今天|前天|听说)\W*)?"
                       rf"(?:[他她它]们?|(?:你们?|我们?)的?(?:{_ZH_CLOSE})|(?:{_ZH_PEOPLE}))")
_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _zh_self(text: str) -> bool:
    """Whether the Chinese ``text`` has the user in it: a 我 or 我们 other than in "我姐姐", "我的朋友" …"""
    return "我" in _ZH_MY_CLOSE.sub("", text)


def _own_clause(clause: str) -> bool:
    """Whether a clause of a request is the user's own: :func:`timem.memory.grounding.about_speaker`, and in Chinese
    no subject that is someone else (:data:`_ZH_OTHER`: "她是护士", which ``about_speaker`` reads as the
    speaker's)."""
    return about_speaker(clause) and not (_CJK.search(clause) and _ZH_OTHER.search(clause))


def in_own_voice(text: str) -> bool:
    """Whether the request ``text`` is said in the user's own voice ("I work as a nurse", "我是护士") and not about
    someone else ("my brother is a nurse", "my brother and I went to Rome", "我姐姐是护士")."""
    own = bool(_OWN_VOICE.search(text)) or (bool(_CJK.search(text)) and _zh_self(text))
    return own and all(_own_clause(c) for c in clauses(text) if c.strip())


def about_someone_else(text: str) -> bool:
    """Whether the request ``text`` says something of someone else, not of the user ("my brother is a nurse", "Tom
    is a nurse", "我姐姐是护士", "她是护士"): no "I" or "we" (我, 我们), a clause whose subject is someone else, and a
    key word besides who it is ("my cat", "my sister" name the one, and say nothing of them)."""
    if _OWN_VOICE.search(text) or (_CJK.search(text) and _zh_self(text)) or all(
            _own_clause(c) for c in clauses(text) if c.strip()):
        return False
    who = {s for w in party(text) for s in (content_stems(w, ascii_only=True) or {w})}
    return any(not (content_stems(w, ascii_only=True) or {w}) <= who for w in request_words(text).key)


_PARTY = re.compile(rf"\b(?i:my|our|his|her|their)\s+(?P<who>(?i:{CLOSE}))\b(?P<names>(?:\s+[A-Z][a-z]+)*)")
_LEAD_NAME = re.compile(r"^\W*(?!(?:I|We|My|Our|He|She|They|It|The|This|That)\b)"
                        r"(?P<names>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\s")
_ZH_PARTY = re.compile(rf"我的?(?P<who>{_ZH_CLOSE})")


def party(text: str) -> list[str]:
    """Who the request ``text`` is about, when someone else: "my sister Ana …" -> ``["sister", "Ana"]``, "Tom is …"
    -> ``["Tom"]``, "我姐姐是护士" -> ``["姐姐"]``; ``[]`` when it names no one ("she is a nurse")."""
    if m := _PARTY.search(text):
        return [m["who"], *m["names"].split()]
    if m := _ZH_PARTY.search(text):
        return [m["who"]]
    m = _LEAD_NAME.match(text)
    return m["names"].split() if m else []


def about_party(content: str, who: list[str], words: Iterable[str]) -> bool:
    """Whether a clause of ``content`` holding the request's key ``words`` (other than ``who``) is about someone
    else and names ``who`` (any of them; with ``who`` empty, any other person): "My brother is a nurse at the
    hospital" for "my brother is a nurse"; not "I work as a nurse", nor "My sister Ana said she is a nurse too"."""
    party_stems = {s for w in who for s in (content_stems(w, ascii_only=True) or {w})}
    things = [w for w in words if not (content_stems(w, ascii_only=True) or {w}) <= party_stems] or list(who)
    for line in said(content):
        for c in clauses(line):
            if c.strip() and all(holds(c, w) for w in things) and _someone_elses_clause(c) and (
                    not who or any(holds(c, w) for w in who)):
                return True
    return False


_HEAD = re.compile(r"^On (?P<date>\d.*?):\s*$")
_SPEAKER = re.compile(r"^(?P<speaker>[^:\n]{1,80}):\s+(?P<text>.*)$")


def spoken(content: str) -> tuple[str, list[tuple[str, str]]]:
    """An L1 segment's ``content`` as its date (the heading of
    :func:`timem.consolidation.segments.render_segment`, "2 May 2024 (Thursday) 09:00"; ``""`` without one) and its
    ``(speaker, text)`` lines (a line with no ``Speaker:`` continues the one before, or has speaker ``""``)."""
    lines = [line for line in content.splitlines() if line.strip()]
    head = _HEAD.match(lines[0]) if lines else None
    out: list[tuple[str, str]] = []
    for line in lines[1 if head else 0:]:
        if m := _SPEAKER.match(line):
            out.append((m["speaker"].strip(), m["text"].strip()))
        elif out:
            out[-1] = (out[-1][0], f"{out[-1][1]} {line.strip()}")
        else:
            out.append(("", line.strip()))
    return (head["date"] if head else ""), out


def said(content: str) -> list[str]:
    """The lines of an L1 segment's ``content`` without its date line and each line's ``Speaker:`` (the format of
    :func:`timem.consolidation.segments.render_segment`)."""
    lines = content.splitlines()
    if lines and re.match(r"On \d", lines[0]) and lines[0].rstrip().endswith(":"):
        lines = lines[1:]
    return [re.sub(r"^[^:\n]{1,80}:\s+", "", line) for line in lines if line.strip()]


#: who a clause may be about when not the speaker: "Tom", "Ana Silva", "my sister (Ana)", "he", "she", "they"
_WHO = (rf"(?:(?i:(?:my|our|your|his|her|their)\s+(?:{CLOSE}))(?:\s+[A-Z][a-z]+)?|(?i:he|she|they)|"
        r"(?!(?:I|We|My|Our|Me|Us|You|Your|Just|Then|So|And|But|Also|Well|Honestly)\b)[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)")
#: reported speech of someone else about someone else: "Tom said he's a nurse", "Lena says she is a nurse", "my sister
#: told me she works as a nurse", "Tom mentioned that Ana is …"; not "I told Tom I'm a nurse", "Tom said I'm a nurse"
_REPORTED = re.compile(rf"^\W*(?:(?i:also|and|but|so|now|then|honestly|well)\W+)?{_WHO}\s+"
                       r"(?i:said|says|told\s+(?:me|us)|tells\s+(?:me|us)|mentioned|mentions|thinks|thought|wrote|"
                       r"explained|claims|claimed)\s+(?:(?i:that)\s+)?" + _WHO + r"\b")
#: a clause about the user's relative or friend, as the assistant says it: "So your brother is a nurse now!" (the
#: assistant's "you're a nurse" is the user's own and goes)
_YOUR_CLOSE = re.compile(rf"^\W*(?:(?i:also|and|but|so|now|then|oh|wow|well)\W+)?(?i:your\s+(?:{CLOSE}))\b")


def _someone_elses_clause(clause: str) -> bool:
    """Whether ``clause`` is about someone else: :func:`timem.memory.grounding.about_speaker` says so, or it reports
    someone else's words about someone else (:data:`_REPORTED`) or speaks of the user's relative
    (:data:`_YOUR_CLOSE`). A Chinese clause is someone else's when it speaks of another (a relative, friend or pet:
    "我姐姐是护士", "你姐姐也是护士吗"; or its subject is 他, 她, 他们: "她是护士") and has no 我 of the user's own
    ("我姐姐和我都是护士" and "她说我是护士" are the user's, as "Tom said I'm a nurse" is)."""
    if _CJK.search(clause):
        other = bool(_ZH_MY_CLOSE.search(clause) or _ZH_OTHER.search(clause))
        return other and not _zh_self(clause)
    return not about_speaker(clause) or bool(_REPORTED.search(clause) or _YOUR_CLOSE.search(clause))


def someone_elses(content: str, words: Iterable[str], values: Iterable[str] = ()) -> bool:
    """Whether every clause of ``content`` holding one of the request's key ``words`` (by stem) or an item's
    ``values`` (as words) is about someone else; ``False`` when no clause holds any (the line was matched otherwise)."""
    words, values = list(words), list(values)
    holding = [c for line in said(content) for c in clauses(line)
               if c.strip() and (any(holds(c, w) for w in words) or any(mentions(c, v) for v in values))]
    # the thing asked about may be the clause's subject: "Berlin was home for five years" is no one else's
    asked = re.compile(r"(?<![\w'’-])(?:" + "|".join(re.escape(w) for w in [*words, *values] if w)
                       + r")(?:s|es|['’]s)?(?![\w'’-])", re.IGNORECASE) if [*words, *values] else None
    return bool(holding) and all(_someone_elses_clause(asked.sub("", c) if asked else c) for c in holding)


_TOKEN = re.compile(r"[A-Za-z][a-z'’]+")
#: before a sentence's first word: nothing, an end of sentence, a colon or an opening quote or bracket
_STARTS = re.compile(r"(?:^|[.!?:;\"“(…]|\s[-–—])\s*$")


def _initial(line: str, at: int) -> bool:
    return _STARTS.search(line[:at]) is not None


def holds_as_name(content: str, word: str) -> bool:
    """Whether ``content`` writes ``word`` capitalised and not at a sentence's start ("I had lunch with Will")."""
    rx = re.compile(rf"(?<![\w'’-]){re.escape(word)}(?![\w'’-])")
    return any(not _initial(line, m.start()) for line in said(content) for m in rx.finditer(line))


def name_words(text: str, contents: Iterable[str]) -> list[str]:
    """The capitalised words of the request ``text`` that are read as names (see the module doc): written in lower
    case by the memories ``contents`` too, and not the request's first word unless the memories also write it as a
    name."""
    tokens = list(_TOKEN.finditer(text))
    lines = [line for c in contents for line in said(c)]
    out = []
    for k, m in enumerate(tokens):
        word = m.group()
        if not word[0].isupper() or word.isupper() or word in ("I", "I'm", "I've", "I'd", "I'll"):
            continue
        lower = re.compile(rf"(?<![\w'’-]){re.escape(word.lower())}(?![\w'’-])")
        if not any(lower.search(line) for line in lines):
            continue  # the memories never write it as a word: it matches as it always did
        first = k == 0 or _initial(text, m.start())
        if not first or any(holds_as_name(line, word) for line in lines):
            out.append(word)
    return out


def replies(store: MemoryStore, user_id: str, segments: list[MemoryNode],
            every: list[MemoryNode]) -> list[MemoryNode]:
    """The active segments of ``every`` (not in ``segments``) that hold only the assistant's reply to a user's turn
    held by ``segments``: the assistant turns right after it in its session, before the next turn of someone else."""
    chosen = {n.id for n in segments}
    held = [t for t in store.turns(user_id, ids=[t for n in segments for t in n.source_turn_ids])
            if t.role == Role.USER]
    reply_ids: set[str] = set()
    for session in {t.session_id for t in held}:
        turns = sorted(store.turns(user_id, session), key=lambda t: t.seq)
        gone = {t.id for t in held if t.session_id == session}
        after = False
        for t in turns:
            if t.id in gone:
                after = True
            elif t.role == Role.ASSISTANT and after:
                reply_ids.add(t.id)
            else:
                after = False
    return [n for n in every if n.id not in chosen and n.source_turn_ids and set(n.source_turn_ids) <= reply_ids]
