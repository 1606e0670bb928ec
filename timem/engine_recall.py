"""The engine facade's recall part (:class:`timem.engine.MemoryEngine` owns one): recall, answers and offline
recall evaluation over the shared core (:mod:`timem.recall.pipeline`), after the queue's read-your-writes step."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from timem.chat_turns import check_names, check_question
from timem.engine_queue import ConsolidationQueue
from timem.engine_reads import EngineCore, EnginePart
from timem.errors import ConfigError
from timem.llm.client import LLM
from timem.llm.protocol import ChatBackend
from timem.recall import answering, pipeline
from timem.recall.answering import AnswerResult
from timem.recall.evaluate import EVALUATION_OPTIONS, evaluate_recall
from timem.recall.options import DEFAULT_OPTIONS, RecallOptions
from timem.recall.pipeline import RecallResult
from timem.recall.planner import CentroidPlanner
from timem.tokens import count_tokens


class Recaller(EnginePart):
    """Recall and answer methods of the engine facade."""

    def __init__(self, core: EngineCore, queue: ConsolidationQueue) -> None:
        super().__init__(core)
        self.queue = queue

    @contextmanager
    def llm_backend_wrapped(self, wrap: Callable[[ChatBackend], ChatBackend]) -> Iterator[None]:
        """Within the block, the LLM's chat backend is ``wrap(backend)`` (e.g. to release a lock while the model
        computes, :mod:`timem.ui.jobs`); nothing happens without an LLM or with a client that is not a
        :class:`timem.llm.client.LLM` over a backend."""
        llm = self.llm
        if not isinstance(llm, LLM):
            yield
            return
        backend = llm.backend
        llm.backend = wrap(backend)
        try:
            yield
        finally:
            llm.backend = backend

    def warm(self) -> None:
        """Load, once per process, what the first recall would otherwise load: the embedder's model, the centroid
        planner's class centroids (its ~120 example questions embedded) and the cl100k tokenizer: ~3.5 s on 2 shared
        cores with the ONNX embedder (torch: ~5 s, 1.2 s and 0.2 s); a recall after it takes ~0.08 s where a first
        one took 3.7 s (torch: 5-9 s). Nothing is read or written in the store.

        Raises:
            EmbeddingError: the embedder cannot be loaded (a recall would raise it too).
        """
        CentroidPlanner(self.embedder)  # embeds its examples (the model loads first); an LLM planner falls back to it
        count_tokens("The memory is warming up.")

    def recall(self, user_id: str, query: str, question_time: datetime | None = None,
               options: RecallOptions = DEFAULT_OPTIONS) -> RecallResult:
        """Recall ``user_id``'s memories for ``query`` (plan → leaves → propagation → gate → context).

        See :func:`timem.recall.pipeline.recall` for the stages and the trace. Queued chat writes of the user are
        seen: their L1 segments are written first if the queue worker has not yet (read-your-writes,
        :mod:`timem.engine_queue`). ``options`` (:class:`RecallOptions`) override the planner's complexity,
        ``config.recall.gate`` and ``config.recall.planner`` for this call; ``options.config`` replaces the engine's
        settings for this call (e.g. a benchmark recipe). The LLM planner or gate uses the engine's LLM when one is
        configured.

        Raises:
            InputError: the query is empty or invisible-only, or holds a lone surrogate or a control character, or
                ``question_time`` lies outside the years 2-9998 (:func:`timem.chat_turns.check_question`); nothing
                is recalled or stored.
            ConfigError: an LLM planner / gate asked for by name without an LLM.
            EmbeddingError: the query cannot be embedded.
        """
        check_question(query, question_time, (options.config or self.config).time.tz,
                       (options.config or self.config).store.max_turn_chars)
        self.queue.read_your_writes(user_id)
        return pipeline.recall(self.store, self.embedder, self.llm, self.config, user_id, query, question_time,
                               options)

    def ask(self, user_id: str, query: str, question_time: datetime | None = None,
            options: RecallOptions = DEFAULT_OPTIONS) -> AnswerResult:
        """Recall (as :meth:`recall`), then answer from the context with one LLM call; the trace holds both.
        ``options.config`` replaces the engine's settings for this call; ``options.asker`` (a chat's speaker) is
        answered as "you"; pinned items go into the system message (:meth:`MemoryItems.pin_item`).

        Raises:
            ConfigError: no LLM is configured (use :meth:`recall` for the context alone).
            InputError: as :meth:`recall`, or ``asker`` is empty or not one line of text
                (:func:`timem.chat_turns.check_names`).
            LLMError: the answer call failed (the trace is saved with ``answer_error``).
        """
        check_question(query, question_time, (options.config or self.config).time.tz,
                       (options.config or self.config).store.max_turn_chars)
        if options.asker is not None:  # it goes into the system message
            check_names(asker=options.asker)
        if self.llm is None:
            raise ConfigError("answering needs an LLM; set llm_backend to 'local' or 'openai', "
                              "or ask for the context alone (--recall-only / MemoryEngine.recall).")
        self.queue.read_your_writes(user_id)
        return answering.answer(self.store, self.embedder, self.llm, self.config, user_id, query, question_time,
                               options)

    def evaluate_recall(self, user_id: str, questions: Iterable[Any],
                        options: RecallOptions = EVALUATION_OPTIONS) -> dict[str, Any]:
        """Offline recall quality of one user's questions: :func:`timem.recall.evaluate.evaluate_recall`
        (gold-evidence coverage and answer-in-context per category; traces not persisted by default)."""
        return evaluate_recall(self.store, self.embedder, None, self.config, user_id, questions, options=options)

