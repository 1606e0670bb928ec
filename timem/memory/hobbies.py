"""The hobbies the rules read (English), for :mod:`timem.memory.rules`: a list of activities (:data:`HOBBIES`) and the
phrasings that start one ("I took up pottery", "I started playing chess", "I love / like / enjoy hiking", "I like to
hike", "I love to go swimming", "I play chess on weekends", "yoga is my thing now", "Dance is my passion", "my hobby
is hiking", "I'm into hiking", "I've been into dancing since I was a kid", "I'm passionate about dancing", "Swimming
three mornings a week now")
or end one ("I stopped running", "no more running", "I'm done with running", "I don't run anymore", "I no longer
run").

A hobby is a word of the list: other words after "I love …" / "I started …" are no hobby ("I started working", "I
love caring for them"), and running a business is no running ("I love running my own studio"). A list after the
first activity gives one hobby each, as long as its words are activities: "I love hiking and swimming", "I enjoy
cooking, baking and gardening" (a hobby is one activity, so "I stopped swimming" ends one of them).
"""

from __future__ import annotations

import re

from timem.memory.opinions import hedged

#: activities the hobby patterns know (English); other words after "I love …" / "I started …" are no hobby
#: ("I started working", "I love caring for them"): on LoCoMo dev such words made 5 false hobbies of 7
HOBBIES = frozenset("""
running jogging swimming hiking walking cycling biking climbing bouldering yoga pilates meditation dancing ballet
salsa tango painting drawing sketching pottery ceramics sculpting knitting crocheting sewing quilting embroidery
gardening cooking baking photography birdwatching fishing camping surfing skiing snowboarding skating skateboarding
chess poker gaming tennis badminton squash football soccer basketball volleyball baseball golf boxing karate judo
rowing kayaking canoeing sailing diving snorkeling horseback riding reading writing poetry singing guitar piano
violin cello drums ukulele saxophone flute clarinet trumpet trombone harp banjo harmonica mandolin oboe calligraphy
origami woodworking journaling volunteering stargazing
""".split())
#: "running my own studio", "running a small bakery": running a business is no hobby of running (LoCoMo dev)
_NOT_RUNNING_A_BUSINESS = (r"(?<!\brunning)|(?!\s+(?:my|our|his|her|their|an?|the)\s+"
                           r"(?:own\s+|small\s+|little\s+|new\s+)*(?:business|biz|company|studio|shop|store|restaurant|caf[eé]|bakery|salon|gym|firm|agency|"
                           r"startup|brand|practice|clinic|school|team|club|blog|channel|household|place|show)s?\b)")
_HOBBY_START = re.compile(r"\bi(?:'ve|\s+have)?\s+(?:just\s+|recently\s+|also\s+)?(?:took|taken|take)\s+up\s+"
                          r"(?:the\s+|a\s+)?(?P<v>[a-z][a-z-]{2,20})\b"
                          r"|\bi(?:'ve|\s+have)?\s+(?:just\s+|recently\s+|also\s+)?(?:started|begun|began)\s+"
                          r"(?:(?:doing|playing|practi[sc]ing|learning)\s+(?:the\s+|a\s+)?(?P<w>[a-z][a-z-]{2,20}(?:\s+[a-z][a-z-]{2,20})?)"
                          r"|(?P<g>[a-z]{3,20}ing))\b(?:" + _NOT_RUNNING_A_BUSINESS + ")", re.IGNORECASE)
#: who is into an activity: "I'm (really) into", "I've (always) been into", "I'm passionate about" (LoCoMo dev: "I've
#: been into dancing since I was a kid", "I'm passionate about dancing" read nothing)
INTO = (r"i(?:'m|’m|\s+am|(?:'ve|’ve|\s+have)\s+(?:always\s+|long\s+|really\s+)?been)\s+"
        r"(?:really\s+|so\s+|totally\s+|very\s+|big\s+|now\s+|also\s+|still\s+|always\s+)*"
        r"(?:into|passionate\s+about)\s+")
#: "I love / like / enjoy hiking" (a new-user trial: "I like hiking" read nothing), "I'm into hiking"
_HOBBY_LOVE = re.compile(r"\b(?:i\s+(?:really\s+|just\s+)?(?:love|like|enjoy)\s+|" + INTO
                         + r")(?P<v>[a-z]{3,20}ing)\b(?:" + _NOT_RUNNING_A_BUSINESS + ")", re.IGNORECASE)
#: how, where, when or with whom an activity is done; anything else after "I like to X" is an object, and an activity
#: with an object is a task, not a hobby ("I like to run errands", "I like to paint my nails", "… run my own studio")
_ALONE = re.compile(r"\s*(?:[,.!?;:)]|$)|\s+&\s"
                    r"|\s+(?:and|or|but|in|on|at|with|for|every|each|when|whenever|while|if|around|"
                    r"along|outside|outdoors|together|often|a\s+lot|as|after|before|during|sometimes|too|also|so|"
                    r"because|near|by|through|early|late|daily|now|again|here|there|alone|myself|more|most|instead|"
                    r"lately|these\s+days|nowadays|really|regularly|from|over|up)\b", re.IGNORECASE)
#: "I like to hike", "I love to go swimming", "I like to play chess", "I enjoy going hiking" (a new-user trial: "I like
#: to hike" read nothing); not a wish, which has no "I like": "I'd like to order a pizza", "I would love to visit Japan"
_HOBBY_TO = re.compile(r"\bi\s+(?:really\s+|just\s+|also\s+)?(?:love|like|enjoy)\s+(?:to\s+(?:go\s+|play\s+|do\s+)?"
                       r"|(?:going|playing|doing)\s+)(?:the\s+)?(?P<v>[a-z]{2,20})\b", re.IGNORECASE)
#: "I play chess on weekends", "I play the piano": a game, a sport or an instrument played, said with no object
#: (:data:`_ALONE`; a new-user trial read nothing of the first); not "I play with my kids", "I play a role"
_HOBBY_PLAY = re.compile(r"\bi\s+(?:also\s+|often\s+|usually\s+|regularly\s+|sometimes\s+|still\s+|now\s+)*"
                         r"play\s+(?:the\s+)?(?P<v>[a-z]{2,20})\b", re.IGNORECASE)
#: "yoga is my thing now", "Guitar's mostly my thing", "Dance is my passion", "Dance is pretty much my go-to for stress
#: relief" (LoCoMo dev: the last three read nothing)
_HOBBY_THING = re.compile(r"(?:^|,\s*|\band\s+)(?P<v>[a-z][a-z-]{2,20})(?:\s+is|['’]s)\s+"
                          r"(?:now\s+|mostly\s+|really\s+|totally\s+|definitely\s+|pretty\s+much\s+)?my\s+(?:new\s+)?"
                          r"(?:thing|hobby|passion|go-to)(?![\w-])", re.IGNORECASE)
_HOBBY_MY = re.compile(r"\bmy\s+(?:new\s+|main\s+)?(?:hobby|pastime|passion)\s+is\s+(?:now\s+)?"
                       r"(?P<v>[a-z][a-z-]{2,20}(?:\s+[a-z][a-z-]{2,20})?)\b", re.IGNORECASE)
#: how often, after an activity: "Swimming three mornings a week now" (no subject: hobby-03 of the labelled set)
_OFTEN = (r"(?:once|twice|(?:\w+\s+)?(?:times|mornings|evenings|nights|days))\s+(?:a|per|each)\s+week"
          r"|every\s+(?:day|morning|evening|weekend)")
_HOBBY_HABIT = re.compile(rf"^(?P<v>[A-Za-z]{{3,20}}ing)\s+(?:{_OFTEN})\b"  # not a chore done for others
                          r"(?![^.!?]*\bfor\s+(?:the|my|our|his|her|their)\b)", re.IGNORECASE)
#: the next activity of a list: "hiking[ and swimming]", "cooking[, baking][ and gardening]" (a new-user trial: "I love
#: hiking and swimming" read hiking only)
_AND_MORE = re.compile(r"(?:\s*,\s*(?:and\s+)?|\s+and\s+)(?P<v>[a-z][a-z-]{2,20})\b(?:" + _NOT_RUNNING_A_BUSINESS
                       + ")", re.IGNORECASE)
#: the next verb of an "I like to …" list: "hike[ and swim]", "hike[ and to swim]", "hike[, swim & climb]" (a new-user
#: trial: "I like to hike and to swim" read hiking only)
_AND_TO = re.compile(r"(?:\s*,\s*(?:(?:and|or|&)\s+)?|\s+(?:and|or|&)\s+)(?:to\s+(?:go\s+|play\s+|do\s+)?)?"
                     r"(?P<v>[a-z]{2,20})\b", re.IGNORECASE)
_HOBBY_STOP = re.compile(r"\bi(?:'ve|\s+have)?\s+(?:stopped|quit|gave\s+up|given\s+up)\s+(?P<v>[a-z]{3,20}ing)\b",
                         re.IGNORECASE)
#: other ways to end a hobby: "no more running (for me)", "I'm done with climbing", "I don't run anymore",
#: "I no longer swim" (issue 27 #12: phrasings outside the stop pattern left the old hobby open)
_HOBBY_NO_MORE = re.compile(r"\bno\s+more\s+(?P<v>[a-z]{3,20}ing)\b"
                            r"|\bi(?:'m|\s+am)\s+(?:done|finished|through)\s+with\s+(?P<w>[a-z]{3,20}ing)\b"
                            r"|\bi\s+(?:don't|do\s+not|don’t)\s+(?:go\s+)?(?P<b>[a-z]{2,12})\s+(?:anymore|any\s+more)\b"
                            r"|\bi\s+no\s+longer\s+(?:go\s+)?(?P<c>[a-z]{2,12})\b", re.IGNORECASE)


def _gerund(verb: str) -> str:
    """``run`` -> ``running``, ``hike`` -> ``hiking``, ``ski`` -> ``skiing``, ``running`` unchanged (English)."""
    v = verb.lower()
    if v.endswith("ing"):
        return v
    if v.endswith("e") and not v.endswith("ee"):
        return v[:-1] + "ing"
    if len(v) <= 4 and re.fullmatch(r"[^aeiou]*[aeiou][bdgklmnprt]", v):
        return v + v[-1] + "ing"
    return v + "ing"


def ended_hobby(s: str) -> str | None:
    """The hobby the sentence ``s`` ends ("I stopped running", "I don't run anymore": ``running``), or ``None``."""
    if (m := _HOBBY_STOP.search(s)) and m["v"].lower() in HOBBIES:
        return str(m["v"].lower())
    if (m := _HOBBY_NO_MORE.search(s)) and (g := _gerund(next(x for x in m.groups() if x))) in HOBBIES:
        return g
    return None


def _as_hobby(verb: str) -> str | None:
    """The hobby a verb after "I like to" names: ``hike`` -> ``hiking``, ``chess`` -> ``chess``; ``None`` for none."""
    return next((h for h in (_gerund(verb), verb.lower()) if h in HOBBIES), None)


def _hobbies_to(s: str, m: re.Match[str]) -> list[str]:
    """The hobbies of an "I like to …" match ``m``: its verb and the verbs listed after it ("I like to hike and swim"),
    each said with no object (:data:`_ALONE`)."""
    out, pos = [], m.start("v")
    more: re.Match[str] | None = m
    while more is not None and (h := _as_hobby(more["v"])) is not None and _ALONE.match(s, more.end("v")):
        out.append(h)
        pos = more.end("v")
        more = _AND_TO.match(s, pos)
    return out


def started_hobbies(s: str) -> list[str]:
    """The hobbies the sentence ``s`` starts or holds: the first pattern that names an activity of :data:`HOBBIES`
    ("playing acoustic guitar": ``guitar``), and the activities listed after it ("I love hiking and swimming");
    ``[]`` when none does."""
    for rx in (_HOBBY_START, _HOBBY_LOVE, _HOBBY_TO, _HOBBY_PLAY, _HOBBY_THING, _HOBBY_MY, _HOBBY_HABIT):
        if not (m := rx.search(s)) or (rx in (_HOBBY_LOVE, _HOBBY_TO, _HOBBY_PLAY) and hedged(s[:m.start()])):
            continue
        if rx in (_HOBBY_TO, _HOBBY_PLAY):
            if found := _hobbies_to(s, m):
                return list(dict.fromkeys(found))
            continue
        key = next((k for k in ("v", "w", "g") if m.groupdict().get(k)), None)
        if key is None:
            continue
        words = list(re.finditer(r"[a-z][a-z-]*", m[key].lower()))
        # a noun of an activity names it where a thing is called the speaker's own: "Dance is my passion" (dancing)
        named = _as_hobby if rx in (_HOBBY_THING, _HOBBY_MY) else (lambda w: w if w in HOBBIES else None)
        if (w := next((x for x in words if named(x[0])), None)) is None:
            continue
        out, pos = [named(w[0]) or w[0]], m.start(key) + w.end()
        while (more := _AND_MORE.match(s, pos)) and (v := more["v"].lower()) in HOBBIES:
            out.append(v)
            pos = more.end()
        return list(dict.fromkeys(out))
    return []
