"""Likes and dislikes the rules read (English and Chinese), for :mod:`timem.memory.rules`.

"I love / like / enjoy / adore X", "I'm (really) into X", "I've been into X", "I'm passionate about X", "I've always
had a love for X", "I hate / dislike / can't stand / don't like X", "I'm a
big fan of X", "I am a huge X fan", "I'm not a fan of X" (a dislike), "I used to love X" (ends "likes X"), 我很喜欢X,
我讨厌X, 我是X的粉丝. "the" before a name or a few things named with it is left out ("I love the blues": "blues"), and a
value is kept as written ("I love the Rolling Stones": "Rolling Stones"); an activity after the verb is a hobby or
nothing (:mod:`timem.memory.hobbies`); an opinion denied or hedged is none (:func:`timem.memory.opinions.hedged`). A
sentence with two opinion clauses ("I love jazz and hate techno") is cut in two first (:func:`opinion_clauses`). A
list gives one value each ("I love jazz, techno and soul"; :func:`things`). A value ends at "and" before a subject of
its own ("I love jazz and my brother loves techno": "jazz"; the brother's clause is his).
"""

from __future__ import annotations

import re

from timem.memory.hobbies import HOBBIES, INTO
from timem.memory.opinions import INTERJECTIONS, TIME_ADVERBIAL, TIME_WORDS, ended_opinion, hedged

#: "the" before a name or a thing named with it is left out, as in "a fan of the Beatles": "I love the blues" likes
#: "blues" (a new-user trial read nothing); not "I love the photo / the idea / the way you …" (no thing liked)
_OPINION_THE = (r"(?:the\s+(?=(?-i:[A-Z])|(?:blues|outdoors|ocean|sea|beach|mountains|countryside|rain|snow|"
                r"theat(?:re|er)|opera|ballet)\b))?")
_NO_THING = r"it|that|this|you|him|her|them|to|how|when|what|being|my|your|his|our|their|the|a|an"
#: a word of a liked thing: "jazz", "sci-fi", "R&B"
_WORD = (r"(?:(?-i:St|Dr|Mr|Mrs|Ms|Mt)\.(?=\s+(?-i:[A-Z]))|"  # "St. Louis" (a trial liked "St")
         r"[a-zà-öø-ÿ\u0100-\u017f][a-zà-öø-ÿ\u0100-\u017f'&-]*)")  # "crème brûlée", "jalapeños" (a trial)
#: one thing liked: one to four words, none of them "and" / "or" (those join a list) or "but" (a new clause)
_ITEM = rf"{_WORD}(?:\s+(?!(?:and|or|but)\b){_WORD}){{0,3}}?"
#: a subject of its own after "and": "I love jazz and my brother loves techno", "… and she hates it", "… and Tom loves
#: techno", "… and I play guitar" (a second new-user trial stored nothing of the first); a name is a subject before
#: a verb only ("Simon and Garfunkel" is one thing)
_OWN_SUBJECT = (r"(?:(?:i|we|he|she|they|it|my|our|his|her|their)\b|(?-i:[A-Z][a-z]+)\s+(?:is|was|are|were|has|had|"
                r"does|did|loves|likes|hates|enjoys|adores|prefers|dislikes|lives|works|plays|listens|thinks|says|said)\b)")
#: a further thing of a list: as the first, and no word that starts a clause ("… and so does my wife")
_NEXT = (_OPINION_THE + rf"(?!{_OWN_SUBJECT})(?!(?:{_NO_THING}|and|or|but|i|we|he|she|they|me|us|so|then|also|not|no|"
         r"more|stuff|things|everything|anything|all|other|others|especially|particularly|mostly|mainly|even|including|"
         r"like|such)\b)" + _ITEM)
#: the thing liked, or a list of things ending in "and" / "or": "jazz", "jazz and techno", "jazz, techno(,) and soul",
#: "jazz or techno" (a new-user trial: "I love jazz and techno" liked "jazz and techno", "I love jazz, techno and soul"
#: jazz only)
#: a list joined by "and", "or" or "&" ("I love jazz, techno & soul": a trial read jazz only)
_LIST = (rf"{_ITEM}(?:(?:\s*,\s*(?:(?:and|or|&)\s+)?{_NEXT}|\s+(?:and|or|&)\s+{_NEXT})*"
         rf"\s*,?\s+(?:and|or|&)\s+{_NEXT})?")
#: where a thing liked ends; "but" starts another clause ("I love jazz but not techno" liked "jazz but not techno"),
#: and so do a time adverbial ("I love coffee in the morning" liked "coffee in the morning") and "and" before a
#: subject of its own (:data:`_OWN_SUBJECT`)
_VALUE_END = (rf"(?:\s*{TIME_WORDS})?"
              rf"(?=\s*(?:[,.!?;]|$|\s+(?:so\s+much|a\s+lot|too|more|again|here|there|but)\b|\s+{TIME_ADVERBIAL}|"
              rf"\s+(?:and|&)\s+{_OWN_SUBJECT}|\s+{INTERJECTIONS}))")  # "I hate Radiohead now lol" (a trial)
_OPINION_VALUE = _OPINION_THE + rf"(?:both\s+)?(?!(?:{_NO_THING})\b)(?P<v>{_LIST})" + _VALUE_END
#: "I like jazz but not techno": what is not liked after the thing liked. A dislike only after "like", whose plain
#: negation the rules read as one ("I don't like techno"); "I love jazz but not techno" does not love techno, which
#: is no dislike ("I don't love jazz" is none)
_BUT_NOT = re.compile(r"\s*,?\s+but\s+not\s+(?!(?:really|so|that|too|as|much|always|all|every|everything)\b)"
                      + _OPINION_VALUE, re.IGNORECASE)
#: a love said as a thing one has: "I've always had a love for horses", "I have a real passion for jazz" (LoCoMo dev:
#: read nothing); not a past one ("I had a love for horses" alone) nor "my love for …" (someone's, in a clause)
_LOVE_FOR = (r"\bi(?:(?:'ve|’ve|\s+have)\s+(?:always\s+|long\s+)?(?:had|got)|\s+(?:still\s+|really\s+)?have)\s+"
             r"(?:such\s+)?an?\s+(?:(?:real|deep|great|huge|big|strong|special|genuine|true|lifelong|soft)\s+)*"
             r"(?:love|passion|soft\s+spot)\s+for\s+")
_LIKE = re.compile(r"(?:\bi\s+(?:really\s+|absolutely\s+|actually\s+|kind\s+of\s+)?(?P<verb>love|like|enjoy|adore)\s+"
                   rf"|\b{INTO}|{_LOVE_FOR})" + _OPINION_VALUE, re.IGNORECASE)
_DISLIKE = re.compile(r"\bi\s+(?:really\s+)?(?:dislike|hate|can't\s+stand|cannot\s+stand|don't\s+like|"
                      r"do\s+not\s+like)\s+" + _OPINION_VALUE, re.IGNORECASE)
#: "I'm a big fan of jazz", "I am a huge Beatles fan", "I've always been a fan of the Beatles", "we're big fans of
#: X" like X; "I'm not (really) a fan of X", "I've never been a jazz fan" dislike it. Not "I was a fan" (the past),
#: "a fan of yours / what you do / the idea" (no thing), "I don't think I'm a fan" (:func:`_negated`), a ceiling fan
_FAN_WHO = (r"\b(?:i(?:'m|’m|\s+am)|i(?:'ve|’ve|\s+have)\s+(?:always\s+|long\s+)?been|i\s+(?:became|have\s+become)"
            r"|we(?:'re|’re|\s+are))\s+")
_FAN_NOT = (r"\b(?:i(?:'m|’m|\s+am)\s+(?:not|no)|i(?:'ve|’ve|\s+have)\s+never\s+been)\s+"
            r"(?:really\s+|(?:that\s+)?much\s+of\s+)?")
_FAN_SO = r"(?:(?:still|also|really|just|always|now|truly|definitely|totally|kind\s+of|such)\s+)*(?:an?\s+)?"
_FAN_BIG = (r"(?:big|huge|massive|great|real|true|die-?hard|long-?time|lifelong|total|complete|absolute|enormous|"
            r"avid|devoted|loyal|hardcore|crazy|major|serious|proud|biggest|number\s+one)")
_FAN_NO_THING = (r"(?!(?:it|that|this|these|those|you|yours|him|his|her|hers|them|theirs|ours|mine|to|how|when|what|"
                 r"whatever|being|my|your|our|their|the|a|an|both|all|any|every|everything|anything|some|people|"
                 r"someone|everyone|one|each|many|lots|plenty|most|such|not|no|never)\b)")
#: a word of a liked name: "Miles Davis", "sci-fi", "St. Louis" (the sentences do not end at "St.")
_FAN_WORD = r"(?:(?-i:St|Dr|Mr|Mrs|Ms|Mt)\.|[a-z][\w'’&-]*)"
#: "a fan of X": X runs to punctuation, a dash, a word that starts something else ("since", "and", "like") or a time
#: adverbial ("I'm a big fan of jazz every day": "jazz"; a trial kept "jazz every day")
_FAN_OF = (rf"(?:{_FAN_BIG}\s+)*fans?\s+of\s+(?:the\s+(?=(?-i:[A-Z])))?{_FAN_NO_THING}"
           rf"(?P<v>{_FAN_WORD}(?:\s+{_FAN_WORD}){{0,3}}?)"
           r"(?=\s*(?:[,.!?;:()–—]|$)|\s+-|\s+(?:now|these\s+days|nowadays|lately|anymore|any\s+more|since|for|and|but|because|too|so|ever|"
           r"as|from|when|who|which|that|in|at|on|with|like|though|honestly|myself|really)\b|\s+"
           + TIME_ADVERBIAL + r"|\s+" + INTERJECTIONS + ")")
#: "a (huge) X fan": one to three words before "fan", none of them a "big" word
_FAN_NAMED = (rf"(?:{_FAN_BIG}\s+)*(?!{_FAN_BIG}\b){_FAN_NO_THING}"
              rf"(?P<v>{_FAN_WORD}(?:\s+(?!{_FAN_BIG}\b){_FAN_WORD}){{0,2}}?)\s+fans?\b(?!\s+of\b)")
_FANS = [(re.compile(who + _FAN_SO + body, re.IGNORECASE), attribute)
         for who, attribute in ((_FAN_NOT, "dislikes"), (_FAN_WHO, "likes")) for body in (_FAN_OF, _FAN_NAMED)]
_FAN_RX = frozenset(rx for rx, _ in _FANS)
#: 我现在喜欢咖啡 (a trial: without 现在 it read nothing)
_ZH_OFTEN = r"(?:很|非常|特别|真的|也|一直|最近|超|现在|如今|目前|还|更|又|开始)*"
#: a Chinese value runs to the next punctuation (as in :mod:`timem.memory.rules`)
_ZH_VAL = r"(?P<v>[\u4e00-\u9fffA-Za-z0-9]{1,12}?)"
_ZH_END = r"(?=[了啦呢吧啊]?(?:[，,。.！!？?；;、\s]|$))"
#: 我讨厌香菜
_ZH_DISLIKE = re.compile(r"我" + _ZH_OFTEN + r"(?:不喜欢|讨厌|受不了)" + _ZH_VAL + _ZH_END, re.IGNORECASE)
#: 我很喜欢爵士乐 (爱上了: a hobby)
_ZH_LIKE = re.compile(r"我" + _ZH_OFTEN + r"(?:喜欢|爱)(?!上)" + _ZH_VAL + _ZH_END, re.IGNORECASE)
#: no thing liked: a person or a place pointed at ("我喜欢你", "我喜欢这里")
_ZH_NOT_A_THING = frozenset("你 您 他 她 它 你们 他们 她们 它们 这 那 这里 那里 这儿 那儿 "
                            "这个 那个 这样 那样 这些 那些 自己 大家".split())
#: 我是周杰伦的粉丝
_ZH_FAN = re.compile(r"我(?:也|一直)?是" + _ZH_VAL + r"的(?:铁杆|忠实|超级|老)?(?:粉丝|歌迷|影迷|球迷|书迷)",
                     re.IGNORECASE)
_NOT_A_THING = frozenset({"all", "how", "being", "every", "everything", "anything", "something", "so", "very",
                          "doing", "when", "what", "where", "why", "seeing", "having", "getting", "making"})


def _negated(before: str) -> bool:
    """Whether the clause ``before`` a match is negated ("I don't think I'm a fan of jazz"); a comma or "but"
    closes the clause ("I don't drink coffee, but I'm a big fan of tea" is not)."""
    return re.search(r"(?:\bnot|\bnever|\bno|n['’]t)\b(?:(?!\bbut\b)[^,;])*$", before, re.IGNORECASE) is not None


def _clean(v: str) -> str:
    v = v.strip(" \t'\"“”‘’").rstrip(".,!?;:。，！？")
    return re.sub(rf"\s+{TIME_WORDS}$", "", v, flags=re.IGNORECASE).strip()


_COPULA = frozenset({"is", "are", "was", "were", "be"})
#: pairs joined by "and" that name one thing (a genre, a dish, a drink, a game), kept whole in a list: "I love rock
#: and roll" likes "rock and roll", "I love jazz, fish and chips and soul" three things
BINOMIALS = frozenset("""
rock and roll|rhythm and blues|drum and bass|country and western|rock and pop|
salt and pepper|salt and vinegar|cheese and onion|fish and chips|mac and cheese|macaroni and cheese|bread and butter|
peanut butter and jelly|ham and cheese|bacon and eggs|eggs and bacon|rice and beans|bangers and mash|pie and mash|
sweet and sour|surf and turf|cookies and cream|strawberries and cream|chips and salsa|chips and dip|
milk and cookies|tea and biscuits|cheese and crackers|gin and tonic|rum and coke|whisky and coke|whiskey and coke|
vodka and tonic|dungeons and dragons|snakes and ladders|arts and crafts|hide and seek|truth or dare|
""".replace("\n", "").strip("|").split("|"))
#: a pair is kept whole with "&" too: "rock & roll"
_BINOMIAL = re.compile(r"(?<![\w'&-])(?:" + "|".join(re.escape(b).replace(r"\ ", r"\s+").replace(
    r"\s+and\s+", r"\s+(?:and|&)\s+") for b in sorted(BINOMIALS, key=len, reverse=True)) + r")(?![\w'&-])",
                       re.IGNORECASE)
_SEPARATOR = re.compile(r"(\s*,\s*(?:(?:and|or|&)\s+)?|\s+(?:and|or|&)\s+)", re.IGNORECASE)


def things(value: str, the_first: bool = False) -> list[str]:
    """The things a liked list names: ``"jazz, techno and soul"`` -> ``["jazz", "techno", "soul"]``. A list is cut at
    its commas and at "and" / "or", but not inside a pair of :data:`BINOMIALS` ("rock and roll") and not between two
    capitalised words: a title or a band ("Pride and Prejudice", "Simon and Garfunkel", "Earth, Wind and Fire")
    cannot be told from two names ("Bach and Mozart"), and one value naming both is true where two halves of a title
    are false; so does a title joined by "and the" ("Sex and the City"; a trial liked "Sex" and "City"), once: "the"
    before each of two names makes them two ("the Rolling Stones and the Beatles", ``the_first``: the value followed
    "the"), and so does one after a title ("Pride and Prejudice and the Beatles"). "the" before a further thing is
    left out ("jazz and the Beatles": ``["jazz", "Beatles"]``)."""
    kept = _BINOMIAL.sub(lambda b: b.group(0).replace(" ", "\0"), value)
    pieces = _SEPARATOR.split(kept)
    out, had_the, joined = [pieces[0]], [the_first], [False]
    for sep, piece in zip(pieces[1::2], pieces[2::2], strict=True):
        left, right = out[-1].split()[-1], re.sub(r"^the\s+", "", piece, flags=re.IGNORECASE)
        the = right != piece
        if left[:1].isupper() and right[:1].isupper() and (not the or not (had_the[-1] or joined[-1])):
            out[-1] += sep + piece
            joined[-1] = True
        else:
            out.append(piece)
            had_the.append(the)
            joined.append(False)
    return [re.sub(r"^the\s+", "", p.replace("\0", " ").strip(), flags=re.IGNORECASE) for p in out if p.strip()]


def _activity(word: str) -> bool:
    """Whether ``word`` names an activity: a gerund, unless capitalised as a name ("the Rolling Stones") and no
    activity of :data:`HOBBIES` ("Hiking")."""
    return word.lower().endswith("ing") and (word[:1].islower() or word.lower() in HOBBIES)


def _thing(attribute: str, thing: str, further: bool) -> tuple[str, str] | None:
    """``(attribute, value)`` for one thing of a like or dislike, as written ("jazz", "Rolling Stones": a name keeps
    its capitals). An activity is nothing ("running my own studio"; a first one is :mod:`timem.memory.hobbies`' to
    read), or a hobby when it is a further thing of a list and one of :data:`HOBBIES` ("I love jazz and hiking"); "all
    the …", "how …" are no thing."""
    words = _clean(thing).split()
    if not words or words[0].lower() in _NOT_A_THING:
        return None
    if _activity(words[0]):
        hobby = further and attribute == "likes" and len(words) == 1 and words[0].lower() in HOBBIES
        return ("hobby", words[0].lower()) if hobby else None
    return attribute, " ".join(words)


def read_opinions(s: str) -> list[tuple[str, str, bool]]:
    """The likes and dislikes of the clause ``s``: ``(attribute, value, ends)`` with ``ends`` true for an opinion
    that is over ("I used to love jazz": ``("likes", "jazz", True)``); ``[]`` when it holds none."""
    out: list[tuple[str, str, bool]] = []
    # "I used to love jazz": "likes jazz" ends; an activity only when it is a hobby (not "spending time in …")
    if (past := ended_opinion(s)) and not (_activity(w := past[1].split()[0]) and w.lower() not in HOBBIES):
        out.append((past[0], past[1], True))
    # "I don't like techno anymore" ends "likes techno" and is no dislike of it (:func:`ended_opinion`)
    over = {past[1].lower()} if past else set()
    for rx, attribute in ((_DISLIKE, "dislikes"), *_FANS[:2], (_LIKE, "likes"), *_FANS[2:]):
        m = rx.search(s)
        fan = rx in _FAN_RX
        if not m or hedged(s[:m.start()]) or (fan and attribute == "likes" and _negated(s[:m.start()])):
            continue
        if fan:  # one name: "a fan of the Rolling Stones" (an activity is a name only when capitalised)
            words = _clean(m["v"]).split()
            if (words and not (words[0].lower().endswith("ing") and not words[0][0].isupper())
                    and words[0].lower() not in _NOT_A_THING and not {w.lower() for w in words} & _COPULA
                    and " ".join(words).lower() not in over):
                out.append((attribute, " ".join(words), False))
                break
            continue
        # "… is awesome" is no thing liked; each thing of a list is one value
        if {w.lower() for w in m["v"].split()} & _COPULA:
            continue
        the_first = re.search(r"\bthe\s+(?:both\s+)?$", s[:m.start("v")], re.IGNORECASE) is not None
        found = [(*av, False) for k, thing in enumerate(things(m["v"], the_first))
                 if (av := _thing(attribute, thing, k > 0)) and av[1].lower() not in over]
        if found:
            out += found
            if attribute == "likes" and m["verb"] and m["verb"].lower() == "like" and (
                    no := _BUT_NOT.match(s, m.end())):
                the_no = re.search(r"\bthe\s+(?:both\s+)?$", s[:no.start("v")], re.IGNORECASE) is not None
                out += [(*av, False) for thing in things(no["v"], the_no) if (av := _thing("dislikes", thing, False))]
            break
    if not out:
        for rx, attribute in ((_ZH_DISLIKE, "dislikes"), (_ZH_FAN, "likes"), (_ZH_LIKE, "likes")):
            if m := rx.search(s):
                v = re.sub(r"^[吃喝看听玩去](?=.)", "", m["v"])  # 我喜欢听爵士乐: 爵士乐
                if v not in _ZH_NOT_A_THING:
                    out.append((attribute, v, False))
                break
    return out


def favourite_likes(value: str) -> list[str]:
    """The likes a favourite names ("my favourite band is Radiohead": ``["Radiohead"]``; a favourite is liked, and a
    trial found "What does Mia like?" given no favourite): the value read as after "I love" (:data:`_OPINION_VALUE`:
    "sushi and I eat it daily" likes "sushi", "jazz and soul" two things); an activity or no thing is none ("hiking",
    "my mum")."""
    m = re.match(_OPINION_VALUE, value.strip(" \t'\"“”‘’").rstrip(".,!?;:"), re.IGNORECASE)
    if m is None or {w.lower() for w in m["v"].split()} & _COPULA:
        return []
    the_first = re.match(r"the\s", value.strip(), re.IGNORECASE) is not None
    return [av[1] for k, thing in enumerate(things(m["v"], the_first))
            if (av := _thing("likes", thing, k > 0)) and av[0] == "likes"]


_LIKE_VERB = r"(?:love|like|enjoy|adore)\b"
_HATE_VERB = r"(?:hate|dislike|can't\s+stand|cannot\s+stand|don't\s+like|do\s+not\s+like)\b"
_OPINION_ADVERB = r"(?:really\s+|absolutely\s+|also\s+|still\s+)?"
_OPINION_VERB = rf"{_OPINION_ADVERB}(?:{_LIKE_VERB}|{_HATE_VERB})"
#: where a sentence may hold a second likes / dislikes clause: before "I <verb>" after a comma, "and" or "but" ("I hate
#: jazz but I love blues", "I love jazz, I hate techno"), or before a bare verb after "and" / "but" ("I love jazz and
#: hate techno"). A trial: the first gave one of its two, the last likes "jazz and hate techno"
_CLAUSE = re.compile(r"\s*(?:,\s*(?:and\s+|but\s+)?|\s(?:and|but)\s+)(?=(?P<i>i\s+)?" + _OPINION_VERB + ")",
                     re.IGNORECASE)
_I_LIKES = re.compile(rf"\bi\s+{_OPINION_ADVERB}{_LIKE_VERB}", re.IGNORECASE)
_I_HATES = re.compile(rf"\bi\s+(?:really\s+)?{_HATE_VERB}", re.IGNORECASE)
_BARE_LIKE = re.compile(rf"{_OPINION_ADVERB}{_LIKE_VERB}", re.IGNORECASE)


def opinion_clauses(sent: str) -> list[str]:
    """``sent`` cut before each further likes / dislikes clause (:data:`_CLAUSE`). A clause with its own "I" is cut
    off always; one that starts with its verb only after "and" / "but", and only when it turns the opinion of an "I
    …" before it ("I love jazz and hate techno" -> "I hate techno"): a bare "and love" is mostly the noun ("hope and
    love exist", "those who accept and love me" on LoCoMo dev). A sentence without such a clause is returned whole."""
    out: list[str] = []
    start = 0
    for m in _CLAUSE.finditer(sent):
        head, rest = sent[start:m.start()], sent[m.end():]
        if m["i"]:
            cut = True
        else:
            liking = bool(_BARE_LIKE.match(rest))
            cut = bool(m.group(0).strip(" ,").lower() in ("and", "but")
                       and (_I_HATES.search(head) if liking else _I_LIKES.search(head)))
        if cut and head.strip():
            out.append(head)
            start = m.end()
    out.append(sent[start:])
    return [p if p is out[0] or re.match(r"i\s", p, re.IGNORECASE) else f"I {p}" for p in out] if len(out) > 1 \
        else [sent]
