"""RecallOptions: how one recall (or answer) runs, beyond the user, the question and its time, as one typed value.

The engine (:meth:`timem.engine.MemoryEngine.recall` / ``ask``), the pipeline (:func:`timem.recall.pipeline.recall`),
offline evaluation, the memory service and the bench pass one of these instead of writing the options out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from timem.config import Complexity, Config
from timem.errors import ConfigError
from timem.recall.gating import GateMode


@dataclass(frozen=True)
class RecallOptions:
    """The options of one recall; every field's default is "as configured".

    Attributes:
        complexity: skip the recall planner and use this complexity (``plan.planner = "override"``).
        gate: replaces ``config.recall.gate`` for this call (``"llm"`` without an LLM raises ``ConfigError``).
        planner: replaces ``config.recall.planner`` (``"centroid"`` or ``"llm"``; ``"llm"`` without an LLM raises).
        participants: the conversation's person names, kept out of the keywords (empty: a capitalisation heuristic).
        persist: save the recall trace (and the items' access times); ``False`` for a comparison or bench run.
        config: replaces the caller's settings for this call (e.g. a benchmark recipe, the chat's settings).
        asker: for an answer, the chat's speaker, answered as "you" (one line of text).
        exclude_turns: turn ids whose L1 segments are never recalled (the chat message being answered).
    """

    complexity: Complexity | None = None
    gate: GateMode | None = None
    planner: str | None = None
    participants: tuple[str, ...] = ()
    persist: bool = True
    config: Config | None = None
    asker: str | None = None
    exclude_turns: tuple[str, ...] = ()


#: the options of a recall as configured (no override, participants by heuristic, trace persisted)
DEFAULT_OPTIONS = RecallOptions()


def recall_options(options: RecallOptions | None, *, complexity: Complexity | None = None,
                   gate: GateMode | None = None, planner: str | None = None, participants: Sequence[str] = (),
                   persist: bool = True, config: Config | None = None, asker: str | None = None) -> RecallOptions:
    """``options``, or (without them) the :class:`RecallOptions` of these keywords: the engine's (and the service
    client's) recall / ask keep their keyword arguments (``mem.recall("mia", "What is my cat?", persist=False)``).

    Raises:
        ConfigError: both ``options`` and a keyword that is not its default.
    """
    given = RecallOptions(complexity, gate, planner, tuple(participants), persist, config, asker)
    if options is None:
        return given
    if given != DEFAULT_OPTIONS:
        raise ConfigError("pass the recall options either as RecallOptions or as keywords, not both")
    return options
