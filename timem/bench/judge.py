"""Run the LLM judge on one hypothesis (prompts and the strict parser: :mod:`timem.prompts.judge`).

Accuracy = CORRECT / judged questions. A reply that :func:`~timem.prompts.judge.parse_verdict`
cannot read gets the label ``UNPARSEABLE``: it counts as wrong and is reported in its own column,
so a weak judge cannot hide behind silent defaults. A backend failure (``LLMError``) is not a
verdict and propagates (the run stops; re-running continues from the LLM cache).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from timem.datasets.base import Question
from timem.llm.protocol import LLMClient, Message
from timem.prompts import judge as judge_prompt

JudgeLabel = Literal["CORRECT", "WRONG", "UNPARSEABLE"]
JUDGE_MAX_TOKENS = 256  #: room for the label and a one-sentence reason (128 cut some verdicts mid-JSON)


class Judgement(NamedTuple):
    label: JudgeLabel
    correct: bool
    rule: str  #: "locomo" or the LongMemEval rule key
    raw: str  #: the judge's reply, verbatim


def judge_messages(dataset: str, question: Question, hypothesis: str) -> tuple[list[Message], str]:
    """``(messages, rule key)`` for ``question`` of ``dataset`` ("locomo" or "longmemeval")."""
    if dataset == "longmemeval":
        qtype = str(question.extra.get("question_type", question.category))
        abstention = bool(question.extra.get("abstention", False))
        rule = judge_prompt.lme_rule_key(qtype, abstention)
        msgs = judge_prompt.build_longmemeval_messages(question.question, question.answer, hypothesis, qtype,
                                                       abstention)
        return msgs, rule
    if question.category == 5:
        return (judge_prompt.build_locomo_adversarial_messages(question.question, question.answer, hypothesis),
                "locomo-adversarial")
    return judge_prompt.build_locomo_messages(question.question, question.answer, hypothesis), "locomo"


def judge_answer(llm: LLMClient, dataset: str, question: Question, hypothesis: str,
                 user_id: str | None = None) -> Judgement:
    """One judge call (purpose ``"judge"``, temperature 0, cached) and its strictly parsed label.

    Raises:
        LLMError: the judge backend failed.
    """
    msgs, rule = judge_messages(dataset, question, hypothesis)
    raw = llm.complete(msgs, purpose="judge", user_id=user_id, max_tokens=JUDGE_MAX_TOKENS)
    verdict = judge_prompt.parse_verdict(raw)
    if verdict is None:
        return Judgement("UNPARSEABLE", False, rule, raw)
    return Judgement(verdict.label, verdict.label == "CORRECT", rule, raw)
