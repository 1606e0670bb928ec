"""The registry of level prompts: the :class:`~timem.prompts.levels.LevelPrompt` of each consolidation level L2–L5.

Usage: ``level_prompts()[Level.DAY].build(children, history, tz)``.
"""

from __future__ import annotations

from timem.models import Level
from timem.prompts import day, profile, session, week
from timem.prompts.levels import LevelPrompt


def level_prompts() -> dict[Level, LevelPrompt]:
    """The registry: the prompt of each level L2–L5."""
    return {Level.SESSION: session.PROMPT, Level.DAY: day.PROMPT, Level.WEEK: week.PROMPT,
            Level.PROFILE: profile.PROMPT}
