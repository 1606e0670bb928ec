"""L3 day consolidation: sessions of one calendar day -> a day memory."""

from __future__ import annotations

from pydantic import BaseModel, Field

from timem.models import Level
from timem.prompts.levels import SummaryPrompt

PROMPT_VERSION = "l3-day-v6"
MAX_TOKENS = 400


class DayMemory(BaseModel):
    summary: str = Field(min_length=1, description="The day's key events and facts")


PROMPT = SummaryPrompt(
    level=Level.DAY, version=PROMPT_VERSION, schema=DayMemory, max_tokens=MAX_TOKENS,
    task=("You consolidate one day of a person's conversations into a day memory. Keep the events, "
          "decisions and facts that matter later, each with its absolute date; drop small talk. "
          "2 to 6 sentences (at most 120 words), third person."),
    heading="Sessions of this day", history_label="day",
    closing="Now write the memory of this day only.")
build_messages = PROMPT.build
render = PROMPT.render
