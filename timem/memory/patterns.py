"""The regular-expression pieces the rule readers share (:mod:`timem.memory.rules`, :mod:`timem.memory.work`): a
capitalised name, a job in lower case, what may follow a value, a Chinese value and its end.

Each piece is the text of a pattern, not a compiled one; a name piece (:func:`cap`, :data:`ZH_VAL`) names its group.
"""

from __future__ import annotations

import re

from timem.memory.opinions import TIME_WORDS

#: a capitalised name of one or more words; a further word is never the pronoun "I" (the subject of a following
#: clause: "After I quit my job at Google I travelled" names Google, not "Google I"; a new-user trial)
CAP = r"(?P<{name}>[A-Z][\w'’&.-]*(?:\s+(?:(?!I(?:['’]|(?![\w'’&-])))[A-Z][\w'’&.-]*|of|de|da|do|la|le|&))*)"
#: a job in lower case, which may start with an acronym in capitals: "UX researcher", "QA engineer" (a new-user trial:
#: "I joined Google as a UX researcher" read nothing)
JOB = r"(?P<job>(?:[A-Z]{2,4}\s+)?[a-z][a-z -]{1,40}?)"
#: what may follow a value in lower case (a regex lookahead): punctuation, the end, or a word that starts a further
#: part of the sentence ("a nurse now", "a nurse at St Mary's", "a nurse since May")
END = (r"(?=\s*(?:[,.!?;:]|$|\s+(?:now|these days|nowadays|since|for|and|but|with|in|on|at|last|this|so|because|after|"
       r"recently|yesterday|today|a|two|three)\b))")
#: the end of a capitalised name: no further letter of it
END_CAP = r"(?![\w'’&-])"
#: a Chinese value of up to 12 characters (a template of :func:`timem.memory.drinks.named_pattern`)
ZH_VAL = r"(?P<{name}>[\u4e00-\u9fffA-Za-z0-9]{{1,12}}?)"
#: the end of a Chinese value: a particle, then punctuation, a space or the end
ZH_END = r"(?=[了啦呢吧啊]?(?:[，,。.！!？?；;、\s]|$))"
#: the sentence goes on to say that it holds no more: "I don't live in Madrid anymore", "I'm not at Google any more"
GONE = r"(?=[^.!?]*\b(?i:anymore|any\s+more|any\s+longer)\b)"


def cap(name: str) -> str:
    """:data:`CAP` with its group named ``name``: ``cap("v")`` is ``(?P<v>[A-Z]…)``."""
    return CAP.replace("{name}", name)


def clean(v: str) -> str:
    """A value as stored: without quotes, closing punctuation and a time word at its end ("Porto now." -> "Porto")."""
    v = v.strip(" \t'\"“”‘’").rstrip(".,!?;:。，！？")
    return re.sub(rf"\s+{TIME_WORDS}$", "", v, flags=re.IGNORECASE).strip()
