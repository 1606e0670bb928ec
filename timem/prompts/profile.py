"""L5 profile consolidation: weeks of one month -> a profile of each participant (plain text, one line each)."""

from __future__ import annotations

from collections.abc import Sequence
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field

from timem.llm.protocol import Message
from timem.models import Level, MemoryNode
from timem.prompts.common import LANGUAGE_RULE, clean_summary, history_block, language_note, render_nodes

PROMPT_VERSION = "l5-profile-v6"
MAX_TOKENS = 500


class PersonProfile(BaseModel):
    person: str = Field(min_length=1)
    profile: str = Field(min_length=1, description="Identity, relationships, preferences, habits, goals; changes")


class ProfileMemory(BaseModel):
    profiles: list[PersonProfile] = Field(min_length=1)


def build_messages(children: Sequence[MemoryNode], history: Sequence[MemoryNode], participants: Sequence[str],
                   tz: ZoneInfo) -> list[Message]:
    """Messages asking for one profile line per participant from a month's week memories."""
    who = ", ".join(participants) if participants else "the user"
    system = ("You maintain long-term profiles of people from a month of week memories. For each person, "
              "write what is stable about them (identity, relationships, work, hobbies, preferences, habits, "
              "goals) and what changed this month, with dates where known; a newer preference replaces an "
              "older one and you say so. 2 to 5 sentences per person. " + LANGUAGE_RULE +
              ' Answer with JSON: {"profiles": [{"person": "...", "profile": "..."}]}.')
    body = render_nodes(children, tz)
    user = (f"People to profile: {who}.\n\nWeeks of this month:\n{body}\n\n"
            f"{history_block(history, tz, 'monthly profile')}\n\nNow write the profile of each person ({who}) "
            "from this month's weeks, keeping what the earlier profiles say that still holds. Do not copy lines.")
    user += language_note(body)  # CJK conversations: name the language (v6)
    return [Message(role="system", content=system), Message(role="user", content=user)]


def render(result: ProfileMemory) -> str:
    """One ``Name: profile`` line per person, sentences cleaned by :func:`clean_summary`; duplicates dropped.

    Raises:
        ValueError: no usable profile.
    """
    lines: list[str] = []
    for p in result.profiles:
        try:
            line = f"{p.person.strip()}: {clean_summary(p.profile)}"
        except ValueError:
            continue
        if line not in lines:
            lines.append(line)
    if not lines:
        raise ValueError("the model returned no profile text")
    return "\n".join(lines)


class _ProfilePrompt:
    """The L5 :class:`~timem.prompts.levels.LevelPrompt`: :func:`build_messages` with the participants."""

    level, version, schema, max_tokens = Level.PROFILE, PROMPT_VERSION, ProfileMemory, MAX_TOKENS

    def build(self, children: Sequence[MemoryNode], history: Sequence[MemoryNode], tz: ZoneInfo, *,
              participants: Sequence[str] = ()) -> list[Message]:
        return build_messages(children, history, participants, tz)

    def render(self, result: ProfileMemory) -> str:
        return render(result)


PROMPT = _ProfilePrompt()
