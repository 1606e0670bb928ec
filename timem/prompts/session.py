"""L2 session consolidation: segments of one session -> a session memory."""

from __future__ import annotations

from pydantic import BaseModel, Field

from timem.models import Level
from timem.prompts.levels import SummaryPrompt

PROMPT_VERSION = "l2-session-v6"
MAX_TOKENS = 400


class SessionMemory(BaseModel):
    summary: str = Field(min_length=1, description="What happened in this session: facts, events, plans, with dates")


PROMPT = SummaryPrompt(
    level=Level.SESSION, version=PROMPT_VERSION, schema=SessionMemory, max_tokens=MAX_TOKENS,
    task=("You consolidate a conversation session into a memory. Write a concise third-person summary of "
          "what the participants said about themselves and each other: events, facts, plans, feelings, "
          "preferences. State dates as absolute dates. 3 to 8 sentences, at most 150 words."),
    heading="Segments of this session", history_label="session",
    closing=("Now write the memory of this session only, in the third person (3 to 8 sentences, at most 150 words). "
             "Summarise the segments; do not copy lines."))
build_messages = PROMPT.build
render = PROMPT.render
