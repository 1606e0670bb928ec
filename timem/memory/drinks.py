"""Drinks the rules read (English and Chinese), for :mod:`timem.memory.rules`: the drink and the morning drink.

"I drink black coffee every morning", "my morning drink is espresso" (a morning drink), "I only drink tea", "my
mornings start with a double espresso",
"I switched from coffee to green tea" (ends coffee), "I don't drink coffee anymore", "I stopped drinking coffee", "I
quit coffee", "I gave up coffee" (end it, and say it was had until then: the writer records it as history when no
item held it), "我不喝咖啡了，只喝茶", "我改喝绿茶了". A plain "I don't drink coffee" ends an item holding it and says
nothing of the past.
"""

from __future__ import annotations

import re
from typing import Any

#: drinks the preference patterns know (longest first, so "green tea" wins over "tea")
DRINKS = sorted(["coffee", "black coffee", "espresso", "latte", "cappuccino", "tea", "green tea", "black tea",
                 "herbal tea", "matcha", "chai", "juice", "orange juice", "water", "hot chocolate", "kombucha",
                 "smoothies", "milk", "oat milk", "decaf", "咖啡", "黑咖啡", "茶", "绿茶", "红茶", "奶茶", "果汁",
                 "牛奶", "豆浆", "水"], key=len, reverse=True)

_DRINK = "(?P<{name}>" + "|".join(re.escape(d) for d in DRINKS if d.isascii()) + ")"
_ZH_DRINK = "(?P<{name}>" + "|".join(re.escape(d) for d in DRINKS if not d.isascii()) + ")"


def named_pattern(pattern: str, **names: str) -> re.Pattern[str]:
    """``pattern`` compiled (ignoring case) with each ``{name}`` replaced by its group: ``named_pattern(r"from {old}",
    old=_DRINK)`` is ``from (?P<old>coffee|…)`` (a template's ``{name}`` is the group's name)."""
    for key, tmpl in names.items():
        pattern = pattern.replace("{" + key + "}", tmpl.replace("{name}", key).replace("{{", "{").replace("}}", "}"))
    return re.compile(pattern, re.IGNORECASE)


_p = named_pattern
_SWITCH = _p(r"\bi(?:'ve|\s+have)?\s+(?:switched|changed|moved|gone)\s+from\s+{old}\s+to\s+{new}\b",
             old=_DRINK, new=_DRINK)
_STOP = _p(r"\bi\s+(?:don't|do\s+not|no\s+longer|never)\s+(?:even\s+)?(?:drink|want|have)\s+{old}"
           r"(?:\s+(?:anymore|any\s+more))?\b", old=_DRINK)
_ONLY_EN = _p(r"\bonly\s+(?:drink\s+)?{v}\b", v=_DRINK)
_ALL_THE_WAY = _p(r"\b{v}\s+all\s+the\s+way\b", v=_DRINK)  #: "I don't drink coffee anymore, tea all the way"
_MORNING = _p(r"\bmy\s+mornings?\s+(?:start|starts|begin|begins)\s+with\s+(?:an?\s+)?"
              r"(?:(?:double|strong|big|hot|cup\s+of)\s+)*{v}\b", v=_DRINK)
#: "my morning drink is espresso", "my drink of choice is green tea", "my go-to morning drink is a latte" (a new-user
#: trial stored nothing, so a later "I switched from espresso to green tea" wrote espresso as an unknown earlier value)
_MY_DRINK = _p(r"\bmy\s+(?:usual\s+|daily\s+|go-to\s+|new\s+)*(?:morning\s+)?drink\s+"
               r"(?:of\s+choice\s+)?(?:is|has\s+become)\s+(?:now\s+|still\s+|always\s+)*(?:an?\s+)?"
               r"(?:(?:double|strong|big|hot|cup\s+of)\s+)*{v}\b", v=_DRINK)
#: "I gave up coffee", "I stopped drinking espresso", "I quit coffee" (a new-user trial: the last two read nothing)
_GAVE_UP = _p(r"\bi(?:'ve|\s+have)?\s+(?:just\s+|finally\s+)?(?:(?:gave|given|give)\s+up|stopped|quit)\s+"
              r"(?:drinking\s+|having\s+)?{old}\b", old=_DRINK)
#: the words of an end that say the drink was had until then: "I don't drink espresso anymore", "I no longer drink …"
_WAS_HAD = re.compile(r"\b(?:anymore|any\s+more|any\s+longer|no\s+longer)\b", re.IGNORECASE)
_DRINK_NOW = _p(r"\bi\s+(?:now\s+|usually\s+|always\s+|only\s+|just\s+|mostly\s+)*"
                r"(?:drink|have|start\s+my\s+day\s+with)\s+(?:(?:two|three|four|five|six|several|\d+)\s+"
                r"(?:cups\s+of\s+)?)?{v}(?:s|es)?\b(?P<when>[^.!?]*\bmorning)?", v=_DRINK)
_ZH_STOP = _p(r"我(?:现在|已经)?(?:不|不再)喝{old}了?", old=_ZH_DRINK)
_ZH_ONLY = _p(r"(?:只喝|改喝|开始喝|现在喝|每天早上喝|早上喝|每天喝){v}", v=_ZH_DRINK)
_ZH_SWITCH = _p(r"我?从{old}(?:换成|改成|改喝|换到)了?{new}", old=_ZH_DRINK, new=_ZH_DRINK)


def _drink_attr(sentence: str) -> str:
    """"morning drink" when ``sentence`` speaks of the morning, else "drink"."""
    return "morning drink" if re.search(r"morning|早上|早晨|每天早", sentence, re.IGNORECASE) else "drink"


def read_drinks(s: str) -> list[tuple[str, str, dict[str, Any]]]:
    """The drink statements of the sentence ``s``: ``(attribute, value, fields)``, ``fields`` the
    :class:`timem.memory.rules.Statement` fields beyond the value (``replaces``, ``ends_only``, ``held``); ``[]`` for
    none."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    attr = _drink_attr(s)
    if m := (_SWITCH.search(s) or _ZH_SWITCH.search(s)):
        out.append((attr, m["new"], {"replaces": m["old"].lower()}))
    else:
        stop = _STOP.search(s) or _GAVE_UP.search(s) or _ZH_STOP.search(s)
        new = (_ZH_ONLY.search(s) or _ONLY_EN.search(s) or _ALL_THE_WAY.search(s) or _MORNING.search(s)
               or _MY_DRINK.search(s) or (_DRINK_NOW.search(s) if not _STOP.search(s) else None))
        if new and (not stop or new["v"].lower() != stop["old"].lower()):
            out.append((attr, new["v"].lower(), {"replaces": stop["old"].lower() if stop else None}))
        elif stop:
            held = stop.re is _GAVE_UP or bool(_WAS_HAD.search(s, stop.start()) if stop.re is _STOP
                                               else re.search(r"不再|已经|了$", stop.group(0)))
            out.append((attr, stop["old"], {"replaces": stop["old"].lower(), "ends_only": True, "held": held}))
    return out
