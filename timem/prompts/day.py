"""L3 day consolidation: sessions of one calendar day -> a day memory."""

from __future__ import annotations

from collections.abc import Sequence
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field

from timem.llm.protocol import Message
from timem.models import MemoryNode
from timem.prompts.common import LANGUAGE_RULE, clean_summary, history_block, language_note, render_nodes

PROMPT_VERSION = "l3-day-v6"
MAX_TOKENS = 400


class DayMemory(BaseModel):
    summary: str = Field(min_length=1, description="The day's key events and facts")


def build_messages(children: Sequence[MemoryNode], history: Sequence[MemoryNode], tz: ZoneInfo) -> list[Message]:
    """Messages asking for one day memory from that day's session memories."""
    system = ("You consolidate one day of a person's conversations into a day memory. Keep the events, "
              "decisions and facts that matter later, each with its absolute date; drop small talk. "
              "2 to 6 sentences (at most 120 words), third person. " + LANGUAGE_RULE +
              ' Answer with JSON: {"summary": "..."}.')
    body = render_nodes(children, tz)
    user = (f"Sessions of this day:\n{body}\n\n{history_block(history, tz, 'day')}\n\n"
            "Now write the memory of this day only.")
    user += language_note(body)  # CJK conversations: name the language (v6)
    return [Message(role="system", content=system), Message(role="user", content=user)]


def render(result: DayMemory) -> str:
    """The memory content: the summary with repeated and cut-off sentences removed (:func:`clean_summary`)."""
    return clean_summary(result.summary)
