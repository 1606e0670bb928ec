"""Opinions the rules must not read as held, for :mod:`timem.memory.rules` and :mod:`timem.memory.hobbies`: one
denied or hedged (:func:`hedged`), and one of the past (:func:`ended_opinion`), which ends the opinion held.
"""

from __future__ import annotations

import re

#: an opinion said only to be denied or hedged: "I wouldn't say I love techno", "not that I like jazz", "I don't think I
#: like it", "I never said I love jazz", "it's not like I enjoy hiking", "I'm not sure I like jazz" (a new-user trial:
#: the first gave "likes techno", ending "dislikes techno"). A plain denial ("I don't love jazz") names no opinion
#: (the like patterns start at "I <verb>"); "I can't tell you how much I love jazz" still likes it
_HEDGE = re.compile(r"(?:\bnot|\bnever|n['’]t)\s+(?:[a-z]+\s+){0,2}?(?:say|said|saying|think|thought|know|knew|mean|"
                    r"means|meant|sure|claim\w*|pretend\w*|like|that|as\s+if|as\s+though|believe|guess|suppose)"
                    r"\s+(?:that\s+|if\s+)?$", re.IGNORECASE)
_DAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun|week)days?"
#: a time adverbial that may end an opinion and is no part of the thing: "I love coffee in the morning" likes "coffee"
#: (a new-user trial stored "coffee in the morning"), "I like jazz at night", "I love pancakes on weekends", "I enjoy
#: jazz every day"
TIME_ADVERBIAL = (r"(?:(?:in|during)\s+the\s+(?:morning|afternoon|evening|night|summer|winter|spring|autumn|fall|"
                  r"week|weekend)s?|in\s+(?:summer|winter|spring|autumn|the\s+mornings?)|"
                  r"at\s+(?:night|weekends?|the\s+weekends?|lunch|breakfast|dinner|bedtime)|"
                  rf"on\s+(?:weekends?|the\s+weekends?|{_DAY}|holidays?|(?:cold|hot|rainy|sunny|lazy)\s+days)|"
                  rf"(?:every|each)\s+(?:single\s+)?(?:day|morning|afternoon|evening|night|week|weekend|summer|winter|{_DAY})|"
                  r"daily|nightly|after\s+(?:work|dinner|lunch)|before\s+(?:bed|work)|first\s+thing\s+in\s+the\s+morning)"
                  r"(?![\w'-])")
#: chat slang and interjections that may close an opinion and are no part of the thing: "I hate Radiohead now lol"
#: dislikes "Radiohead" (a new-user trial stored "Radiohead now lol"), "I love jazz haha", "I love jazz tbh!!"
INTERJECTIONS = r"(?:lo+l+|lmao+|lmfao|rofl|(?:ha){2,}h?|(?:he){2,}|tbh|imo|imho|ngl|xd+|omg)(?![\w'-])"
#: an opinion of the past: "I used to love jazz (as a kid)" ends "likes jazz", "I used to hate jazz" ends "dislikes
#: jazz", "I used to be into techno" ends "likes techno"; not "I used to love jazz and I still do", "I used to like it".
#: A time adverbial ends the thing, as after "I love": "I used to love coffee at night" ends "likes coffee" (a trial)
_USED_TO = re.compile(r"\bi\s+used\s+to\s+(?:really\s+|absolutely\s+)?(?:(?P<like>love|like|enjoy|adore|"
                      r"be\s+(?:really\s+|so\s+)?into)|hate|dislike|can't\s+stand)\s+(?:the\s+)?"
                      r"(?!(?:it|that|this|you|him|her|them|the|a|an|my|your|to|how|when|what|being)\b)"
                      r"(?P<v>[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,2}?)(?=\s*(?:[,.!?;]|$|\s+(?:so\s+much|a\s+lot|too|"
                      r"as|when|back|before|but|and|in|until|growing|years|once)\b|\s+" + TIME_ADVERBIAL
                      + r"|\s+" + INTERJECTIONS + "))",
                      re.IGNORECASE)
_STILL = re.compile(r"\b(?:still|again)\b", re.IGNORECASE)
#: the time words that may close an opinion and are no part of the thing: "I hate techno these days" dislikes "techno"
#: (a new-user trial: "I don't like techno anymore" disliked "techno anymore", "… any more" "techno any")
TIME_WORDS = r"(?:now|nowadays|these\s+days|lately|anymore|any\s+more|any\s+longer)"
_GONE = r"(?:anymore|any\s+more|any\s+longer)"
#: the thing of an opinion that is over: one to three words, not a pronoun (as in :data:`_USED_TO`)
_OVER_THING = (r"(?:the\s+)?(?!(?:it|that|this|you|him|her|them|the|a|an|my|your|to|how|when|what|being)\b)"
               r"(?P<v>[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,2}?)")
_OVER_END = (r"(?=\s*(?:[,.!?;]|$|\s+(?:" + TIME_WORDS[3:-1] + r"|but|and|because|since|so)\b|\s+" + TIME_ADVERBIAL
             + r"|\s+" + INTERJECTIONS + "))")
#: an opinion said to be over without the past tense (a new-user trial read nothing for each): "I no longer like
#: techno", "I'm not into techno anymore", "I don't love jazz anymore", "I'm no longer a fan of jazz" end "likes X";
#: "I don't hate jazz anymore", "I no longer hate jazz" end "dislikes X". They state no new opinion: no longer liking
#: is not disliking (and "I can't stand it anymore" is no end at all, so "can't stand" is not read here)
_LIKE_WORD = r"(?P<like>love|like|enjoy|adore|into|(?:a\s+)?(?:(?:big|huge|great|real)\s+)?fan\s+of)"
_NOT_ANYMORE = re.compile(r"\bi(?:\s+(?:don't|don’t|do\s+not)|(?:'m|’m|\s+am)\s+not)\s+(?:really\s+|much\s+)?"
                          rf"(?:{_LIKE_WORD}|hate|dislike)\s+{_OVER_THING}(?:\s+{TIME_ADVERBIAL})?\s+{_GONE}\b",
                          re.IGNORECASE)
_NO_LONGER = re.compile(r"\bi(?:'m|’m|\s+am)?\s+no\s+longer\s+(?:really\s+)?"
                        rf"(?:{_LIKE_WORD}|hate|dislike)\s+{_OVER_THING}{_OVER_END}", re.IGNORECASE)

#: an opinion said to have stopped: "I stopped liking jazz", "I've quit loving techno", "I stopped being a fan of jazz"
#: end "likes X"; "I stopped hating jazz" ends "dislikes X" (a third trial ended nothing for the first)
_STOPPED = re.compile(r"\bi(?:'ve|’ve|\s+have)?\s+(?:just\s+|kind\s+of\s+|sort\s+of\s+|slowly\s+|finally\s+)?"
                      r"(?:stopped|quit)\s+(?:(?P<like>liking|loving|enjoying|adoring|being\s+into|being\s+(?:a\s+)?"
                      r"(?:(?:big|huge|great|real)\s+)?fan\s+of)|hating|disliking)\s+" + _OVER_THING + _OVER_END,
                      re.IGNORECASE)

#: a Chinese opinion said to be over: 我不喜欢咖啡了 / 我不再喜欢咖啡 / 我再也不爱咖啡了 end "likes 咖啡",
#: 我不讨厌咖啡了 ends "dislikes 咖啡"; like the English "I don't like coffee anymore" they store no new
#: opinion (a new-user trial stored a dislike of 咖啡). A plain 我不喜欢咖啡 (no 了) is a dislike
_ZH_WHO = r"我(?:现在|已经|早就|也)?"
_ZH_OVER_VAL = r"(?P<v>[\u4e00-\u9fffA-Za-z0-9]{1,12}?)"
_ZH_OVER_END = r"(?=[，,。.！!？?；;、\s]|$)"
_ZH_NOT_NOW = re.compile(_ZH_WHO + r"不(?:(?P<like>喜欢|爱)|讨厌)" + _ZH_OVER_VAL + "了" + _ZH_OVER_END)
_ZH_NO_LONGER = re.compile(_ZH_WHO + r"(?:不再|再也不)(?:(?P<like>喜欢|爱)|讨厌)" + _ZH_OVER_VAL + "了?" + _ZH_OVER_END)


def hedged(before: str) -> bool:
    """Whether the text ``before`` an opinion ("I wouldn't say " before "I love techno") denies or hedges it."""
    return _HEDGE.search(before) is not None


def ended_opinion(sentence: str) -> tuple[str, str] | None:
    """``("likes", "jazz")`` for "I used to love jazz", "I no longer like jazz", "I don't love jazz anymore", "I stopped
    liking jazz" (``"dislikes"`` for "I used to hate jazz", "I don't hate jazz anymore"): the opinion the sentence says
    is over, as written ("Rolling Stones"), or ``None`` (also when it still holds: "… and I still do")."""
    for rx in (_USED_TO, _NOT_ANYMORE, _NO_LONGER, _STOPPED, _ZH_NOT_NOW, _ZH_NO_LONGER):
        m = rx.search(sentence)
        if m is None or hedged(sentence[:m.start()]) or (rx is _USED_TO and _STILL.search(sentence, m.end())):
            continue
        return ("likes" if m["like"] else "dislikes"), re.sub(r"\s+" + TIME_WORDS + "$", "", m["v"], flags=re.I)
    return None
