"""The recall trace: every decision of one recall, persisted per query for later inspection.

Saved with :meth:`RecallTrace.save` in a compact form (ids, scores and decisions; the context rebuilt
from its memories: :mod:`timem.recall.trace_store`), within the store's retention rule
(``trace_keep_per_user``, ``trace_max_age_days``), and read back whole with :func:`timem.recall.trace_store.load_traces`
(datetimes UTC).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from timem.models import MemoryNode
from timem.recall.ancestors import AncestorRecord
from timem.recall.gating import GateOutcome
from timem.recall.items import ItemUse
from timem.recall.leaves import Candidate
from timem.recall.planner import RecallPlan


class LLMCall(BaseModel):
    """One LLM protocol call made during recall or answering.

    ``prompt_tokens`` / ``completion_tokens`` come from the client when it exposes its last usage
    (``tokens_source="backend"``), else they are cl100k counts of the messages and the reply
    (``"cl100k estimate"``). A call through :class:`timem.llm.client.LLM` may hide JSON retries.
    """

    purpose: str
    latency_ms: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tokens_source: str = "cl100k estimate"
    error: str | None = None


class RecallTrace(BaseModel):
    """Everything one recall decided, in pipeline order.

    Times are UTC-aware. ``candidates`` holds every L1 candidate with its semantic, BM25 and fused
    score and rank (``kept`` = in the top k); ``ancestors`` every ancestor met and whether it was
    added; ``gate.decisions`` the fate of each leaf and added ancestor (including the token
    budget); ``node_ids`` the memories in the final context; ``context_tokens`` its cl100k length
    (Mem Len); ``latency_ms`` the wall time per stage (``plan``, ``leaves``, ``ancestors``,
    ``gate``, ``items``, ``context``, ``answer``, ``total``), LLM time included where a stage calls the LLM;
    ``plan`` includes embedding the query when the centroid planner runs (one batch with the
    classifier's text), otherwise ``leaves`` does.
    """

    trace_id: str
    user_id: str
    query: str
    question_time: datetime
    created_at: datetime
    settings: dict[str, Any] = Field(default_factory=dict)  #: lambda, k, candidates, threshold, budget, tz
    plan: RecallPlan
    bm25_query: str = ""
    candidates: list[Candidate] = Field(default_factory=list)
    ancestors: list[AncestorRecord] = Field(default_factory=list)
    gate: GateOutcome
    node_ids: list[str] = Field(default_factory=list)
    context: str = ""
    context_tokens: int = 0
    #: memory items at the head of the context, with what each superseded (:mod:`timem.recall.items`)
    items: list[ItemUse] = Field(default_factory=list)
    #: memories the condensed context cut to a passage (:mod:`timem.recall.condense`): id -> its cl100k cap
    condensed: dict[str, int] = Field(default_factory=dict)
    condense_stems: list[str] = Field(default_factory=list)  #: the question's content stems the cuts were made by
    latency_ms: dict[str, float] = Field(default_factory=dict)
    llm_calls: list[LLMCall] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)  #: fallbacks and substitutions, in order
    answer: str | None = None
    answer_error: str | None = None
    #: the context's memories as stored when recalled (not serialised): lets :meth:`save` persist the
    #: context as ids, checked to rebuild to the same text
    _sources: dict[str, MemoryNode] = PrivateAttr(default_factory=dict)

    def attach_sources(self, nodes: Mapping[str, MemoryNode]) -> None:
        """Remember the context's memories (``node_ids`` -> node as stored, before any passage cut)."""
        self._sources = {nid: nodes[nid] for nid in self.node_ids if nid in nodes}

    @property
    def sources(self) -> dict[str, MemoryNode]:
        """The context's memories given to :meth:`attach_sources` (``{}`` if none were)."""
        return self._sources

    @property
    def llm_tokens(self) -> int:
        """Prompt plus completion tokens over all LLM calls (unknown counts as 0)."""
        return sum((c.prompt_tokens or 0) + (c.completion_tokens or 0) for c in self.llm_calls)
