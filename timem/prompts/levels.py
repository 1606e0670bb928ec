"""The level-prompt interface: what one consolidation level's prompt (L2–L5) gives the consolidator.

Every level prompt has a version (part of the LLM cache key through the messages it builds: a prompt
whose bytes are unchanged keeps its version, so cached answers stay valid), a response schema, a
completion-token cap, a ``build`` (children, history, zone, participants → messages) and a ``render``
(parsed answer → memory content). The session, day and week prompts are one parametrised
:class:`SummaryPrompt` (TiMem §3.2: each level summarises its children, shown with up to ``history_k``
earlier memories of the same level); the profile prompt (:mod:`timem.prompts.profile`) also gets the
participants to profile. The prompt of each level is listed by :func:`timem.prompts.registry.level_prompts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from pydantic import BaseModel

from timem.llm.protocol import Message
from timem.models import Level, MemoryNode
from timem.prompts.common import LANGUAGE_RULE, clean_summary, history_block, language_note, render_nodes


class LevelPrompt(Protocol):
    """What the consolidator needs of a level's prompt."""

    @property
    def level(self) -> Level:
        """The level whose windows this prompt consolidates (2-5)."""
        ...

    @property
    def version(self) -> str:
        """Prompt version, e.g. ``"l3-day-v6"``; stored on every node it writes."""
        ...

    @property
    def schema(self) -> type[BaseModel]:
        """The pydantic model of the JSON answer (sent as the request's JSON schema)."""
        ...

    @property
    def max_tokens(self) -> int:
        """Completion-token cap of one call."""
        ...

    def build(self, children: Sequence[MemoryNode], history: Sequence[MemoryNode], tz: ZoneInfo, *,
              participants: Sequence[str] = ()) -> list[Message]:
        """System + user messages asking for the memory of one window (children oldest first; dates in ``tz``)."""
        ...

    def render(self, result: Any) -> str:
        """The memory content from the parsed answer. Raises ``ValueError`` when nothing usable is left."""
        ...


@dataclass(frozen=True)
class SummaryPrompt:
    """A summary level (L2 session, L3 day, L4 week): ``{"summary": "..."}`` from the window's children.

    The user message is ``"<heading>:\\n<children>\\n\\n<history block>\\n\\n<closing>"`` plus a language note
    for CJK conversations; the system message is ``task + " " + LANGUAGE_RULE + JSON instruction``.
    """

    level: Level
    version: str
    schema: type[BaseModel]
    max_tokens: int
    task: str  #: the system message's instructions (what to keep, length, person)
    heading: str  #: e.g. "Sessions of this day"
    history_label: str  #: e.g. "day" (see :func:`timem.prompts.common.history_block`)
    closing: str  #: the last instruction of the user message

    def build(self, children: Sequence[MemoryNode], history: Sequence[MemoryNode], tz: ZoneInfo, *,
              participants: Sequence[str] = ()) -> list[Message]:
        system = self.task + " " + LANGUAGE_RULE + ' Answer with JSON: {"summary": "..."}.'
        body = render_nodes(children, tz)
        user = f"{self.heading}:\n{body}\n\n{history_block(history, tz, self.history_label)}\n\n{self.closing}"
        user += language_note(body)  # CJK conversations: name the language (v6)
        return [Message(role="system", content=system), Message(role="user", content=user)]

    def render(self, result: Any) -> str:
        """The summary with repeated and cut-off sentences removed (:func:`clean_summary`)."""
        return clean_summary(result.summary)
