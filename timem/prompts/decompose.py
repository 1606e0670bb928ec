"""Question decomposition for recall (issue 23, "LLM-assisted recall", TiMem's complex path, arXiv 2601.02845): an
LLM splits a question whose answer is spread over several memories into self-contained sub-questions, each then
searched like the question (:mod:`timem.recall.aspects`, ``Config.recall.aspect_queries = "llm"``).

The model writes questions only; it never sees a memory, so it cannot put an invented fact into the context, and
:func:`usable` drops what is no question (a guessed answer) and the worked examples copied.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from timem.llm.protocol import Message

PROMPT_VERSION = "decompose-v2"
MAX_TOKENS = 160
MAX_SUB_QUESTIONS = 4


class DecomposeOut(BaseModel):
    """The model's answer: up to :data:`MAX_SUB_QUESTIONS` sub-questions, none when the question is one lookup."""

    model_config = ConfigDict(extra="forbid")

    sub_questions: list[str] = Field(default_factory=list, max_length=MAX_SUB_QUESTIONS)


#: the names of the prompt's worked examples: a sub-question naming one the question does not is the example
#: copied (a 1.5B model copied "Where did Caroline move from, and when?" of decompose-v1 into other questions)
EXAMPLE_NAMES = ("Pat", "Sam")

_SYSTEM = f"""You help search a person's past conversations. Some questions need several separate facts, \
often said on different days. Split such a question into 2 to {MAX_SUB_QUESTIONS} short, self-contained \
sub-questions, each asking for one of those facts and naming the person it is about. Write questions only, each \
ending with "?". Never answer, never guess a fact, never add a topic the question does not ask about. If the \
question asks for one single fact, reply with an empty list.

Example: "What do Pat and Sam have in common?" -> \
{{"sub_questions": ["What does Pat like doing?", "What does Sam like doing?"]}}
Example: "What sports has Pat tried?" -> \
{{"sub_questions": ["Which sport did Pat play?", "Did Pat take lessons in a sport?", "Which game did Pat watch?"]}}
Example: "What is Pat's dog called?" -> {{"sub_questions": []}}

Reply with one JSON object only: {{"sub_questions": ["...", "..."]}}"""


def usable(parts: Sequence[str], question: str) -> list[str]:
    """The sub-questions worth a search: whitespace-normalised, each a question (ends with "?": a statement is a
    guessed answer), not the question itself, not an example copied (naming one of :data:`EXAMPLE_NAMES` that the
    question does not), without duplicates."""
    out: list[str] = []
    for q in (" ".join(p.split()) for p in parts):
        copied = any(re.search(rf"\b{n}\b", q) and not re.search(rf"\b{n}\b", question) for n in EXAMPLE_NAMES)
        if q.endswith("?") and not copied and q.lower() != " ".join(question.split()).lower() and q not in out:
            out.append(q)
    return out


def build_messages(question: str, participants: Sequence[str] = ()) -> list[Message]:
    """Messages for one decomposition.

    Args:
        question: the user's question, as asked.
        participants: the speakers of the user's conversations (so that "I" / "we" can be named), may be empty.
    """
    who = f"The conversations are between {', '.join(participants)}.\n" if participants else ""
    return [Message(role="system", content=_SYSTEM),
            Message(role="user", content=f"{who}Question: {question}\n\nJSON:")]
