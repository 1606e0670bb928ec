"""L4 week consolidation: days of one (month-cut) ISO week -> a week memory of patterns and changes."""

from __future__ import annotations

from pydantic import BaseModel, Field

from timem.models import Level
from timem.prompts.levels import SummaryPrompt

PROMPT_VERSION = "l4-week-v6"
MAX_TOKENS = 400


class WeekMemory(BaseModel):
    summary: str = Field(min_length=1, description="The week's main events, recurring activities and changes")


PROMPT = SummaryPrompt(
    level=Level.WEEK, version=PROMPT_VERSION, schema=WeekMemory, max_tokens=MAX_TOKENS,
    task=("You consolidate one week of day memories into a week memory: the main events with their "
          "dates, recurring activities, and anything that changed compared with earlier weeks. "
          "2 to 6 sentences (at most 120 words), third person."),
    heading="Days of this week", history_label="week",
    closing="Now write the memory of this week only.")
build_messages = PROMPT.build
render = PROMPT.render
