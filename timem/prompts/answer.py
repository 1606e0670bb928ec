"""Answer prompt: answer a question from the recalled, dated memory context.

The question's date is given so that relative phrases in the memories ("yesterday", "last
week") can be resolved against each memory's own date, and so that "how long ago" questions work.

The answer follows the question's language: a Chinese, Japanese or Korean question
(:func:`timem.prompts.common.cjk_language`) gets, right after it, "(The question is in Chinese:
answer in Chinese, even if the memories are in English.)" (as the consolidation prompts get a note
for the conversation's language). Version
history: v2 added that note; an English question's messages are byte-identical to v1, so cached
English answers stay valid.
"""

from __future__ import annotations

from datetime import datetime

from timem.llm.protocol import Message
from timem.prompts.common import cjk_language

PROMPT_VERSION = "answer-v2"


_SYSTEM = """You answer questions about a user's past conversations using only the memories given.
Each memory line starts with the date (and time) it refers to. When a memory says "yesterday", "last week" or similar, count from that memory's date, not from today, and give the resulting date.
Answer briefly (one short sentence or a few words). If the memories do not contain the answer, say that you don't know."""


def build_messages(question: str, context: str, question_date: datetime) -> list[Message]:
    """Messages for the answer call.

    Args:
        question: the user's question, verbatim.
        context: the recall context (dated lines grouped by level), possibly empty.
        question_date: when the question is asked, already in the user's zone.
    """
    memories = context.strip() or "(no memories found)"
    lang = cjk_language(question)
    note = f"\n(The question is in {lang}: answer in {lang}, even if the memories are in English.)" if lang else ""
    user = (f"Memories:\n{memories}\n\nToday is {question_date:%A, %d %B %Y, %H:%M}.\n"
            f"Question: {question}{note}\nAnswer:")
    return [Message(role="system", content=_SYSTEM), Message(role="user", content=user)]
