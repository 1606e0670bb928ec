"""Complexity-aware hierarchical recall over the Temporal Memory Tree (TiMem §3.3).

Pipeline: :mod:`~timem.recall.planner` (complexity, keywords, time window) ->
:mod:`~timem.recall.leaves` (hybrid semantic + BM25 L1 selection) -> :mod:`~timem.recall.ancestors`
(propagation to the plan's levels) -> :mod:`~timem.recall.gating` (LLM / score / off, then the token
budget) -> :mod:`~timem.recall.context` (dated lines by level); every decision lands in a
:class:`~timem.recall.trace.RecallTrace`. Entry points: :func:`recall`, :func:`answer`;
offline quality: :func:`~timem.recall.evaluate.evaluate_recall`; one recall's options: :class:`RecallOptions`.
"""

from timem.recall.answering import AnswerResult, answer
from timem.recall.options import RecallOptions
from timem.recall.pipeline import RecallResult, recall
from timem.recall.planner import CentroidPlanner, LLMPlanner, Planner, RecallPlan, evaluate_planner
from timem.recall.trace import RecallTrace
from timem.recall.trace_store import load_traces

__all__ = ["AnswerResult", "CentroidPlanner", "LLMPlanner", "Planner", "RecallOptions", "RecallPlan", "RecallResult",
           "RecallTrace", "answer", "evaluate_planner", "load_traces", "recall"]
