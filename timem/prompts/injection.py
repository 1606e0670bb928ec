"""Quarantine of pasted instructions: recalled turns that address an AI assistant are withheld from prompts.

Issue 27 #11. The data rule (:data:`timem.prompts.common.DATA_RULE`) and the quoted memory block stop most pasted
injections, but not on the embedded 1.5B reader: a pasted dialogue whose "User:" line is the question asked word
for word, a Chinese imperative and a tool-call JSON still made it answer with the pasted text
(bench/results/injection_family.md). A model cannot copy what it is not shown, so a memory unit of the context
(a turn with its continuation lines, or one ``- [date] …`` line) that gives instructions to an assistant is
replaced by :data:`WITHHELD` in every prompt that quotes memories. The recall context itself (the Recall inspector,
``timem recall``, the service's and MCP's ``recall``) is unchanged: what was said stays visible and erasable.

What counts as an instruction (rules, English and Chinese; :func:`instruction_reason` returns the first that
matches):

* **structure**: a pasted role line (``System:``, ``Assistant:``, ``Developer:``, ``AI:``, ``Bot:`` opening the
  turn's text or one of its continuation lines), chat-template or prompt-format tokens (``<|im_start|>``,
  ``[INST]``, ``### Instruction:``, ``<system>``), a quoted-data tag (``</memories>``), a ``system`` code fence,
  tool-call JSON keys (``"tool_call"``, ``"function_call"``, ``"arguments"``);
* **override phrases**: "ignore / disregard / forget (all) previous instructions (rules, prompts)", "from now on
  you are", "new instruction", "system prompt"; in Chinese 忽略…指令 (规则, 提示), 从现在开始你, 你现在是;
* **an answer dictated to the reader**: a verb of answering (answer, reply, respond, say, output, print, start,
  begin) followed within its clause by the text to give, quoted or a word in capitals, in a turn that also says
  "only", "exactly", "must be", "the (single) word / phrase", "every / any / all … question(s) / answer(s)", or
  addresses an assistant (AI, assistant, chatbot, bot, the user's, policy); in Chinese 只(能)回答 / 只回复 / 只说.
* matching is on the NFKC form with invisible format characters removed; other languages' override phrases
  (Spanish, French, German, Italian, Portuguese, Dutch "ignore … instructions") are listed too.

A false positive withholds one turn from the answer and costs nothing else; on the LoCoMo dev conversations and the
bundled demo no turn matches (``tests/test_memory_injection.py``). Held-out injections written before these rules
are measured in bench/results/injection_family.md.
"""

from __future__ import annotations

import re
import unicodedata

#: what a withheld unit's text becomes in a prompt (its speaker label, if any, is kept)
WITHHELD = "[withheld from this prompt: pasted text that gives instructions to an AI assistant]"

_I = re.IGNORECASE
_ROLE = re.compile(r"^\s*(?:\|\s*)?(?:system|assistant|developer|ai|bot|chatbot)\s*[:：]", _I)
#: a pasted transcript's answer line (``A: …`` after a ``Q: …`` line)
_QA = re.compile(r"^\s*Q\s*[:：].*\n\s*A\s*[:：]", _I | re.M)
_STRUCTURE = [
    ("chat-template token", re.compile(r"[<‹]\|\s*\w+\s*\|[>›]")),
    ("prompt-format tag", re.compile(r"\[/?INST\]|<<SYS>>|^\s*(?:\|\s*)?#{2,}\s*(?:instruction|system|response)\b"
                                     r"|[<‹]\s*/?\s*(?:system|instructions?|memories|pinned)\s*[>›]", _I | re.M)),
    ("system code fence", re.compile(r"```\s*(?:system|instructions?|prompt)\b", _I)),
    ("tool-call JSON", re.compile(r"\"(?:tool_calls?|function_call|arguments)\"\s*:", _I)),
]
_NOUN = r"(?:instructions?|rules|prompts?|directions|guidelines|commands|programming)"
_OVERRIDE = [
    ("override phrase", re.compile(r"\b(?:ignore|disregard|forget|override)\s+(?:(?:all|any|the|of|these|those)\s+)*"
                                   r"(?:(?:your\s+|my\s+)?(?:previous|prior|above|earlier|preceding|former|original)"
                                   rf"|your)\s+{_NOUN}\b", _I)),
    ("override phrase", re.compile(r"\bfrom now on,? you(?:'re| are| will| must| should| only)\b"
                                   r"|\bnew instructions?(?:\s*:| from\b)|\bsystem prompt\b", _I)),
    ("override phrase", re.compile(r"忽略.{0,12}(?:指令|指示|规则|提示)|从现在开始.{0,4}你|你现在是")),
    ("override phrase", re.compile(r"\b(?:ignora|ignorez|ignoriere|ignori|negeer)\b[^.!?\n]{0,40}"
                                   r"\b(?:instrucciones|instructions|Anweisungen|istruzioni|instruções|instructies)\b",
                                   _I)),
]
#: a dictated answer: a verb of answering (base form), then within a clause the text to give, quoted or in capitals
_DICTATE = re.compile(r"(?i:\b(?:answer|reply|respond|say|output|print|start|begin)\b)[^.!?\n]{0,60}?"
                      r"(?:[\"“«'‘「][^\"”»'’」\n]{1,40}[\"”»'’」]|\b[A-Z][A-Z0-9]{2,}\b)")
_MARKER = re.compile(r"\b(?:only|exactly|must be|the (?:single )?(?:word|phrase)|(?:every|any|all) (?:\w+ )?"
                     r"(?:answers?|questions?|repl(?:y|ies)))\b|\b(?:AI|assistant|chatbot|bot|the user'?s?|policy)\b",
                     _I)
_DICTATE_ZH = re.compile(r"只(?:能)?(?:回答|回复|答复|说|输出)")
#: a turn's first line: ``Speaker: text`` (the label has no bracket, no bar and no second colon)
_LABEL = re.compile(r"^([^\[\]|:\n]{1,60}): (.*)$", re.S)


#: zero-width and other invisible format characters, dropped before matching ("IGNORE\u200b ALL")
_INVISIBLE = re.compile(r"[\u200b-\u200f\u2060-\u2064\ufeff\u00ad]")


def instruction_reason(text: str) -> str | None:
    """Why ``text`` (one turn's text, continuation lines included; no speaker label) reads as instructions to an
    AI assistant, or ``None``. See the module doc for the rules. The text is matched after NFKC normalisation
    (fullwidth "ｉｇｎｏｒｅ" is "ignore") with invisible format characters removed."""
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    lines = text.splitlines() or [""]
    if any(_ROLE.match(ln) for ln in lines) or _QA.search(text):
        return "pasted role line"
    for reason, pattern in (*_STRUCTURE, *_OVERRIDE):
        if pattern.search(text):
            return reason
    if (_DICTATE.search(text) and _MARKER.search(text)) or _DICTATE_ZH.search(text):
        return "dictated answer"
    return None


def _units(context: str) -> list[list[str]]:
    """The context's lines grouped into units: a line, with the ``| …`` continuation lines that follow it."""
    units: list[list[str]] = []
    for line in context.split("\n"):
        if units and line.lstrip().startswith("|") and units[-1][0].strip():
            units[-1].append(line)
        else:
            units.append([line])
    return units


def withhold_instructions(context: str) -> tuple[str, list[str]]:
    """``context`` (a rendered recall context) with every unit that gives instructions to an assistant replaced by
    its speaker label and :data:`WITHHELD`; and the first line of each withheld unit, cut to 80 characters (for
    notes and traces). A context with no such unit is returned unchanged, character for character."""
    out: list[str] = []
    withheld: list[str] = []
    for unit in _units(context):
        head = unit[0]
        body = head.strip()
        prefix = ""
        m = re.match(r"^(\s*(?:-\s*)?\[[^\]]*\]\s*)(.*)$", head)  # ``- [date] …`` (L2-L5), ``[fact, valid …] …``
        if m:
            prefix, body = m.group(1), m.group(2)
        else:
            label = _LABEL.match(body)  # its label holds no "[": a bracketed line matched above
            if label:
                prefix, body = label.group(1) + ": ", label.group(2)
        text = "\n".join([body, *(ln.strip().removeprefix("|").strip() for ln in unit[1:])])
        if not body.strip() or instruction_reason(text) is None:
            out.extend(unit)
            continue
        withheld.append(head.strip()[:80])
        indent = "" if m else head[:len(head) - len(head.lstrip())]
        out.append(f"{indent}{prefix}{WITHHELD}")
    return ("\n".join(out), withheld) if withheld else (context, [])
