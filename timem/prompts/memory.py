"""Memory-item extraction (the memory layer, :mod:`timem.memory`): one schema-constrained call per closed
session, reading the people's own turns (never the assistant's) for first-person facts, preferences,
events and plans, corrections included.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from timem.llm.protocol import Message
from timem.prompts.common import language_note

PROMPT_VERSION = "memory-items-v2"
MAX_TOKENS = 768


class ExtractedItem(BaseModel):
    """One statement; ``turn`` is the 1-based number of the turn it was read from."""

    turn: int = Field(ge=1)
    kind: Literal["fact", "preference", "event", "plan"]
    subject: str = Field(min_length=1, description="the speaker the statement is about, exactly as named")
    attribute: str = Field(min_length=1, description="short lower-case attribute, e.g. 'home city', 'job'")
    value: str = Field(min_length=1)
    correction: bool = False  #: the speaker corrects what they said before
    replaces: str | None = None  #: the earlier value this ends ("switched from coffee to tea": "coffee")
    stated: bool = True  #: said outright (False: inferred)
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)


class ExtractedItems(BaseModel):
    """The answer: ``items`` is required and nothing else is allowed (an answer of another shape is refused,
    not read as "no items")."""

    model_config = ConfigDict(extra="forbid")
    items: list[ExtractedItem]


def build_messages(turns: list[tuple[str, str]]) -> list[Message]:
    """Messages for one session's person turns ``[(speaker, text), ...]`` (numbered from 1)."""
    system = (
        "You read a conversation and list durable facts and preferences the speakers state about THEMSELVES "
        "in the first person. Use only these attributes: 'home city' (where they live; a trip, visit, "
        "holiday, wedding or business trip is NOT a home city), 'hometown', 'job', 'employer', 'name', "
        "'birthday', 'drink', 'morning drink', 'diet' (vegetarian, vegan, ...), 'hobby', 'favourite <thing>'. "
        "The value must be words the speaker wrote; never write placeholders such as 'not specified', "
        "'unknown' or 'none': leave the item out instead. A sport they do once is not a job. Mark corrections "
        "('actually, ...', '不对，是…') with correction=true and a change ('switched from X to Y', 'not X "
        "anymore', 'I stopped X') with replaces=X. The subject is the speaker's name exactly as written before "
        "the colon. Skip questions, small talk, plans, events and anything said about other people (family, "
        "friends). Keep values short and in the conversation's language. Answer with JSON: "
        '{"items": [{"turn": 1, "kind": "fact", "subject": "...", "attribute": "...", "value": "...", '
        '"correction": false, "replaces": null, "stated": true, "confidence": 0.9}]}; {"items": []} when '
        "there is nothing.")
    lines = "\n".join(f"{i}. {speaker}: {text}" for i, (speaker, text) in enumerate(turns, start=1))
    user = f"Turns:\n{lines}\n\nNow list the items as JSON." + language_note(lines)
    return [Message(role="system", content=system), Message(role="user", content=user)]
