"""The LLM's part of L2–L5 consolidation (:mod:`timem.consolidation.consolidator`): an ``abstractive`` node's summary
and a ``hybrid`` node's title over its extract, each grounded sentence by sentence against its inputs
(:mod:`timem.consolidation.grounding`). Nothing here writes to the store: the consolidator writes the node and the
audit entries from what these return.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from zoneinfo import ZoneInfo

from timem.consolidation.grounding import ground_content
from timem.errors import UnusableAnswerError
from timem.llm.protocol import LLMClient, Message
from timem.models import Level, MemoryNode
from timem.prompts import title
from timem.prompts.common import assistant_note, render_nodes
from timem.prompts.registry import level_prompts

LEVEL_PROMPTS = level_prompts()


def hybrid_title(llm: LLMClient, user_id: str, level: Level, extract: str
                 ) -> tuple[str | None, dict[str, Any] | None]:
    """The hybrid title of ``extract``: one short LLM call, grounded against ``extract``.

    Returns:
        ``(title or None, problem or None)``; the problem (for the audit log) says why there is no
        title (``reason``: ``unusable`` answer or ``unsupported`` by the lines) or what was dropped.
        Errors other than an unusable answer (e.g. an unreachable endpoint) propagate.
    """
    try:
        result = llm.complete_json(title.build_messages(level, extract), title.NodeTitle,
                                   purpose=f"title-L{int(level)}", user_id=user_id, max_tokens=title.MAX_TOKENS)
        text = title.render(result)
    except (UnusableAnswerError, ValueError) as exc:
        return None, {"reason": "unusable", "error": str(exc)}
    kept, dropped = ground_content(text, [extract], [])
    problem = {"dropped": [{"sentence": t, "reason": r} for t, r in dropped]} if dropped else None
    if not kept:
        return None, {"reason": "unsupported", **(problem or {})}
    return kept, problem


def summarise(llm: LLMClient, user_id: str, level: Level, key: str, children: list[MemoryNode],
              history: list[MemoryNode], tz: ZoneInfo, *, participants: Sequence[str], assistants: Sequence[str]
              ) -> tuple[str, list[MemoryNode], list[tuple[str, str]]]:
    """One LLM call, cleaned and grounded (:mod:`grounding`); a second call without history if nothing survives.
    ``participants``: the speakers an L5 profile profiles (empty below L5); ``assistants``: the speaker names of a
    chat assistant, whose replies are not the participants' facts.

    Returns the content, the history the surviving answer saw, and the dropped sentences.

    Raises:
        UnusableAnswerError: no valid answer, or no sentence survives either call (nothing is written).
    """
    prompt = LEVEL_PROMPTS[level]
    dropped: list[tuple[str, str]] = []
    for shown in ([history, []] if history else [history]):
        messages = prompt.build(children, shown, tz, participants=participants)
        note = assistant_note(assistants, messages[-1].content)
        if note:  # a chat assistant's replies are not the participants' facts (see extractive.py)
            messages = [*messages[:-1], Message(role=messages[-1].role, content=messages[-1].content + note)]
        result = llm.complete_json(messages, prompt.schema, purpose=f"consolidate-L{int(level)}",
                                   user_id=user_id, max_tokens=prompt.max_tokens)
        try:
            content = prompt.render(result)
        except ValueError as exc:
            raise UnusableAnswerError(f"L{int(level)} consolidation of {key}: {exc} (model {llm.model_id}); "
                                      "nothing was written. Use a larger model or an OpenAI-compatible endpoint "
                                      "(TIMEM_LLM_BACKEND=openai).") from exc
        content, lost = ground_content(content, [render_nodes(children, tz)], [h.content for h in shown],
                                       profile_lines=level == Level.PROFILE)
        dropped += lost
        if content:
            return content, shown, dropped
    raise UnusableAnswerError(f"L{int(level)} consolidation of {key}: no sentence of the model's answer is "
                              f"supported by its inputs (model {llm.model_id}); nothing was written. Use a "
                              "larger model or an OpenAI-compatible endpoint (TIMEM_LLM_BACKEND=openai).")
