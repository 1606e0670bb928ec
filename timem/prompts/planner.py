"""Recall-planner prompt: classify a question's complexity, name its keywords and its time phrase.

The model only *names* the time phrase as written in the question; the calendar arithmetic is
done by :func:`timem.recall.time_window.resolve_time_window` (small models get dates wrong).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from timem.llm.protocol import Message

PROMPT_VERSION = "planner-v1"


class PlannerResponse(BaseModel):
    """What the planner model must return."""

    complexity: Literal["simple", "hybrid", "complex"]
    keywords: list[str] = Field(default_factory=list, max_length=5,
                                description="1-5 content words for full-text search, no person names")
    time_expression: str | None = Field(
        default=None, description="the words of the question that name a time (e.g. 'last week'), else null")


_SYSTEM = """You plan memory lookups for a chat assistant. Given a question about past conversations, decide how \
much memory is needed to answer it.

complexity:
- "simple": the answer is one single fact that was stated once (a name, a place, an object, a job).
- "hybrid": the answer combines several facts or needs dates: counting, listing everything, comparing, "when" \
something happened, what came first, what changed between occasions.
- "complex": the answer needs judgement over many conversations: preferences, habits, personality, values, trends \
over time, predictions, "would ..." or "what if" questions.

keywords: 1 to 5 important content words from the question for a full-text search. Never include person names.
time_expression: copy the words of the question that name a time period (for example "last week", "in May 2023", \
"two days ago"); null if there are none.

Reply with one JSON object only."""


def build_messages(question: str, question_date: datetime,
                   examples: Mapping[str, Sequence[str]] | None = None) -> list[Message]:
    """Messages for the planner call.

    Args:
        question: the user's question, verbatim.
        question_date: when it is asked (any zone; shown as a local date for context).
        examples: a few labelled questions per complexity (e.g. 3 of each from the packaged
            planner examples), shown as worked examples; ``None`` shows none.
    """
    lines = [_SYSTEM]
    if examples:
        lines.append("\nExamples:")
        for label, questions in examples.items():
            for q in questions:
                lines.append(f'- "{q}" -> "{label}"')
    user = f"Today is {question_date:%A, %d %B %Y}.\nQuestion: {question}"
    return [Message(role="system", content="\n".join(lines)), Message(role="user", content=user)]
