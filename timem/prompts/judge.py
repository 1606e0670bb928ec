"""LLM-judge prompts for LoCoMo and LongMemEval, and the strict verdict parser.

The judge sees the question, the gold answer and the hypothesis and replies with exactly one JSON
object ``{"label": "CORRECT"}`` or ``{"label": "WRONG"}`` (an optional ``"reason"`` string is
allowed). :func:`parse_verdict` is strict: anything else is *unparseable*, which the harness
scores as wrong and reports separately. Calls run at temperature 0 (the LLM client always does).

LoCoMo follows the lenient-matching judge used by memory-system papers (same fact, any wording;
dates may be written differently); category 5 (adversarial, only with ``--include-adversarial``)
is correct when the answer declines ("not mentioned"). LongMemEval follows the official per-type rules (Wu et al.,
ICLR 2025, ``evaluate_qa.py``), rewritten in our own words: a default rule; off-by-one tolerance for
temporal reasoning; the latest value for knowledge updates; a rubric for preference questions;
and "says it does not know" for abstention questions (ids ending ``_abs``).
"""

from __future__ import annotations

import json
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from timem.llm.protocol import Message

PROMPT_VERSION = "judge-v2"
Label = Literal["CORRECT", "WRONG"]

_FORMAT = ('Reply with exactly one JSON object and nothing else: {"label": "CORRECT"} or {"label": "WRONG"}. '
           'You may add a "reason" field after the label: one short sentence.')


class JudgeVerdict(BaseModel):
    """The judge's reply. Unknown keys other than ``reason`` make the verdict unparseable."""

    model_config = ConfigDict(extra="forbid")
    label: Label
    reason: str | None = None


_LOCOMO = """You grade answers to questions about a long conversation between two people.
You get the question, the gold answer and a generated answer. Label the generated answer CORRECT if it states the \
same fact as the gold answer, even if it is worded differently, longer, or adds harmless detail. Dates and times \
count as the same when they name the same day, month, year or period in another format (for example "7 May 2023" and \
"May 7th, 2023", or "the week before 9 June 2023" and "early June 2023"). Label it WRONG if it gives a different \
fact, misses the point of the gold answer, contradicts it, or says it does not know.
""" + _FORMAT

_LOCOMO_ADVERSARIAL = """You grade answers to trick questions about a long conversation between two people.
The question assumes something the conversation never says (often it swaps who did what), so the right response is \
to say that this is not mentioned or not known. You get the question, a tempting wrong answer and a generated \
answer. Label the generated answer CORRECT if it says the information is not mentioned, not available or unknown, or \
points out the false assumption. Label it WRONG if it answers the question as asked, in particular with the tempting \
wrong answer.
""" + _FORMAT

_LME_RULES: dict[str, str] = {
    "default": "Label the response CORRECT if it contains the gold answer or something equivalent to it. "
               "If it gives only part of what the gold answer requires, or a different answer, label it WRONG.",
    "temporal-reasoning": "Label the response CORRECT if it contains the gold answer or something equivalent to it. "
                          "Do not penalise an off-by-one error in a count of days, weeks or months (for example 18 "
                          "days where the gold answer says 19). If it gives only part of the required information, "
                          "or a different answer, label it WRONG.",
    "knowledge-update": "The user's information changed over time and the gold answer is the latest value. Label the "
                        "response CORRECT if it gives this latest value, even if it also mentions older values "
                        "along with it. Label it WRONG if it presents an outdated value as the answer or gives a "
                        "different one.",
    "single-session-preference": "The gold answer is a rubric describing what a good personalised response looks "
                                 "like. Label the response CORRECT if it satisfies the rubric, that is, it recalls "
                                 "and uses the user's stated preferences or personal details correctly. It does not "
                                 "need to cover every point of the rubric. Label it WRONG otherwise.",
    "abstention": "This question cannot be answered from the conversation history; the gold answer explains why. "
                  "Label the response CORRECT if it says it does not know or that the information is not available "
                  "(it may point out the missing or mismatched information). Label it WRONG if it answers as if "
                  "the information were known.",
}

_LME_SYSTEM = """You grade a chat assistant's response to a question about the user's past conversations with it.
You get the question, the gold answer and the response. {rule}
""" + _FORMAT


def lme_rule_key(question_type: str, abstention: bool) -> str:
    """Which LongMemEval rule applies: ``"abstention"`` first, then the type's own rule, else ``"default"``."""
    if abstention:
        return "abstention"
    return question_type if question_type in _LME_RULES else "default"


def build_locomo_messages(question: str, gold: str, hypothesis: str) -> list[Message]:
    """Messages for judging one LoCoMo answer."""
    user = f"Question: {question}\nGold answer: {gold}\nGenerated answer: {hypothesis}\nVerdict (JSON):"
    return [Message(role="system", content=_LOCOMO), Message(role="user", content=user)]


def build_locomo_adversarial_messages(question: str, trap: str, hypothesis: str) -> list[Message]:
    """Messages for judging a LoCoMo category-5 (adversarial) answer; ``trap`` is its ``adversarial_answer``."""
    user = f"Question: {question}\nTempting wrong answer: {trap}\nGenerated answer: {hypothesis}\nVerdict (JSON):"
    return [Message(role="system", content=_LOCOMO_ADVERSARIAL), Message(role="user", content=user)]


def build_longmemeval_messages(question: str, gold: str, hypothesis: str, question_type: str,
                               abstention: bool = False) -> list[Message]:
    """Messages for judging one LongMemEval response under its type's rule (see :func:`lme_rule_key`)."""
    key = lme_rule_key(question_type, abstention)
    gold_name = {"abstention": "Why it cannot be answered",
                 "single-session-preference": "Rubric"}.get(key, "Gold answer")
    user = f"Question: {question}\n{gold_name}: {gold}\nResponse: {hypothesis}\nVerdict (JSON):"
    system = _LME_SYSTEM.replace("{rule}", _LME_RULES[key])
    return [Message(role="system", content=system), Message(role="user", content=user)]


_FENCE = re.compile(r"^```(?:json|JSON)?\s*\n?(.*?)\n?```$", re.DOTALL)


def parse_verdict(text: str) -> JudgeVerdict | None:
    """The verdict in ``text``, or ``None`` when it is unparseable.

    Accepted: the whole reply (after trimming, optionally inside one ```json fence) is one JSON
    object matching :class:`JudgeVerdict`; the label is compared case-insensitively
    (``"correct"`` is read as ``"CORRECT"``). Prose around the object, two objects, another label
    or another key make it unparseable.
    """
    s = text.strip()
    m = _FENCE.match(s)
    if m:
        s = m.group(1).strip()
    try:
        obj = json.loads(s)
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("label"), str):
        return None
    obj = {**obj, "label": obj["label"].strip().upper()}
    try:
        return JudgeVerdict.model_validate(obj)
    except ValueError:
        return None
