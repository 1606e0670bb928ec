"""Rule-based extraction of first-person statements (English and Chinese), no LLM.

Each sentence of a person's turn is matched against a small set of patterns; a match is a
:class:`Statement` about the speaker: ``(kind, attribute, value)`` such as ``("fact", "home city",
"Porto")``. The patterns cover the triggers of the memory layer (TiMem's semantic memories written on
explicit first-person statements and corrections):

* home city -- "I live in Lisbon (now)", "I moved to Porto", "We settled in Valencia", "我住在上海", "我搬到了北京",
  "I live in 上海" (a Chinese name in an English sentence);
* hometown -- "I'm originally from Berlin", "I come from Berlin", "I grew up in Berlin", "my hometown is Cork"; a plain
  "I'm from X" only when X is a place (:mod:`timem.memory.places`: "I'm from the UK", not "I'm from HR");
* employer / job (:mod:`timem.memory.work`) -- "I work at Acme as a designer", "I joined Google (last month)", "I'm
  a nurse", "我在医院当护士"; "I quit Google", "I lost my job as a banker" end one;
* drinks -- "I drink black coffee every morning", "I switched from coffee to green tea",
  "I don't drink coffee anymore", "I stopped drinking coffee", "I quit coffee" (end the open item, or record it as
  history when none held it), "我不喝咖啡了，只喝茶", "我改喝绿茶了" (:mod:`timem.memory.drinks`);
* diet -- "I'm vegetarian now", "I went vegan", "我吃素了";
* hobbies (several at once; only an explicit end closes one; :mod:`timem.memory.hobbies`) -- "I took up pottery",
  "I started playing chess", "I love / like hiking", "I like to hike" (not "I'd like to …"), "I love hiking and
  swimming" (two hobbies), "yoga is my thing now", "I stopped running" / "I gave up climbing" / "no more running" /
  "I don't swim anymore" (ends it), "我开始学游泳";
* likes and dislikes (several at once; "I love jazz now" ends "dislikes jazz" and the other way round;
  :mod:`timem.memory.likes`) --
  "I hate country music", "I really like jazz now", "I love jazz, techno and soul" (three likes; "rock and roll" is
  one), "I love the blues" ("blues"), "I'm really into jazz", "I'm a big
  fan of jazz", "I am a huge Beatles fan", "I'm not a fan of jazz" (a dislike); a diet ends with "I'm not vegetarian
  anymore", "I eat meat again";
* favourites and a few "my X is Y" facts -- "my favourite band is Muse", "我最喜欢的运动是游泳" (a favourite is also a
  like: "likes Muse");
* corrections -- "actually, ...", "sorry, I meant ...", "scratch that, ...", "不对，是…", "其实…": the rest of the
  sentence is matched again and flagged ``correction`` (the writer applies it only to a recent item, or to one it
  names: :data:`timem.memory.writer.CORRECTION_WITHIN`); a bare "actually, it's Braga" names only a value (the
  writer applies it to the subject's latest item).

What the patterns do not see is not guessed: no statement. Values of place and company names must be
capitalised in English, but for a hometown or a home city that the gazetteer knows ("I'm from berlin", "I live in
lisbon": "Berlin", "Lisbon"); Chinese values run to the next punctuation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from timem.memory.drinks import named_pattern as _p
from timem.memory.drinks import read_drinks
from timem.memory.hobbies import HOBBIES, ended_hobby, started_hobbies
from timem.memory.likes import favourite_likes, opinion_clauses, read_opinions
from timem.memory.occupations import occupation
from timem.memory.patterns import END, END_CAP, GONE, ZH_END, ZH_VAL, cap, clean
from timem.memory.places import is_place, lower_place
from timem.memory.typography import plain_typography
from timem.memory.work import read_work
from timem.prompts.common import QUESTION, SENTENCES

DIETS = ("vegetarian", "vegan", "pescatarian", "keto", "gluten-free")

#: the correction markers that also open plain news ("actually", "其实"), and what marks a change in the world
#: rather than a correction of what was said: a change verb, with no contrast with a wrong value
_MERE_ACTUALLY = re.compile(r"^\s*(?:oh,?\s+)?(?:actually|其实)", re.IGNORECASE)
_CHANGE = re.compile(r"\b(?:moved|switched|started|changed|became|quit|left|joined)\b|搬|改|换", re.IGNORECASE)
_CONTRAST = re.compile(r"\bnot\b|\binstead\b|\brather than\b|不是|而不是", re.IGNORECASE)
_CORRECTION_EN = re.compile(r"^\s*(?:oh,?\s+)?(?:actually|sorry,?\s+i\s+meant|correction:?|no,?\s+wait|scratch\s+that)"
                            r"[,:]?\s*",
                            re.IGNORECASE)
#: a remark tagged on a statement, which makes no question of it: "I started my own online clothing store not so long
#: ago - pretty cool, huh?" (LoCoMo dev: read as a question, so nothing); not "I live in Lisbon, right?", which asks
_REMARK_TAG = re.compile(r"\s*[-–—,]\s*(?:pretty|so|how|really|super)\s+[a-z]+(?:\s*,?\s*(?:huh|eh))?"
                         r"\s*[?？!]+[\s\W]*$", re.IGNORECASE)
#: a sentence that asks by its first word ("Do I live in Lisbon - pretty cool, huh?"): its tag makes no statement of it
_ASKS = re.compile(r"^\W*(?:do|does|did|is|are|am|was|were|have|has|can|could|would|will|should|what|which|who|where|"
                   r"when|why|how)\b", re.IGNORECASE)
_CORRECTION_ZH = re.compile(r"^\s*(?:不对|不是|其实|更正一下|说错了|纠正一下)[，,：:]?\s*")


@dataclass(frozen=True)
class Statement:
    """One first-person statement of the speaker.

    ``attribute`` is ``None`` only for a bare correction ("actually, it's Braga"). ``replaces`` names the
    value the statement ends ("switched from coffee to tea": ``"coffee"``); ``ends_only`` means it only
    ends it ("I don't drink coffee anymore"); ``held`` that it says the ended value held until then ("anymore", "no
    longer", "stopped", "quit", "gave up"; not "I don't drink coffee"), so the writer records it as history when no
    item held it. ``background``: it comes from a since-clause ("Since I lost my job at Door Dash, …", "ever since I
    moved to Porto"), which refers to an earlier change: the writer starts nothing on it and dates no change at the
    time it was said (``held`` is never set). ``text`` is the sentence it came from.
    """

    kind: str
    attribute: str | None
    value: str
    text: str
    correction: bool = False
    replaces: str | None = None
    ends_only: bool = False
    held: bool = False
    background: bool = False


_I = r"\b(?:[Ii]|[Ww]e)"
#: "I live in", "I'm (now) living in", "I've been living in Porto since 2021" (a new-user trial read nothing of it)
_HOME_AT = [_I + r"(?i:'m|’m|\s+am|\s+are|'re|’re|(?:'ve|’ve|\s+have)\s+been)?\s+(?i:now\s+|currently\s+|still\s+)?"
                 r"(?i:live|living|based)\s+(?i:in)\s+",
            _I + r"(?i:'ve|\s+have)?\s+(?i:just\s+|finally\s+|recently\s+)?"
                 r"(?:(?i:moved|relocated)\s+(?i:back\s+)?(?i:to)|(?i:settled)\s+(?i:down\s+)?(?i:in))\s+",
            # chat style drops the subject at the start of a sentence: "Just moved to Madrid with my partner."
            r"^\s*(?:(?i:big\s+news|guess\s+what|so|and|well)[:!,]?\s+)?(?i:just\s+|finally\s+|recently\s+)"
            r"(?i:moved|relocated)\s+(?i:back\s+)?(?i:to)\s+"]
_HOME = [re.compile(at + cap("v") + END_CAP) for at in _HOME_AT]
#: a place name in Chinese characters inside an English sentence: "I live in 上海", "I moved to 北京 last week" (a trial
#: read nothing: a name must be capitalised, and the Chinese patterns need 我); it runs to the next non-Han character
_CJK_NAME = r"(?P<v>[\u4e00-\u9fff]{1,12})"
_HOME_CJK = [re.compile(at + _CJK_NAME) for at in _HOME_AT]
#: the same before a name in lower case, "I live in lisbon", "I moved to porto last week": read as a lower-case
#: hometown is (:func:`timem.memory.places.lower_place`: a big city, a country, not a common word such as "cork" or
#: "nice", not "I live in hope"; a new-user trial read nothing)
_HOME_LOWER = [re.compile(at + r"(?=[a-z])") for at in _HOME_AT]
#: where the speaker is from (the hometown), said outright: "I'm originally from Berlin", "I come from the Netherlands",
#: "I grew up in Berlin", "I was born and raised in Cork" (a new-user trial read nothing); not "I'm back from Berlin"
_ORIGIN_AT = (r"\b[Ii](?:(?i:'m|’m|\s+am)\s+(?i:originally)\s+(?i:from)"
              r"|\s+(?i:originally\s+)?(?i:come)\s+(?i:from)|\s+(?i:grew\s+up|was\s+raised|was\s+born\s+and\s+raised)\s+(?i:in))\s+")
_ORIGIN = re.compile(_ORIGIN_AT + r"(?:(?i:the)\s+)?" + cap("v") + END_CAP)
#: the same before a name in Chinese characters: "I grew up in 成都" (as :data:`_HOME_CJK`)
_ORIGIN_CJK = re.compile(_ORIGIN_AT + _CJK_NAME)
#: a plain "I'm from X" only for a place (:func:`timem.memory.places.is_place`): not "I'm from Microsoft / HR / Mars"
_FROM = re.compile(r"\b[Ii](?i:'m|’m|\s+am)\s+(?i:from)\s+(?:(?i:the)\s+)?" + cap("v") + END_CAP)
#: the same before a name in lower case, "i'm from berlin", "I grew up in lisbon": a place of the gazetteer only,
#: written in its case (:func:`timem.memory.places.lower_place`: not "I'm from work / the office / here"; a trial)
_FROM_LOWER = re.compile(r"\b[Ii](?:(?i:'m|’m|\s+am)\s+(?i:originally\s+)?(?i:from)|\s+(?i:originally\s+)?(?i:come)\s+"
                         r"(?i:from)|\s+(?i:grew\s+up|was\s+raised|was\s+born\s+and\s+raised)\s+(?i:in))\s+(?=[a-z])")
#: a home city said to be over, with no new one: "I don't live in Madrid anymore", "I'm not living in Madrid any more",
#: "I no longer live in Madrid", "I moved out of / away from Madrid" (a new-user trial left Madrid the home city)
_HOME_OVER = [re.compile(r"\b[Ii](?:\s+(?i:don't|do\s+not)\s+(?i:live)|(?i:'m|\s+am)\s+(?i:not)\s+(?i:living))"
                         r"\s+(?i:in)\s+" + cap("v") + END_CAP + GONE),
              re.compile(r"\b[Ii](?i:'m|\s+am)?\s+(?i:no\s+longer)\s+(?i:live|living)\s+(?i:in)\s+" + cap("v")
                         + END_CAP),
              re.compile(r"\b[Ii](?i:'ve|\s+have)?\s+(?i:just\s+|finally\s+|recently\s+)?(?i:moved)\s+"
                         r"(?i:out\s+of|away\s+from)\s+" + cap("v") + END_CAP)]
_DIET = re.compile(r"\bi(?:'m|\s+am|\s+became|\s+went|'ve\s+become|\s+have\s+become)\s+(?:now\s+|a\s+|fully\s+)*"
                   rf"(?P<v>{'|'.join(DIETS)})\b", re.IGNORECASE)
_NO_MEAT = re.compile(r"\bi\s+(?:don't|do\s+not|no\s+longer)\s+eat\s+meat\b", re.IGNORECASE)
_FAV = re.compile(r"\bmy\s+(?:new\s+)?favou?rite\s+(?P<a>[a-z][a-z ]{1,30}?)\s+(?:is|are)\s+(?:now\s+)?"
                  r"(?P<v>[^,.!?;]{1,60})", re.IGNORECASE)
#: "my name is Leo": the value ends at punctuation or before a further clause of the speaker's ("My name is Leo and
#: I'm a software engineer at Google" names Leo; a new-user trial stored no name for it)
_MY = re.compile(r"\bmy\s+(?P<a>name|hometown|home\s+town|birthday|job|job\s+title|employer)\s+is\s+(?:now\s+)?"
                 r"(?P<v>[^,.!?;]{1,60}?)(?=\s*(?:[,.!?;]|$)|\s+(?:and|but|so|because)\s+(?:i|we|my)\b)",
                 re.IGNORECASE)
_BARE = re.compile(r"^(?:it(?:'s|\s+is|\s+was)\s+|i\s+meant\s+)?(?P<v>[A-Z][\w'’&.-]*(?:\s+[A-Z][\w'’&.-]*)*)\s*"
                   r"(?:,?\s*not\s+[^.!?]+)?[.!]?$")

_ZH_HOME = [_p(r"我(?:们)?(?:现在|目前|如今)?(?:住在|定居在|生活在){v}" + ZH_END, v=ZH_VAL),
            _p(r"我(?:们)?(?:已经|刚|刚刚|最近)?搬(?:到|去|来)了?{v}" + ZH_END, v=ZH_VAL)]
_DIET_END = re.compile(rf"\bi(?:'m|\s+am)\s+(?:no\s+longer|not)\s+(?:a\s+)?(?P<v>{'|'.join(DIETS)})(?:\s+any\s*more)?\b"
                       rf"|\bi\s+(?:stopped|quit)\s+being\s+(?:a\s+)?(?P<w>{'|'.join(DIETS)})\b"
                       r"|\bi(?:'m|\s+am)?\s+(?:eat|eating|started\s+eating)\s+meat\s+again\b", re.IGNORECASE)
_ZH_DIET = re.compile(r"我(?:现在|已经)?(?:开始)?(?:吃素|是素食者|是素食主义者)")
_ZH_FAV = _p(r"我最喜欢的{a}是{v}" + ZH_END, a=ZH_VAL, v=ZH_VAL)
# 开始当护士 is a job (:data:`_ZH_BE_JOB`), not a hobby
# 开始喜欢瑜伽 is a like (:data:`_ZH_LIKE`), not "hobby: 喜欢瑜伽"
_ZH_HOBBY = _p(r"我(?:最近|现在|已经)?(?:开始学|开始练|开始|在学|爱上了|迷上了)(?!当|做|喜欢|爱){v}" + ZH_END,
               v=ZH_VAL)
_ZH_BARE = _p(r"^(?:是|应该是){v}" + ZH_END, v=ZH_VAL)


def _my_value(attribute: str, value: str, rest: str) -> str | None:
    """The value of "my X is …" for ``attribute``: for a job an occupation ("my job is nurse"; not "my job is boring /
    in Lisbon"), for a hometown a place under the rules of "I'm from X" (not "my hometown is nice / really small /
    cork"; :mod:`timem.memory.places`); ``rest`` is the sentence from the value on. ``None``: none."""
    if attribute == "birthday":  # "my birthday is on 3 March": the date, "3 March" (a trial stored "on 3 March")
        return re.sub(r"^(?:on|the)\s+", "", value.strip(), flags=re.IGNORECASE)
    if attribute == "job":
        return value if occupation(re.sub(r"^(?:an?|the)\s+", "", clean(value), flags=re.IGNORECASE)) else None
    if attribute != "hometown":
        return value
    if m := re.match(r"(?:(?i:the)\s+)?" + cap("v") + END_CAP, rest):
        return m["v"] if is_place(clean(m["v"])) else None
    return lower_place(rest)


_END_RX = re.compile(END, re.IGNORECASE)


def _place(m: re.Match[str], s: str) -> str:
    """The place name ``m["v"]`` of a home city or hometown in the sentence ``s``, up to a possessive that more words
    follow: "Lisbon's old town", "Lisbon's Alfama district" name Lisbon (a new-user trial stored "Lisbon's"); a name
    that ends in one stays, "St. John's", "I live in St. John's now"."""
    words = m["v"].split(" ")
    for k, w in enumerate(words):
        if re.search(r"['’]s$", w) and (k + 1 < len(words) or not _END_RX.match(s, m.end("v"))):
            return " ".join([*words[:k], w[:-2]])
    return m["v"]


def _sentence(s: str, correction: bool, background: bool = False) -> list[Statement]:
    out: list[Statement] = []

    def add(kind: str, attr: str | None, value: str, **kw: object) -> None:
        value = clean(value)
        if background:  # a since-clause says no end happened then ("Since I lost my job at X, …")
            kw = {**kw, "held": False, "background": True}
        if value:
            out.append(Statement(kind, attr, value, s.strip(), correction, **kw))  # type: ignore[arg-type]

    # the first pattern's name, unless it is only lived in (not moved to) and the gazetteer knows another one as a place
    # and not it: "I moved to Lisbon last week, we live in Alfama now" is Lisbon, not its quarter (a new-user trial
    # stored Alfama)
    if homes := [_place(m, s) for rx in _HOME + _HOME_CJK + _ZH_HOME if (m := rx.search(s))]:
        quarter = not is_place(clean(homes[0])) and not _moved_to(homes[0], s)
        add("fact", "home city", next((h for h in homes if is_place(clean(h))), homes[0]) if quarter else homes[0])
    else:
        for rx in _HOME_LOWER:
            if (m := rx.search(s)) and (place := lower_place(s[m.end():], moved=True)):
                add("fact", "home city", place)
                break
    for rx in _HOME_OVER:  # "I don't live in Madrid anymore": ends the home city, no new one
        if m := rx.search(s):
            add("fact", "home city", _place(m, s), replaces=clean(_place(m, s)), ends_only=True, held=True)
            break
    for attribute, value, kw in read_work(s):  # "I work at Acme as a designer", "I quit Google" (timem.memory.work)
        add("fact", attribute, value, **kw)
    for attribute, value, kw in read_drinks(s):  # "I switched from coffee to green tea" (timem.memory.drinks)
        add("preference", attribute, value, **kw)
    if m := _DIET_END.search(s):  # "I'm not vegetarian anymore", "I eat meat again": ends the diet
        v = (m["v"] or m["w"] or "vegetarian").lower()  # "vegetarian" also ends "vegan" (values.KINDS_OF)
        add("preference", "diet", v, replaces=v, ends_only=True)
    elif m := _DIET.search(s):
        add("preference", "diet", m["v"].lower())
    elif _NO_MEAT.search(s):
        add("preference", "diet", "vegetarian")
    elif _ZH_DIET.search(s):
        add("preference", "diet", "素食")
    if ended := ended_hobby(s):
        add("preference", "hobby", ended, replaces=ended, ends_only=True)
    hobbies = started_hobbies(s)
    if not hobbies and (m := _ZH_HOBBY.search(s)):  # 我开始学游泳; 我开始学 yoga: the word the list knows
        hobbies = [m["v"]] if not m["v"].isascii() else [w for w in m["v"].lower().split() if w in HOBBIES][:1]
    for hobby in hobbies:
        add("preference", "hobby", hobby)
    for attribute, value, ends in read_opinions(s):  # "I love jazz and hiking" also holds the hobby hiking
        if ends or not any(x.attribute == attribute and x.value == value for x in out):
            add("preference", attribute, value, **({"replaces": value, "ends_only": True} if ends else {}))
    if m := (_FAV.search(s) or _ZH_FAV.search(s)):  # a favourite is also a like ("my favourite band is Muse")
        add("preference", f"favourite {clean(m['a']).lower()}", m["v"])
        for thing in (favourite_likes(m["v"]) if m.re is _FAV else [clean(m["v"])]):
            if not any(x.attribute == "likes" and x.value == thing for x in out):
                add("preference", "likes", thing)
    if m := _MY.search(s):
        a = {"job title": "job", "home town": "hometown"}.get(re.sub(r"\s+", " ", m["a"].lower()), m["a"].lower())
        if (v := _my_value(a, m["v"], s[m.start("v"):])) is not None:
            add("fact", a, v)
    if not any(x.attribute == "hometown" for x in out) and (  # "my hometown is …" wins
            (m := _ORIGIN.search(s) or _ORIGIN_CJK.search(s))
            or ((m := _FROM.search(s)) and is_place(clean(_place(m, s))))):
        add("fact", "hometown", _place(m, s))
    elif not any(x.attribute == "hometown" for x in out) and (m := _FROM_LOWER.search(s)) and (
            place := lower_place(s[m.end():])):
        add("fact", "hometown", place)
    if correction and not out and (m := (_BARE.search(s.strip()) or _ZH_BARE.search(s.strip()))):
        add("fact", None, m["v"])
    return out


#: "I also moved to Porto", "we also love jazz", "I've also started working as a nurse": read as without "also" (a
#: new-user trial on LoCoMo read nothing of "I also lost my job at Door Dash this month")
_ALSO = re.compile(r"\b((?:[Ii]|[Ww]e)(?:'ve|’ve|\s+have)?)\s+also\s+(?=[a-z])")
#: the speaker's "I" left out before "work", "live" or "moved": "I live in Leeds and work at Asda", "I moved to Porto
#: and now work as a nurse" (a new-user trial read the city and no job), "I am from Brazil but live in Porto" (a
#: helper's trial read no home city); not after a relative clause of someone else's ("my parents, who live in Leeds
#: and work at Asda"), another subject ("I live with my sister and work …" is not read) or a wish ("I want to retire
#: and live in Spain", "I'd love to travel and live in Paris")
_LEFT_OUT_I = re.compile(
    r"(?P<head>\b[Ii](?:\s|['’](?:m|ve)\s)(?:(?!\b(?i:who|that|which|whose|where|he|she|they|my|his|her|their|want|"
    r"wants|wanted|would|could|should|might|may|will|can|hope|hoping|plan|planning|wish|dream|gonna|wanna|going|"
    r"like\s+to|love\s+to|need|have\s+to|try|trying|if|when|unless)\b)[^,;.!?])*?)\s+(?P<conj>and|but)\s+"
    r"(?=(?:(?i:now|currently|also)\s+)?(?:(?i:work)\s+(?i:at|for|as)|(?i:live)\s+(?i:in)|(?i:moved)\s+(?i:to))\b)")
#: a since-clause: "Since I lost my job at Door Dash, things have been tough", "I've been happier ever since I moved to
#: Porto"; it runs to a comma, a semicolon, a further clause of the speaker's ("Since I moved here I love jazz") or
#: the sentence's end
_SINCE = re.compile(r"\b(?:ever\s+)?since\s+(?=(?:i|we)\b)", re.IGNORECASE)
_SINCE_END = re.compile(r"\s*[,;]\s*|\s+(?:and|but|so)\s+(?=(?:i|we)\b)|\s+(?=I\b)|$", re.IGNORECASE)


def since_parts(sent: str) -> list[tuple[str, bool]]:
    """``sent`` cut around its since-clauses, as ``(part, background)``: a since-clause refers to an earlier change,
    which it does not date (:attr:`Statement.background`). "Since I lost my job at Door Dash, things have been tough"
    -> ``[("Since I lost my job at Door Dash", True), ("things have been tough", False)]``; a sentence without one
    is ``[(sent, False)]``."""
    out: list[tuple[str, bool]] = []
    pos = 0
    while m := _SINCE.search(sent, pos):
        end = _SINCE_END.search(sent, m.end())
        assert end is not None  # "$" always matches
        if sent[pos:m.start()].strip():
            out.append((sent[pos:m.start()], False))
        out.append((sent[m.start():end.start()], True))
        pos = end.end()
    if sent[pos:].strip():
        out.append((sent[pos:], False))
    return out


def extract_statements(text: str) -> list[Statement]:
    """Statements in one turn's ``text`` (first person, English or Chinese), in sentence order.

    A sentence starting with a correction marker ("actually, ...", "不对，...") yields statements flagged
    ``correction``; a correction that names only a value yields one with ``attribute=None``. A question
    ("Do I live in Lisbon?", 我现在住在哪个城市？) yields nothing.
    Returns ``[]`` when nothing matches (most turns).
    """
    out: list[Statement] = []
    for sent in filter(None, (x.strip() for x in SENTENCES.split(plain_typography(text)))):
        if QUESTION.search(sent):  # "Do I live in Lisbon?", 我现在住在哪个城市？ ask; they state nothing
            if not (tag := _REMARK_TAG.search(sent)) or _ASKS.match(sent):
                continue
            sent = sent[:tag.start()]  # "I started my own store - pretty cool, huh?" states the store
        correction = False
        correction = False
        for rx in (_CORRECTION_EN, _CORRECTION_ZH):
            if m := rx.match(sent):
                rest = sent[m.end():]
                # "Actually I moved to Braga last week" is news of a change, not a correction of what was said;
                # "Actually, I moved to Braga, not Porto" (or "sorry, I meant …", "不对，…") corrects
                news = _MERE_ACTUALLY.match(m.group(0)) and _CHANGE.search(rest) and not _CONTRAST.search(rest)
                correction, sent = not news, rest
        for part, background in since_parts(_LEFT_OUT_I.sub(r"\g<head> \g<conj> I ", _ALSO.sub(r"\1 ", sent))):
            for clause in opinion_clauses(part):
                out += _sentence(clause, correction, background)
    return _city_over_quarter(out)


_MOVED = r"\b(?i:(?:moved|relocated)\s+(?:back\s+)?to|settled\s+(?:down\s+)?in)\s+"


def _moved_to(value: str, sentence: str) -> bool:
    """Whether ``sentence`` says the speaker moved to (or settled in) ``value``, not only that they live there."""
    return re.search(_MOVED + re.escape(value), sentence) is not None


def _city_over_quarter(out: list[Statement]) -> list[Statement]:
    """``out`` without a home city only lived in (not moved to, no correction) that the gazetteer does not know as a
    place, when the same turn names one it knows: "I moved to Lisbon last week. We live in Alfama now." is Lisbon (a
    new-user trial ended Lisbon with its quarter); "I live in Leeds. I moved to Otley." is still Otley."""
    homes = [x for x in out if x.attribute == "home city" and not x.ends_only]
    if len(homes) < 2 or not any(is_place(x.value) for x in homes):
        return out
    return [x for x in out if x not in homes or x.correction or is_place(x.value) or _moved_to(x.value, x.text)]

