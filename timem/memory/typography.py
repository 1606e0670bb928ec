"""How the rule reader (:mod:`timem.memory.rules`) sees a chat line's typography: curly quotes, emoji and chat
spelling ("I dont eat meat") read as the plain sentence (:func:`plain_typography`)."""

from __future__ import annotations

import re

#: emoji and their joiners, skin tones and variation selectors ("👩‍⚕️"): no part of a statement
_EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\uFE0E\uFE0F\u200D\u20E3]+")


#: words a chat writes without their apostrophe, or misspelt, as the patterns read them: "I dont eat meat", "i realy
#: love jazz" (a new-user trial read nothing of each). Only words that are no other word ("cant", "wont" are kept)
_CHAT_SPELLING = {"dont": "don't", "doesnt": "doesn't", "didnt": "didn't", "isnt": "isn't", "arent": "aren't",
                  "wasnt": "wasn't", "havent": "haven't", "ive": "I've", "im": "I'm", "realy": "really",
                  "relly": "really", "rly": "really"}
_CHAT_WORD = re.compile(r"(?<![\w'’])(?:" + "|".join(_CHAT_SPELLING) + r")(?![\w'’])", re.IGNORECASE)


def _chat_word(m: re.Match[str]) -> str:
    word = _CHAT_SPELLING[m.group(0).lower()]
    return word[:1].upper() + word[1:] if m.group(0)[:1].isupper() else word


def plain_typography(text: str) -> str:
    """``text`` as the patterns read it: a curly apostrophe between letters is a straight one ("don’t"), other
    quotes go ("I love “jazz”", "‘jazz’", '"jazz"'), and so do emoji ("I love pizza 🍕"): a new-user trial read
    nothing of each. Accents stay ("crème brûlée"). A word of chat spelling is the word (:data:`_CHAT_SPELLING`:
    "I dont eat meat", "i realy love jazz")."""
    text = _CHAT_WORD.sub(_chat_word, text)
    text = re.sub(r"(?<=\w)[’‘](?=\w)", "'", _EMOJI.sub(" ", text))
    text = re.sub(r"[“”\"‘’]|(?<!\w)'|'(?!\w)", "", text)
    return re.sub(r"[ \t]+(?=[.,!?;:])|(?<=\S)[ \t]+$", "", text)
