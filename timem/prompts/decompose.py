"""Question decomposition for recall (issue 23, "LLM-assisted recall", TiMem's complex path, arXiv 2601.02845): an
LLM splits a question whose answer is spread over several memories into self-contained sub-questions, each then
searched like the question (:mod:`timem.recall.aspects`, ``Config.recall.aspect_queries = "llm"``).

The model writes questions only; it never sees a memory, so it cannot put an invented fact into the context.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from timem.llm.protocol import Message

PROMPT_VERSION = "decompose-v1"
MAX_TOKENS = 160
MAX_SUB_QUESTIONS = 4


class DecomposeOut(BaseModel):
    """The model's answer: up to :data:`MAX_SUB_QUESTIONS` sub-questions, none when the question is one lookup."""

    model_config = ConfigDict(extra="forbid")

    sub_questions: list[str] = Field(default_factory=list, max_length=MAX_SUB_QUESTIONS)


_SYSTEM = f"""You help search a person's past conversations. Some questions need several separate facts, \
often said on different days: "What do Jon and Gina have in common?" needs what Jon said and what Gina said; \
"What activities does Melanie do?" needs each activity she mentioned; "Where did Caroline move from, and when?" \
needs the move and its date. Split such a question into 2 to {MAX_SUB_QUESTIONS} short, self-contained \
sub-questions, each about one fact, each naming the person it is about. Use only words a conversation would \
contain; do not guess answers. If the question asks for one single fact, reply with an empty list.

Reply with one JSON object only: {{"sub_questions": ["...", "..."]}}"""


def build_messages(question: str, participants: Sequence[str] = ()) -> list[Message]:
    """Messages for one decomposition.

    Args:
        question: the user's question, as asked.
        participants: the speakers of the user's conversations (so that "I" / "we" can be named), may be empty.
    """
    who = f"The conversations are between {', '.join(participants)}.\n" if participants else ""
    return [Message(role="system", content=_SYSTEM),
            Message(role="user", content=f"{who}Question: {question}\n\nJSON:")]
