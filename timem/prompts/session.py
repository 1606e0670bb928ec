"""L2 session consolidation: segments of one session -> a session memory."""

from __future__ import annotations

from collections.abc import Sequence
from zoneinfo import ZoneInfo

from timem.llm.protocol import Message
from timem.models import MemoryNode
from timem.prompts.common import LANGUAGE_RULE, clean_summary, history_block, render_nodes

PROMPT_VERSION = "l2-session-v2"
MAX_TOKENS = 300


def build_messages(children: Sequence[MemoryNode], history: Sequence[MemoryNode], tz: ZoneInfo) -> list[Message]:
    """Messages asking for one session memory from the session's L1 segments (oldest first)."""
    system = ("You consolidate a conversation session into a memory. Write a concise third-person summary of "
              "what the participants said about themselves and each other: events, facts, plans, feelings, "
              "preferences. State dates as absolute dates. 3 to 8 sentences, at most 150 words. " + LANGUAGE_RULE +
              " Reply with the memory text only.")
    user = (f"{history_block(history, tz, 'session')}\n\n"
            f"Segments of this session:\n{render_nodes(children, tz)}")
    return [Message(role="system", content=system), Message(role="user", content=user)]


def render(text: str) -> str:
    """The memory content from the model's plain-text reply (see :func:`clean_summary`)."""
    return clean_summary(text)
