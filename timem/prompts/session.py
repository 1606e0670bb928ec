"""L2 session consolidation: segments of one session -> a session memory."""

from __future__ import annotations

from collections.abc import Sequence
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field

from timem.llm.protocol import Message
from timem.models import MemoryNode
from timem.prompts.common import LANGUAGE_RULE, clean_summary, history_block, language_note, render_nodes

PROMPT_VERSION = "l2-session-v6"
MAX_TOKENS = 400


class SessionMemory(BaseModel):
    summary: str = Field(min_length=1, description="What happened in this session: facts, events, plans, with dates")


def build_messages(children: Sequence[MemoryNode], history: Sequence[MemoryNode], tz: ZoneInfo) -> list[Message]:
    """Messages asking for one session memory from the session's L1 segments (oldest first)."""
    system = ("You consolidate a conversation session into a memory. Write a concise third-person summary of "
              "what the participants said about themselves and each other: events, facts, plans, feelings, "
              "preferences. State dates as absolute dates. 3 to 8 sentences, at most 150 words. " + LANGUAGE_RULE +
              ' Answer with JSON: {"summary": "..."}.')
    body = render_nodes(children, tz)
    user = (f"Segments of this session:\n{body}\n\n{history_block(history, tz, 'session')}"
            "\n\nNow write the memory of this session only, in the third person (3 to 8 sentences, at most 150 "
            "words). Summarise the segments; do not copy lines.")
    user += language_note(body)  # CJK conversations: name the language (v6)
    return [Message(role="system", content=system), Message(role="user", content=user)]


def render(result: SessionMemory) -> str:
    """The memory content: the summary with repeated and cut-off sentences removed (:func:`clean_summary`)."""
    return clean_summary(result.summary)
