"""L5 profile consolidation: weeks of one month -> a profile of each participant (plain text, one line each)."""

from __future__ import annotations

from collections.abc import Sequence
from zoneinfo import ZoneInfo

from timem.llm.protocol import Message
from timem.models import MemoryNode
from timem.prompts.common import LANGUAGE_RULE, clean_summary, history_block, render_nodes

PROMPT_VERSION = "l5-profile-v2"
MAX_TOKENS = 400


def build_messages(children: Sequence[MemoryNode], history: Sequence[MemoryNode], participants: Sequence[str],
                   tz: ZoneInfo) -> list[Message]:
    """Messages asking for one profile line per participant from a month's week memories."""
    who = ", ".join(participants) if participants else "the user"
    system = ("You maintain long-term profiles of people from a month of week memories. For each person, "
              "write what is stable about them (identity, relationships, work, hobbies, preferences, habits, "
              "goals) and what changed this month, with dates where known; a newer preference replaces an "
              "older one and you say so. 2 to 5 sentences per person. " + LANGUAGE_RULE +
              " Reply with one line per person, starting with the name and a colon, e.g. \"Name: ...\".")
    user = (f"People to profile: {who}.\n\n{history_block(history, tz, 'monthly profile')}\n\n"
            f"Weeks of this month:\n{render_nodes(children, tz)}")
    return [Message(role="system", content=system), Message(role="user", content=user)]


def render(text: str) -> str:
    """One cleaned line per person (see :func:`clean_summary`); blank lines and repeated lines dropped.

    Raises:
        ValueError: no usable line.
    """
    lines: list[str] = []
    for raw in text.strip().splitlines():
        if raw.strip():
            try:
                line = clean_summary(raw.strip().lstrip("-*• ").strip())
            except ValueError:
                continue
            if line not in lines:
                lines.append(line)
    if not lines:
        raise ValueError("the model returned no profile text")
    return "\n".join(lines)
