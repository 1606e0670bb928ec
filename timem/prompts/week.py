"""L4 week consolidation: days of one (month-cut) ISO week -> a week memory of patterns and changes."""

from __future__ import annotations

from collections.abc import Sequence
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field

from timem.llm.protocol import Message
from timem.models import MemoryNode
from timem.prompts.common import LANGUAGE_RULE, clean_summary, history_block, language_note, render_nodes

PROMPT_VERSION = "l4-week-v6"
MAX_TOKENS = 400


class WeekMemory(BaseModel):
    summary: str = Field(min_length=1, description="The week's main events, recurring activities and changes")


def build_messages(children: Sequence[MemoryNode], history: Sequence[MemoryNode], tz: ZoneInfo) -> list[Message]:
    """Messages asking for one week memory from that week's day memories."""
    system = ("You consolidate one week of day memories into a week memory: the main events with their "
              "dates, recurring activities, and anything that changed compared with earlier weeks. "
              "2 to 6 sentences (at most 120 words), third person. " + LANGUAGE_RULE +
              ' Answer with JSON: {"summary": "..."}.')
    body = render_nodes(children, tz)
    user = (f"Days of this week:\n{body}\n\n{history_block(history, tz, 'week')}\n\n"
            "Now write the memory of this week only.")
    user += language_note(body)  # CJK conversations: name the language (v6)
    return [Message(role="system", content=system), Message(role="user", content=user)]


def render(result: WeekMemory) -> str:
    """The memory content: the summary with repeated and cut-off sentences removed (:func:`clean_summary`)."""
    return clean_summary(result.summary)
