"""Grounding of memory items: an item is written only when its source turn states it.

Every statement, from the rules (:mod:`timem.memory.rules`) or from the LLM (:mod:`timem.prompts.memory`),
passes :func:`check_statement` before the writer (:mod:`timem.memory.writer`) applies it. The checks, in order:

1. **Vocabulary.** The attribute is one of :data:`ATTRIBUTES` (or ``favourite <thing>``), after
   :data:`SYNONYMS` ("occupation" is ``job``, "city" is ``home city``); anything else is refused.
2. **No placeholders.** A value such as "not specified", "unknown", "none", "N/A", "未提及" is refused.
3. **The value is in the turn.** Its normalised form (:func:`timem.item_values.normalise`) occurs in
   the normalised turn as whole words ("water" is not in "open-water"); or it is a normal form the
   attribute knows (``diet: vegetarian`` for "I don't eat meat", ``素食`` for "吃素").
4. **The clause speaks of the speaker.** The turn is the speaker's own, so a clause with no other subject is
   theirs ("No coffee for two months now, only tea"); a clause whose subject is someone else is refused
   ("my sister lives in Porto", "Tom is vegetarian", "they love hiking", "我姐姐住在广州"). A clause also ends at
   "and" or 而 before a new subject, so "My sister is a nurse and I am a teacher" holds the speaker's own clause.
5. **The clause speaks of the attribute** (:data:`CUES`): a home city needs "live", "moved", "based",
   "住", "搬" … and no trip, visit or event ("back from Shanghai", "the wedding in Porto", "出差"); a job
   needs "work", "job", "as a", "I'm (now) a", "became a", "我是", "当" …; a drink needs a drink word; a diet
   needs a known diet.

The LoCoMo-style labelled set ``bench/data/memory_items_labelled.jsonl`` measures it (``bench/item_extraction.py``,
results in ``bench/results/item-extraction.md``).
"""

from __future__ import annotations

import re

from timem.item_values import normalise

#: the documented attribute vocabulary: attribute -> kind. ``favourite <thing>`` (a preference) is also allowed.
ATTRIBUTES: dict[str, str] = {
    "home city": "fact", "hometown": "fact", "employer": "fact", "job": "fact", "name": "fact",
    "birthday": "fact", "drink": "preference", "morning drink": "preference", "diet": "preference",
    "hobby": "preference", "likes": "preference", "dislikes": "preference",
}
#: a value of one ends the same value of the other ("I love jazz now" ends "dislikes jazz")
OPPOSITES: dict[str, str] = {"likes": "dislikes", "dislikes": "likes"}
#: other names the LLM gives an attribute
SYNONYMS: dict[str, str] = {
    "city": "home city", "location": "home city", "residence": "home city", "home": "home city",
    "current city": "home city", "lives in": "home city", "home town": "hometown", "occupation": "job",
    "profession": "job", "job title": "job", "role": "job", "work": "job", "position": "job",
    "company": "employer", "workplace": "employer", "works at": "employer", "beverage": "drink",
    "favorite drink": "drink", "favourite drink": "drink", "hobbies": "hobby", "activity": "hobby",
    "sport": "hobby", "interest": "hobby", "pastime": "hobby", "dietary preference": "diet",
    "diet preference": "diet", "住址": "home city", "城市": "home city", "工作": "job", "职业": "job",
    "公司": "employer", "饮品": "drink", "爱好": "hobby", "饮食": "diet",
}
PLACEHOLDERS = frozenset({
    "not specified", "unspecified", "unknown", "none", "n/a", "na", "null", "nil", "nothing", "not mentioned",
    "not stated", "not given", "not provided", "no", "yes", "true", "false", "?", "-", "tbd", "various", "other",
    "未知", "无", "没有", "未提及", "不详", "未说明",
})
#: normal forms an attribute may write that are not words of the turn: value -> what in the turn supports it
NORMAL_FORMS: dict[tuple[str, str], re.Pattern[str]] = {
    ("diet", "vegetarian"): re.compile(r"\b(?:don't|do not|no longer|never)\s+eat\s+meat\b|\beat\w*\s+meat\s+again\b",
                                       re.IGNORECASE),
    ("diet", "vegan"): re.compile(r"\beat\w*\s+meat\s+again\b", re.IGNORECASE),
    ("diet", "素食"): re.compile(r"吃素|素食"),
}
_DIETS = ("vegetarian", "vegan", "pescatarian", "keto", "gluten-free", "素食", "纯素")
_TRIP = re.compile(
    r"\b(?:trip|travel\w*|visit\w*|holiday|vacation|conference|wedding|flying|flew|fly|back\s+from|staying|stayed|"
    r"hotel|weekend\s+in|week\s+in|business\s+trip|tour\w*|sightseeing|honeymoon)\b|出差|旅游|旅行|回来|度假|参加|婚礼|玩",
    re.IGNORECASE)
CUES: dict[str, re.Pattern[str]] = {
    "home city": re.compile(r"\b(?:live[sd]?|living|moved|move|moving|relocat\w*|based|settled|reside\w*|home)\b|"
                            r"住|搬|定居|生活在", re.IGNORECASE),
    "hometown": re.compile(r"\bhome\s*town\b|\bgrew\s+up\b|\bborn\b|\bfrom\b|老家|家乡|出生", re.IGNORECASE),
    "job": re.compile(r"\b(?:work\w*|job|as\s+an?|i(?:'m|’m|\s+am)\s+(?:(?:now|currently|still|also|officially|"
                      r"finally)\s+)*an?|bec[oa]me\s+an?|position|career|profession|hired|employed|title|promot\w*)\b|"
                      r"工作|职业|当|担任|做|我(?:现在|目前|如今|已经|最近|终于)?(?:是|成了|成为)", re.IGNORECASE),
    # a business of one's own: "I started my own online clothing store", "I run a small bakery" (work.py)
    "employer": re.compile(r"\b(?:work\w*|job|joined|hired|employ\w*|position|company|at|own|opened|launched|founded|"
                           r"run|running|started|business)\b|工作|上班|公司|在", re.IGNORECASE),
    "drink": re.compile(r"\b(?:drink\w*|drank|sip\w*|cups?|glass(?:es)?|coffees?|teas?|espresso|caffeine|"
                        r"mornings?)\b|喝|咖啡|茶", re.IGNORECASE),
    "diet": re.compile("|".join(_DIETS) + r"|\beat\b|吃", re.IGNORECASE),
    "hobby": re.compile(r"\b(?:took\s+up|take\s+up|taking\s+up|started|starting|hobby|hobbies|love|enjoy\w*|"
                        r"i\s+(?:really\s+|just\s+)?like|"
                        r"practi[sc]\w*|play\w*|learn\w*|my\s+thing|my\s+go-to|into|passion|joined|stopped|gave\s+up|quit|"
                        r"no\s+more|done\s+with|finished\s+with|through\s+with|anymore|any\s+more|no\s+longer|"
                        r"(?:once|twice|times|mornings|evenings|nights|days)\s+(?:a|per|each)\s+week|"
                        r"every\s+(?:day|morning|evening|weekend))\b|"
                        r"学|爱好|喜欢|开始|迷上|爱上", re.IGNORECASE),
    "likes": re.compile(r"\b(?:love|like|enjoy|adore|fans?|into|favou?rites?|passion|passionate|soft\s+spot)\b"
                        r"|喜欢|爱|粉丝|迷", re.IGNORECASE),
    "dislikes": re.compile(r"\b(?:dislike|hate|can't\s+stand|cannot\s+stand|don't\s+like|do\s+not\s+like|"
                           r"(?:not|never\s+been)\s+(?:really\s+)?(?:(?:that\s+)?much\s+of\s+)?an?\s+(?:[\w'’-]+\s+){0,3}?"
                           r"fans?|no\s+fan)\b|讨厌|不喜欢|受不了"
                           r"|^\W*not\b", re.IGNORECASE),  # "I like jazz but not techno": the clause "not techno"
    "name": re.compile(r"\bname\b|\bcall(?:ed)?\s+me\b|\bi'm\b|\bi\s+am\b|叫|名字", re.IGNORECASE),
    "birthday": re.compile(r"\bbirthday\b|\bborn\b|生日|出生", re.IGNORECASE),
}
#: what an end of a value may say instead of the attribute's cue (:data:`CUES`): "I quit Google", "I left Google",
#: "I resigned from Google", "I got fired from Google" end the employer Google (new-user trials)
END_CUES: dict[str, re.Pattern[str]] = {
    "employer": re.compile(r"\b(?:quit|left|resign\w*|fired|sacked|laid\s+off|let\s+go|no\s+longer|anymore|"
                           r"any\s+more)\b", re.IGNORECASE),
    # "I stopped liking jazz", "I stopped hating jazz" (a trial)
    "likes": re.compile(r"\b(?:liking|loving|enjoying|adoring)\b", re.IGNORECASE),
    "dislikes": re.compile(r"\b(?:hating|disliking)\b", re.IGNORECASE)}
_FAVOURITE = re.compile(r"\bfavou?rite\b|最喜欢|最爱", re.IGNORECASE)
_CLOSE = (r"sister|brother|mum|mom|mother|dad|father|parents?|wife|husband|partner|boyfriend|girlfriend|friends?|"
          r"son|daughter|kids?|children|boss|colleagues?|coworkers?|neighbou?rs?|cousin|aunt|uncle|grand\w*|family|"
          r"cat|dog|fianc[ée]e?|roommate|flatmate")
#: the people (and pets) close to a speaker, as in "my sister", for :mod:`timem.memory.forget_scope` too
CLOSE = _CLOSE
_VERB = (r"(?:is|was|are|were|lives|lived|works|worked|drinks|drank|loves|likes|moved|has|had|switched|became|"
         r"started|eats|prefers|enjoys|plays|took|joined|got)")
#: what makes a capitalised subject the speaker's own thing, not a person: "Dance is my passion", "Dance is pretty much
#: my go-to for stress relief" (LoCoMo dev: refused as someone else's clause, like "Tom is …")
_OWN_THING = r"(?!(?:\s+[a-z]+){0,2}?\s+(?i:my)\s+(?:(?i:new|main)\s+)?(?i:thing|hobby|passion|go-to)(?![\w-]))"
#: question words, which start a clause as a name does ("How is Biscuit taking the move?" is no "Tom is ...": a
#: new-user trial forgot a dog but spared that question of the assistant's as someone else's)
_QUESTION_WORDS = "How|What|Where|When|Why|Who|Whom|Whose|Which"
#: a clause whose subject is someone else: "my sister ...", "his / her / their ...", "he / she / they / it ...",
#: "Tom is ...", "my friend Leo switched ..."
_THIRD_PERSON = re.compile(
    rf"^\W*(?:(?i:also|and|but|so|now|then|honestly|well)\W+)?(?:(?i:(?:my|our)\s+(?:{_CLOSE})\b|(?:his|her|their)\b|"
    rf"(?:he|she|they|it)\b)|(?!(?:I|We|My|Our|Me|Us|Just|Finally|Recently|Only|Already|{_QUESTION_WORDS})\b)[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?\s+{_VERB}\b{_OWN_THING})|(?i:\b(?:my|our)\s+(?:{_CLOSE}))"
    rf"(?:\s+[A-Z][a-z]+)?\s+{_VERB}\b")
_ZH_CLOSE = re.compile(r"我(?:的)?(?:妈妈|爸爸|母亲|父亲|姐姐|妹妹|哥哥|弟弟|朋友|老公|老婆|丈夫|妻子|男朋友|女朋友|"
                       r"同事|儿子|女儿|家人|父母|奶奶|爷爷|外婆|外公|老板|猫|狗)")
#: clause breaks: punctuation, a conjunction, and "and" or 而 before a new subject ("My sister is a nurse and I am a
#: teacher", "I moved to Porto and my sister lives in Faro", 我姐姐是护士而我是老师): the speaker's clause is their own
#: a full stop that ends no clause: after an abbreviation of a name, "St. Louis", "St. Mary hospital", "Dr. Silva" (a
#: new-user trial refused "home city: St. Louis", not in a clause; the sentences of the rules do not end there either,
#: :data:`timem.prompts.common.SENTENCES`)
_NAME_DOT = r"(?-i:(?<=\bSt|\bDr|\bMr|\bMs|\bMt|\bJr)|(?<=\bMrs)|(?<=\bProf))\.(?=\s*(?-i:[A-Z]))"
_CLAUSES = re.compile(
    rf"(?!{_NAME_DOT})[,;.!?，。；！？\n]+|\s+(?:but|and then|so|while|because)\s+|而(?=我)|但是?(?=我)"
    rf"|\s+and\s+(?=(?:i|we|he|she|they)\b|(?:my|our|his|her|their)\s+(?:{_CLOSE})\b|(?-i:[A-Z][a-z]+)\s+{_VERB}\b)",
    re.IGNORECASE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def canonical_attribute(attribute: str) -> str | None:
    """The vocabulary name of ``attribute`` (lower case, :data:`SYNONYMS` applied; ``favorite X`` is
    ``favourite X``), or ``None`` when it is not in the vocabulary."""
    a = " ".join(attribute.strip().lower().replace("_", " ").split())
    a = SYNONYMS.get(a, a)
    if a.startswith("favorite "):
        a = "favourite " + a[len("favorite "):]
    if a in ATTRIBUTES or (a.startswith("favourite ") and len(a) > len("favourite ")):
        return a
    return None


def _occurs(value: str, text: str) -> bool:
    v, t = normalise(value), normalise(text)
    if not v:
        return False
    if _CJK.search(v):
        return v in t
    return re.search(rf"(?<![\w-]){re.escape(v)}(?:s|es)?(?![\w-])", t) is not None  # "four coffees": coffee


def _clause_of(value: str, text: str) -> str | None:
    """The first clause of ``text`` that holds ``value`` (whole words), or ``None``."""
    for clause in _CLAUSES.split(text):
        if clause.strip() and _occurs(value, clause):
            return clause
    return None


#: "Hiking is my hobby": the capitalised word before the verb is the value, not a person
_MY_THING = re.compile(r"\bis\s+(?:now\s+)?my\s+(?:new\s+|favou?rite\s+)?(?:thing|hobby|passion|pastime)\b",
                       re.IGNORECASE)


#: a verb in a clause: it says something of its own, so it is no further thing of a list ("the coffee is bad")
_HAS_VERB = re.compile(rf"\b(?:{_VERB}|be|been|do|does|did|have|loves?|likes?|hates?|enjoys?|adores?|dislikes?)\b",
                       re.IGNORECASE)


def _list_head(value: str, text: str) -> str | None:
    """The clause that a list holding ``value`` goes on from: "I love jazz" for "techno" in "I love jazz, techno and
    soul" (only commas between, and no verb in the clauses after it); ``None`` when ``value`` ends no such list."""
    parts, seps, pos = [], [], 0
    for m in _CLAUSES.finditer(text):
        parts.append(text[pos:m.start()])
        seps.append(m.group(0))
        pos = m.end()
    parts.append(text[pos:])
    k = next((k for k, part in enumerate(parts) if part.strip() and _occurs(value, part)), None)
    if k is None:
        return None
    j = k
    while j > 0 and seps[j - 1].strip() == "," and not _HAS_VERB.search(parts[j]):
        j -= 1
    return parts[j] if j < k else None


def clauses(text: str) -> list[str]:
    """``text`` cut into clauses (see the module doc, check 4): "My sister is a nurse and I am a teacher" ->
    ``["My sister is a nurse", "I am a teacher"]`` (pieces may be empty)."""
    return _CLAUSES.split(text)


def about_speaker(clause: str) -> bool:
    """Whether ``clause`` (one of :func:`clauses`) is the speaker's own, not about someone else ("my sister lives in
    Porto", "Tom is vegetarian", "我姐姐住在广州" are not)."""
    if _MY_THING.search(clause):
        return True
    if _CJK.search(clause):
        return not _ZH_CLOSE.search(clause)
    return not _THIRD_PERSON.search(clause)


def _verb_forms(gerund: str) -> list[str]:
    """The verb of an English gerund: ``running`` -> ``run``, ``hiking`` -> ``hike``, ``swimming`` -> ``swim``
    (its normal form as a hobby value; ``[]`` for a value that is no gerund)."""
    g = gerund.lower()
    if not g.endswith("ing") or len(g) < 5:
        return []
    stem = g[:-3]
    forms = [stem, stem + "e"]
    if len(stem) > 2 and stem[-1] == stem[-2]:
        forms.insert(0, stem[:-1])
    return forms


def check_statement(attribute: str | None, value: str, text: str, *, ends: str | None = None) -> str | None:
    """Why the statement "``attribute``: ``value``", read from the turn ``text``, is not grounded, or ``None``
    when it is (see the module doc). ``attribute`` is a vocabulary name (:func:`canonical_attribute`) or
    ``None`` for a bare correction ("actually, it's Braga"), which is checked for the value only.
    ``ends`` is the value the statement ends ("switched from coffee": ``"coffee"``); it must occur too.

    Returns: a short reason such as ``"placeholder value"`` or ``"no first-person clause holds 'Porto'"``.
    """
    v = value.strip()
    if normalise(v) in PLACEHOLDERS or not normalise(v):
        return f"placeholder value {value!r}"
    normal = NORMAL_FORMS.get((attribute or "", normalise(v)))
    if normal is not None and normal.search(text):
        return None
    if ends is not None and not any(_occurs(f, text) for f in [ends, *(_verb_forms(ends) if attribute == "hobby"
                                                                         else [])]):
        return f"the ended value {ends!r} does not occur in the turn"
    clause = _clause_of(v, text)
    if clause is None and attribute == "hobby":  # "I don't run anymore" ends the hobby "running"
        clause = next((c for f in _verb_forms(v) if (c := _clause_of(f, text)) is not None), None)
        v = next((f for f in _verb_forms(v) if _occurs(f, text)), v)
    if clause is None:
        return f"the value {value!r} does not occur in the turn"
    if attribute is None:
        return None
    sentence = next((s for s in re.split(rf"(?<=[.!?。！？])(?<!{_NAME_DOT})\s*", text) if _occurs(v, s)), text)
    # a further thing of a list ("I love jazz, techno and soul"): the clause the list goes on from speaks of it too
    head = _list_head(v, text) if attribute in ("likes", "dislikes", "hobby") else None
    if not about_speaker(clause) or (head is not None and not about_speaker(head)):
        return f"the clause holding {value!r} is about someone else"
    if attribute == "diet" and normalise(v) not in _DIETS:
        return f"{value!r} is not a diet"
    if attribute.startswith("favourite "):
        return None if _FAVOURITE.search(sentence) else f"the turn does not call {value!r} a favourite"
    cue = CUES.get(attribute)
    over = END_CUES.get(attribute) if ends is not None and normalise(ends) == normalise(v) else None
    if cue is not None and not cue.search(clause if attribute != "hobby" else sentence) and not (
            head is not None and cue.search(head)) and not (over is not None and over.search(clause)):
        return f"the clause holding {value!r} does not speak of a {attribute}"
    if attribute == "home city" and _TRIP.search(clause):
        return f"{value!r} is a trip, visit or event, not a home city"
    return None
