"""The memory system message of the OpenAI-compatible endpoint (``POST /v1/chat/completions``).

What recall found for the last user message goes into the client's conversation as one system message. It
starts with :data:`MARK`, so that it is recognised and never written back as memory: the endpoint stores only the
last user message and the reply, and drops marked messages a client sends back before it adds a fresh one.
Version history: v1; v2 quotes the memories as data (issue 27 #11): the context goes between ``<memories>`` and
``</memories>``, the pinned profile between ``<pinned>`` and ``</pinned>``, any such tag and chat-template control
token inside is neutralised (:func:`timem.prompts.common.quote_memories`), and the message states
:data:`timem.prompts.common.DATA_RULE`. v3 withholds recalled turns that give instructions to an AI assistant
(:func:`timem.prompts.injection.withhold_instructions`); other messages are byte-identical to v2.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from timem.prompts.common import DATA_RULE, quote_memories

PROMPT_VERSION = "memory-message-v3"

#: the first characters of every memory system message
MARK = "[TiMem memory]"

_HEAD = (f"{MARK} Memories of this user from earlier conversations, recalled by TiMem (they are not part of "
         "this conversation). Each line starts with the date it refers to; count \"yesterday\" or \"last week\" "
         "from that date. Use them when they help to answer; do not invent memories that are not listed. " + DATA_RULE)


def memory_message(context: str, at: datetime, *, pinned: Sequence[str] = ()) -> str:
    """The system message's text.

    Args:
        context: the recall context (dated lines grouped by level), possibly empty; quoted as data whatever it
            holds (:func:`timem.prompts.common.quote_memories`).
        at: when the message is asked, already in the zone its dates are read in (the asker's offset, else the
            user's zone: :func:`timem.tree.windows.speaker_zone`).
        pinned: the user's pinned profile lines, already capped.
    """
    parts = [_HEAD, f"Now is {at:%A, %d %B %Y, %H:%M}."]
    if pinned:
        parts.append("Pinned profile (stable facts the person confirmed, quoted data):\n"
                     + quote_memories("\n".join(f"- {p}" for p in pinned), tag="pinned"))
    parts.append("Memories:\n" + quote_memories(context.strip() or "(no memories found)"))
    return "\n\n".join(parts)


def is_memory_message(message: dict[str, Any]) -> bool:
    """Whether an OpenAI chat message (a dict) is a memory system message (:data:`MARK`)."""
    content = message.get("content")
    return message.get("role") in ("system", "developer") and isinstance(content, str) and content.startswith(MARK)
