"""Recall gate prompt: the model sees the numbered candidate memories and returns the numbers to keep.

The instruction depends on the question's complexity (TiMem §3.3, complexity-aware gating):
simple questions are filtered aggressively, hybrid ones keep every dated fact bearing on the
question, complex ones are filtered conservatively.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field

from timem.llm.protocol import Message

PROMPT_VERSION = "gate-v1"


class GateResponse(BaseModel):
    """What the gate model must return: the candidate numbers (1-based) to keep."""

    keep: list[int] = Field(default_factory=list, description="numbers of the memories to keep")


class GateItem(NamedTuple):
    """One numbered candidate as shown to the model."""

    number: int  #: 1-based
    level: int  #: 1..5
    date: str  #: already formatted in the user's zone
    text: str


INSTRUCTIONS: dict[str, str] = {
    "simple": "The question asks for one fact. Be strict: keep only the few memories that state or "
              "directly support the answer, and drop everything else.",
    "hybrid": "The question combines several facts or needs dates. Keep every memory with a fact or date "
              "that bears on the question (each occasion, each item to count or compare); drop the rest.",
    "complex": "The question needs judgement over many memories (preferences, habits, trends, predictions). "
               "Be generous: drop only memories that are clearly unrelated to the question.",
}

_LEVEL = {1: "L1 segment", 2: "L2 session", 3: "L3 day", 4: "L4 week", 5: "L5 profile"}


def build_messages(question: str, complexity: Literal["simple", "hybrid", "complex"], items: Sequence[GateItem],
                   question_date: datetime, max_chars: int = 600) -> list[Message]:
    """Messages for the gate call.

    Args:
        question: the user's question, verbatim.
        complexity: the plan's complexity; selects the instruction.
        items: the candidates, numbered from 1 (leaves and ancestors).
        question_date: when the question is asked (shown as a date).
        max_chars: each candidate's text is cut to this many characters in the prompt.
    """
    system = ("You select memories for answering a question about past conversations. "
              f"{INSTRUCTIONS[complexity]}\nReply with one JSON object: {{\"keep\": [numbers]}}.")
    lines = [f"Today is {question_date:%d %B %Y}.", f"Question: {question}", "", "Memories:"]
    for it in items:
        text = it.text if len(it.text) <= max_chars else it.text[:max_chars].rstrip() + " ..."
        lines.append(f"[{it.number}] ({_LEVEL.get(it.level, f'L{it.level}')}, {it.date}) {text}")
    return [Message(role="system", content=system), Message(role="user", content="\n".join(lines))]
