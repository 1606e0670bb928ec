"""What an empty forget preview says (:attr:`timem.memory.forget.ForgetPreview.hint`): why nothing matched and what
to try.

* :func:`nothing_hint`: no line holds the request's words: the key words no line holds ("no memory holds
  'Hamburg'. Check the spelling …"), else a shorter request with the key word fewest lines hold; a request of verbs
  only names no thing.
* :func:`scope_hint`: lines hold its words, but the request does not reach them (:mod:`timem.memory.forget_scope`):
  in the user's own voice they are someone else's ("I work as a nurse" and "My brother is a nurse"), about someone
  else none is theirs, or a word read as a name is written there as a word. A new-user trial: ``timem forget
  "我是护士"``, whose only lines were a sister's, said "nothing matched" and nothing else.

Each front end adds how to list what is remembered (``timem memories list``, ``GET …/items``, the MCP ``facts``
tool) to :meth:`timem.memory.forget.ForgetPreview.why`, which adds what was searched.
"""

from __future__ import annotations

from timem.memory.forget_scope import about_someone_else, in_own_voice, party, said
from timem.memory.forget_words import RequestWords, fold, holds
from timem.models import MemoryNode


def nothing_hint(text: str, words: RequestWords, segments: list[MemoryNode]) -> str:
    """Why nothing matched ``text`` and what to try: the key words no segment holds, else a shorter request with
    the key word fewest segments hold ("Berlin" for "I lived in Berlin")."""
    counts = {w: sum(holds(n.content, w) for n in segments) for w in words.key}
    missing = [w for w, c in counts.items() if not c]
    present = sorted((w for w, c in counts.items() if c), key=lambda w: counts[w])
    example = f", e.g. {present[0]!r}" if present else ""
    if missing:
        return (f"no memory holds {' or '.join(repr(w) for w in missing)}. Check the spelling, or try a shorter "
                f"request with the key word as it was said{example}.")
    if present:
        return (f"no memory holds all of its key words ({', '.join(words.key)}). Try a shorter request with the key "
                f"word{example}.")
    if words.verbs:  # "loved", "I lived in": only what was done
        name = words.maybe_name
        return (f"it names no thing to look for, only what was done ({', '.join(repr(v) for v in words.verbs)}). "
                "Say what it was: a thing, a name or a place as it was said (e.g. 'jazz', 'Berlin' or 'my cat')."
                + (f" If {name!r} is a name, add another word that was said with it, a thing or a place (e.g. "
                   "'Ahmed flat' for \"Ahmed called me about the flat\")." if name else ""))
    return ("it names no thing to look for (it has no word that says what: a name, a thing or a place). Say what to "
            "forget as it was said (e.g. 'Berlin', 'jazz' or 'my cat').")


def scope_hint(text: str, words: RequestWords, matched: list[MemoryNode], names: list[str]) -> str:
    """Why the request ``text`` (folded) reaches none of the ``matched`` segments that hold its words, and what to
    try; ``names``: its words read as names (:func:`timem.memory.forget_scope.name_words`)."""
    who = party(text)
    key = [w for w in words.key if w not in names]
    things = [w for w in key if w not in who] or key  # "nurse", not "sister", for "my sister is a nurse"
    example = _example(matched, things)
    alone = f" Give the word alone (e.g. {things[0]!r}) to reach every line that holds it." if things else ""
    if names:
        return (f"{names[0]!r} is read as a name, and the lines that hold it write it as a word (in lower case, or "
                f"only at a sentence's start{example}). For the word, write it in lower case "
                f"(e.g. {names[0].lower()!r}).")
    if in_own_voice(text):
        return (f"the lines that hold its words are about someone else, not you{example}. To forget such a line, say "
                f"whose it is (e.g. 'my sister …').{alone}")
    if about_someone_else(text):
        return (f"no line says that of {' '.join(who) or 'them'}: the lines that hold its words are about someone else "
                f"or you{example}.{alone}")
    return f"the lines that hold its words are not the user's{example}. Try a shorter request.{alone}"


def _example(matched: list[MemoryNode], key: list[str]) -> str:
    """``, e.g. "My brother is a nurse at the hospital"``: the first line of ``matched`` holding a key word."""
    for n in matched:
        for line in said(n.content):
            if any(holds(fold(line), w) for w in key) or not key:
                return f', e.g. "{line if len(line) <= 80 else line[:79] + "…"}"'
    return ""
