"""The state of one recall in progress, shared by its stages (:func:`timem.recall.pipeline.recall`).

Every stage (leaf selection, time localisation, relevance propagation, the event channel, memory items,
gating) reads the same things: the ports, the settings, who asks what and when, the question's
embedding. :class:`RecallState` carries them, so a stage takes the state and its own inputs only, and
the notes every stage leaves for the recall trace are collected in one list.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from functools import lru_cache

import numpy as np

from timem.config import Config
from timem.embed.protocol import Embedder
from timem.llm.protocol import LLMClient
from timem.models import MemoryNode
from timem.prompts.common import asks
from timem.store.ports import MemoryStore
from timem.tokens import content_stems

#: a line that says only that someone does not know ("Assistant: You don't know.", "Assistant: I don't know: nothing
#: in memory is about this question.", "助手: 我不知道。"); "I don't know if I should move" says something
_NOTHING_LINE = re.compile(r"^[^:\n]{1,64}:\s*(?:(?:I|You|We)\s+(?:don't|do\s+not|didn't|did\s+not)\s+know"
                           r"(?:\s*[.!]|\s*[:,;—-]\s.{0,100})?|[我你]不知道(?:[。！]|[：:，,].{0,50})?)\s*$",
                           re.IGNORECASE)


@lru_cache(maxsize=65536)
def says_nothing(content: str) -> bool:
    """Whether an L1 segment's every line after its date line only says that someone does not know: a chat reply
    "You don't know." carries no memory, and recalled it kept the right answer out after a restore (a new-user
    trial: a restored "My cat's name is Mochi." still got "You don't know.")."""
    lines = [x for x in content.splitlines()[1:] if x.strip()]
    return bool(lines) and all(_NOTHING_LINE.match(x) for x in lines)


def asks_again(content: str, query_stems: set[str]) -> bool:
    """Whether an L1 segment only asks the question again: every line after its date line is a question whose
    content words are the question's (a new-user trial: "Which city do I live in now?", asked before in the chat,
    was recalled for itself and pushed real memories out of the context). A question with other words ("Where did
    you move from?") says something and stays."""
    asked = _asked_stems(content)
    return asked is not None and bool(query_stems) and all(x == query_stems for x in asked)


@lru_cache(maxsize=65536)
def _asked_stems(content: str) -> tuple[frozenset[str], ...] | None:
    """The content stems of each line after the date line of ``content`` (its speaker prefix left out) when every
    such line asks something (:func:`timem.prompts.common.asks`), else ``None`` (also for no line). Cached: a
    recall tests ~150 candidates, most of them again in the next recall."""
    lines = [x.split(":", 1)[-1] for x in content.splitlines()[1:] if x.strip()]
    if not lines or not all(asks(x) for x in lines):
        return None
    return tuple(frozenset(content_stems(x)) for x in lines)


@dataclass
class RecallState:
    """What the recall stages share.

    Attributes:
        store: the memory store (ports of :mod:`timem.store.ports`).
        embedder: the sentence embedder (its vectors are in ``store``).
        llm: the LLM client (recording its calls for the trace), or ``None`` without one.
        config: the resolved settings; the stages read ``config.recall``, ``config.memory``, ``config.time``.
        user_id: whose memories are searched (every query is filtered by it).
        query: the question as asked.
        question_time: when it is asked, UTC-aware; nothing that starts after it is recalled.
        participants: the conversation's person names (speaker boost, planner masking).
        query_vec: the question's unit embedding ``(dim,)``, once computed (:meth:`query_vector`).
        masked: ``(text, unit embedding)`` of the question with names masked, when the centroid planner embedded
            it (:func:`timem.recall.planner.mask_names`), so that leaf selection need not embed it again.
        notes: what the stages noted for the recall trace (fallbacks, channel sizes), in order.
        exclude_turns: turn ids whose L1 segments are never recalled: in a chat, the message being answered
            (stored before it is answered, it was recalled as its own memory).
        zone: the zone the question's dates are read in (:func:`timem.tree.windows.speaker_zone` of the question
            time as given); ``None``: the user's zone (``config.time.tz_for(user_id)``). Read it as :attr:`tz`.
    """

    store: MemoryStore
    embedder: Embedder
    llm: LLMClient | None
    config: Config
    user_id: str
    query: str
    question_time: datetime
    participants: Sequence[str] = ()
    query_vec: np.ndarray | None = None
    masked: tuple[str, np.ndarray] | None = None
    notes: list[str] = field(default_factory=list)
    exclude_turns: frozenset[str] = frozenset()
    zone: tzinfo | None = None
    _query_stems: set[str] | None = field(default=None, init=False, repr=False)

    @property
    def tz(self) -> tzinfo:
        """The zone the question's relative dates ("yesterday", "on Monday") and calendar windows are cut in:
        :attr:`zone`, else the user's zone."""
        return self.zone if self.zone is not None else self.config.time.tz_for(self.user_id)

    def unseen(self, node: MemoryNode) -> bool:
        """Whether ``node`` may not be recalled for this question: it starts after the question time, it is an
        L1 segment of the excluded turns only (:attr:`exclude_turns`), or one whose every line says only that
        someone does not know (:func:`says_nothing`) or that only asks this question again (:func:`asks_again`)."""
        if self._query_stems is None:
            self._query_stems = content_stems(self.query)
        return node.span_start > self.question_time or (node.level == 1 and (
            (bool(self.exclude_turns) and set(node.source_turn_ids) <= self.exclude_turns)
            or says_nothing(node.content) or asks_again(node.content, self._query_stems)))

    def query_vector(self) -> np.ndarray:
        """The question's embedding ``(dim,)``, computed on first use.

        Raises:
            EmbeddingError: the embedder fails.
        """
        if self.query_vec is None:
            self.query_vec = self.embedder.embed([self.query])[0]
        return self.query_vec
