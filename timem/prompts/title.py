"""Hybrid consolidation: a one-line title for an extractive memory (L2-L5).

The memory itself is the extractive selection (:mod:`timem.consolidation.extractive`); the model
only names it, so its output is short (fast on the embedded model) and checked by the grounding
filter against the selection before it is stored.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from timem.llm.protocol import Message
from timem.models import Level
from timem.prompts.common import LANGUAGE_RULE, clean_summary, language_note

PROMPT_VERSION = "title-v1"
MAX_TOKENS = 48
MAX_CHARS = 120

_WHAT = {Level.SESSION: "conversation session", Level.DAY: "day", Level.WEEK: "week", Level.PROFILE: "month"}


class NodeTitle(BaseModel):
    title: str = Field(min_length=1, description="One line naming the main topics, at most 15 words")


def build_messages(level: Level, extract: str) -> list[Message]:
    """Messages asking for one title line for the extractive memory ``extract`` of a ``level`` window."""
    what = _WHAT[Level(level)]
    system = (f"You write a one-line title for the memory of a {what}: the main topics and events, at most 15 "
              "words, no date, using only what the lines say. " + LANGUAGE_RULE +
              ' Answer with JSON: {"title": "..."}.')
    user = f"Lines of this {what}:\n{extract}\n\nNow write the title (one line, at most 15 words)."
    user += language_note(extract)
    return [Message(role="system", content=system), Message(role="user", content=user)]


def render(result: NodeTitle) -> str:
    """The title as one line: cleaned (:func:`clean_summary`), whitespace collapsed.

    Raises:
        ValueError: empty, or longer than :data:`MAX_CHARS` characters (not a title; nothing is cut).
    """
    text = " ".join(clean_summary(result.title).split())
    text = re.sub(r"^(title)\s*[:：]\s*", "", text, flags=re.IGNORECASE).strip()
    if not text:
        raise ValueError("the model returned an empty title")
    if len(text) > MAX_CHARS:
        raise ValueError(f"the model's title has {len(text)} characters (more than {MAX_CHARS})")
    return text
