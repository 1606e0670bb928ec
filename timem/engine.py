"""MemoryEngine: the facade the CLI, the studio, the service and the bench use; the one door.

It owns one :class:`~timem.store.Store`, one embedder and an optional LLM client (all built from one
:class:`~timem.config.Config`, shared by its parts as an :class:`~timem.engine_reads.EngineCore`), and its parts,
each built here with its dependencies:

* :attr:`MemoryEngine.reads` (:class:`~timem.engine_reads.StoreReads`): users, turns, nodes, traces, exports;
* :attr:`MemoryEngine.items` (:class:`~timem.engine_items.MemoryItems`): memory items, forgetting, pinning;
* :attr:`MemoryEngine.writes` (:class:`~timem.engine_writes.MemoryWrites`): ingest, consolidation, editing;
* :attr:`MemoryEngine.queue` (:class:`~timem.engine_queue.ConsolidationQueue`): chat writes' consolidation jobs;
* :attr:`MemoryEngine.recaller` (:class:`~timem.engine_recall.Recaller`): recall and answers;
* :attr:`MemoryEngine.chat` (:class:`~timem.engine_chat.OnlineChat`): chat writes and chat turns.

Every public method of the parts is a method of the engine (a delegation; those of ``reads`` in
:class:`~timem.engine_read_methods.StoreReadMethods`, a base class). It contains no SQL and no prompt
text; those live in ``store/`` and ``prompts/``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from timem.chat_turns import ChatTurn
from timem.config import Complexity, Config
from timem.consolidation.consolidator import Consolidator
from timem.consolidation.segment_topics import TopicReport
from timem.datasets.base import ImportedUser
from timem.editing import Restored
from timem.embed.protocol import Embedder
from timem.engine_chat import ASSISTANT_NAME, OnlineChat
from timem.engine_items import MemoryItems
from timem.engine_queue import ConsolidationQueue, QueueWorker
from timem.engine_read_methods import StoreReadMethods
from timem.engine_reads import EngineCore, StoreReads
from timem.engine_recall import Recaller
from timem.engine_writes import IngestReport, MemoryWrites
from timem.llm.protocol import ChatBackend, LLMClient
from timem.memory.forget import ForgetPreview
from timem.memory.writer import ExtractionReport, ItemWriter
from timem.models import MemoryItem, MemoryNode, Turn, WriteRequest
from timem.progress import Progress, no_progress
from timem.recall.answering import AnswerResult
from timem.recall.evaluate import EVALUATION_OPTIONS
from timem.recall.gating import GateMode
from timem.recall.options import RecallOptions, recall_options
from timem.recall.pipeline import RecallResult
from timem.store import open_store
from timem.store.jobs import ConsolidationJob
from timem.store.ports import MemoryStore
from timem.store.segtree_tables import SyncReport
from timem.tree.segtree import SegNode

__all__ = ["ASSISTANT_NAME", "IngestReport", "MemoryEngine"]


class MemoryEngine(StoreReadMethods):
    """Temporal Memory Tree engine over one DuckDB store.

    Args:
        config: resolved settings.
        store: an open store (its embedder id must match ``embedder``).
        embedder: text embedder (MiniLM by default).
        llm: LLM client for hybrid / abstractive L2–L5 (and LLM L1); ``None`` = verbatim L1, and L2–L5
            only where the consolidation mode is extractive.
    """

    def __init__(self, config: Config, store: MemoryStore, embedder: Embedder, llm: LLMClient | None) -> None:
        self.core = core = EngineCore(config, store, embedder, llm)
        self.consolidator = Consolidator(store, embedder, llm, config)
        self.item_writer = ItemWriter(store, embedder, llm, config)
        self.reads = StoreReads(core)
        self.items = MemoryItems(core, self.consolidator, self.item_writer, self.reads)
        self.writes = MemoryWrites(core, self.consolidator, self.items, self.reads)
        self.queue = ConsolidationQueue(core, self.consolidator, self.writes)
        self.recaller = Recaller(core, self.queue)
        self.chat = OnlineChat(core, self.reads, self.items, self.queue, self.recaller)

    @classmethod
    def open(cls, config: Config, *, with_llm: bool = True) -> MemoryEngine:
        """Build the embedder, open ``config.store.db_path`` and (if ``with_llm``) the configured LLM."""
        from timem.embed.batching import BatchingEmbedder
        from timem.embed.minilm import MiniLMEmbedder
        from timem.llm.factory import make_llm

        embedder: Embedder = MiniLMEmbedder(batch_size=config.embedding.embed_batch_size,
                                            backend=config.embedding.embed_backend, cache_dir=config.store.cache_dir)
        if config.embedding.embed_batch_wait_ms > 0:  # concurrent one-text calls in one model call, same vectors
            embedder = BatchingEmbedder(embedder, config.embedding.embed_batch_wait_ms / 1000,
                                        config.embedding.embed_batch_size)
        store = open_store(config.store.db_path, embedder.model_id, embedder.dim, config.store.vector_index,
                           config.store.working_set_mb, config.store.duckdb_memory_mb)
        llm = make_llm(config, store) if with_llm else None
        return cls(config, store, embedder, llm)

    def close(self) -> None:
        """Stop the queue worker if one runs (a job it was running is retried when the file is next opened), then
        close the store (the DuckDB file); the engine is unusable afterwards. Closing twice is harmless."""
        if self.queue.worker is not None:
            self.queue.worker.stop()
        self.store.close()

    def __enter__(self) -> MemoryEngine:
        """``with MemoryEngine.open(cfg) as eng: ...`` closes the store when the block ends, also on an error."""
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def config(self) -> Config:
        """The engine's settings (every part reads them from the shared core)."""
        return self.core.config

    @config.setter
    def config(self, config: Config) -> None:
        self.core.config = config

    @property
    def store(self) -> MemoryStore:
        """The store (one DuckDB file) this engine owns."""
        return self.core.store

    @property
    def embedder(self) -> Embedder:
        """The text embedder of the store's vectors."""
        return self.core.embedder

    @property
    def llm(self) -> LLMClient | None:
        """The LLM client, or ``None`` (no answers; verbatim L1). Setting it reaches every part but the
        consolidator and the item writer, which keep their own (set ``consolidator.llm`` too)."""
        return self.core.llm

    @llm.setter
    def llm(self, llm: LLMClient | None) -> None:
        self.core.llm = llm

    def set_consolidation_mode(self, mode: str) -> None:
        """Write new L2-L5 windows in ``mode`` from now on (every level; ``level_modes`` cleared).

        Existing nodes keep their own mode when they are re-consolidated.

        Raises:
            ConfigError: an unknown mode.
        """
        self.config = self.config.with_overrides(consolidation_mode=mode, level_modes={})
        self.consolidator.config = self.item_writer.config = self.config

    def extract_items(self, user_ids: Sequence[str], *, with_llm: bool = True) -> dict[str, ExtractionReport]:
        """As :meth:`timem.engine_items.MemoryItems.extract_items`."""
        return self.items.extract_items(user_ids, with_llm=with_llm)

    @property
    def items_use_llm(self) -> bool:
        """As :attr:`timem.engine_items.MemoryItems.items_use_llm`."""
        return self.items.items_use_llm

    def forget(self, user_id: str, text: str = "", *, item_ids: Sequence[str] = (), confirm: bool = False,
               actor: str = "user") -> ForgetPreview:
        """As :meth:`timem.engine_items.MemoryItems.forget`, after the user's writes still queued for consolidation
        are consolidated (:meth:`drain_queue`; a failing job stays ``failed`` in the queue), so that it finds what
        was just said (the memory service's worker may not have read it yet)."""
        self.queue.drain_queue(user_id, raise_errors=False)
        return self.items.forget(user_id, text, item_ids=item_ids, confirm=confirm, actor=actor)

    def memory_items(self, user_id: str, *, status: str | None = "active", reopen: bool = True) -> list[MemoryItem]:
        """As :meth:`timem.engine_items.MemoryItems.memory_items`."""
        return self.items.memory_items(user_id, status=status, reopen=reopen)

    def memory_item(self, item_id: str) -> MemoryItem:
        """As :meth:`timem.engine_items.MemoryItems.memory_item`."""
        return self.items.memory_item(item_id)

    def forget_items(self, item_ids: Sequence[str], *, actor: str = "user") -> None:
        """As :meth:`timem.engine_items.MemoryItems.forget_items`."""
        return self.items.forget_items(item_ids, actor=actor)

    def pin_item(self, item_id: str, pinned: bool = True, *, actor: str = "user") -> MemoryItem:
        """As :meth:`timem.engine_items.MemoryItems.pin_item`."""
        return self.items.pin_item(item_id, pinned, actor=actor)

    def ingest(self, users: Sequence[ImportedUser], *, flush: bool = True, upper_levels: bool = True,
               update_changed: bool = False, progress: Progress = no_progress) -> IngestReport:
        """As :meth:`timem.engine_writes.MemoryWrites.ingest`."""
        return self.writes.ingest(users, flush=flush, upper_levels=upper_levels, update_changed=update_changed,
                                  progress=progress)

    def end_session(self, user_id: str, session_id: str) -> list[MemoryNode]:
        """As :meth:`timem.engine_writes.MemoryWrites.end_session`."""
        return self.writes.end_session(user_id, session_id)

    def consolidate(self, user_id: str | None = None, *, flush: bool = False,
                    progress: Progress = no_progress) -> list[MemoryNode]:
        """As :meth:`timem.engine_writes.MemoryWrites.consolidate`."""
        return self.writes.consolidate(user_id, flush=flush, progress=progress)

    def sync_segtree(self, user_ids: Sequence[str], *, rebuild: bool = False) -> dict[str, SyncReport]:
        """As :meth:`timem.engine_writes.MemoryWrites.sync_segtree`."""
        return self.writes.sync_segtree(user_ids, rebuild=rebuild)

    def segment_tree(self, user_id: str) -> tuple[list[SegNode], SyncReport | None]:
        """As :meth:`timem.engine_writes.MemoryWrites.segment_tree`."""
        return self.writes.segment_tree(user_id)

    def summarise_segment_tree(self, user_id: str, *, min_height: int = 2, limit: int | None = None) -> TopicReport:
        """As :meth:`timem.engine_writes.MemoryWrites.summarise_segment_tree`."""
        return self.writes.summarise_segment_tree(user_id, min_height=min_height, limit=limit)

    def edit_memory(self, node_id: str, content: str, *, actor: str = "user") -> MemoryNode:
        """As :meth:`timem.engine_writes.MemoryWrites.edit_memory`."""
        return self.writes.edit_memory(node_id, content, actor=actor)

    def delete_memories(self, node_ids: Sequence[str], *, hard: bool = False, actor: str = "user") -> dict[str, float]:
        """As :meth:`timem.engine_writes.MemoryWrites.delete_memories`."""
        return self.writes.delete_memories(node_ids, hard=hard, actor=actor)

    def compact(self) -> dict[str, float]:
        """As :meth:`timem.engine_writes.MemoryWrites.compact`."""
        return self.writes.compact()

    def restore_memory(self, node_id: str, *, actor: str = "user") -> None:
        """As :meth:`timem.engine_writes.MemoryWrites.restore_memory` (what came back: :meth:`restore_memories`)."""
        self.writes.restore_memory(node_id, actor=actor)

    def restore_memories(self, user_id: str, node_ids: Sequence[str], *, actor: str = "user") -> list[Restored]:
        """As :meth:`timem.engine_writes.MemoryWrites.restore_memories`."""
        return self.writes.restore_memories(user_id, node_ids, actor=actor)

    def erase_user(self, user_id: str, *, actor: str = "user") -> dict[str, float]:
        """As :meth:`timem.engine_writes.MemoryWrites.erase_user`."""
        return self.writes.erase_user(user_id, actor=actor)

    @property
    def queues_writes(self) -> bool:
        """As :attr:`timem.engine_queue.ConsolidationQueue.queues_writes`."""
        return self.queue.queues_writes

    def start_queue_worker(self, lock: AbstractContextManager[Any] | None = None, *,
                           poll_seconds: float = 1.0,
                           user_lock: Callable[[str], AbstractContextManager[Any]] | None = None) -> QueueWorker:
        """As :meth:`timem.engine_queue.ConsolidationQueue.start_queue_worker`."""
        return self.queue.start_queue_worker(lock, poll_seconds=poll_seconds, user_lock=user_lock)

    def queue_consolidation(self, user_id: str, session_ids: Sequence[str] = ()) -> list[MemoryNode]:
        """As :meth:`timem.engine_queue.ConsolidationQueue.queue_consolidation`."""
        return self.queue.queue_consolidation(user_id, session_ids)

    def drain_queue(self, user_id: str | None = None, *, raise_errors: bool = True) -> list[MemoryNode]:
        """As :meth:`timem.engine_queue.ConsolidationQueue.drain_queue`."""
        return self.queue.drain_queue(user_id, raise_errors=raise_errors)

    def run_jobs(self, jobs: Sequence[ConsolidationJob], lock: AbstractContextManager[Any] | None = None
                 ) -> list[MemoryNode]:
        """As :meth:`timem.engine_queue.ConsolidationQueue.run_jobs`."""
        return self.queue.run_jobs(jobs, lock)

    def read_your_writes(self, user_id: str) -> list[MemoryNode]:
        """As :meth:`timem.engine_queue.ConsolidationQueue.read_your_writes`."""
        return self.queue.read_your_writes(user_id)

    def settle(self, user_id: str, timeout: float | None = None) -> bool:
        """As :meth:`timem.engine_queue.ConsolidationQueue.settle`."""
        return self.queue.settle(user_id, timeout)

    def queue_status(self, user_prefix: str = "", *, failed_limit: int = 20) -> dict[str, Any]:
        """As :meth:`timem.engine_queue.ConsolidationQueue.queue_status`."""
        return self.queue.queue_status(user_prefix, failed_limit=failed_limit)

    def retry_failed_jobs(self, user_prefix: str = "") -> int:
        """As :meth:`timem.engine_queue.ConsolidationQueue.retry_failed_jobs`."""
        return self.queue.retry_failed_jobs(user_prefix)

    def llm_backend_wrapped(self, wrap: Callable[[ChatBackend], ChatBackend]) -> AbstractContextManager[None]:
        """As :meth:`timem.engine_recall.Recaller.llm_backend_wrapped`."""
        return self.recaller.llm_backend_wrapped(wrap)

    def recall(self, user_id: str, query: str, question_time: datetime | None = None,
               options: RecallOptions | None = None, *, complexity: Complexity | None = None,
               gate: GateMode | None = None, planner: str | None = None, participants: Sequence[str] = (),
               persist: bool = True, config: Config | None = None) -> RecallResult:
        """As :meth:`timem.engine_recall.Recaller.recall`; the options as one value or as keywords
        (:func:`timem.recall.options.recall_options`).

        Raises:
            NotFoundError: no turn or memory of ``user_id`` is stored (nothing is recalled and no trace stored);
                as the CLI, the service and :meth:`export_user` do.
        """
        self.require_user(user_id)
        return self.recaller.recall(user_id, query, question_time, recall_options(
            options, complexity=complexity, gate=gate, planner=planner, participants=participants, persist=persist,
            config=config))

    def ask(self, user_id: str, query: str, question_time: datetime | None = None,
            options: RecallOptions | None = None, *, complexity: Complexity | None = None,
            gate: GateMode | None = None, planner: str | None = None, participants: Sequence[str] = (),
            persist: bool = True, config: Config | None = None, asker: str | None = None) -> AnswerResult:
        """As :meth:`timem.engine_recall.Recaller.ask`; the options as one value or as keywords.

        Raises:
            NotFoundError: as :meth:`recall`.
        """
        self.require_user(user_id)
        return self.recaller.ask(user_id, query, question_time, recall_options(
            options, complexity=complexity, gate=gate, planner=planner, participants=participants, persist=persist,
            config=config, asker=asker))

    def evaluate_recall(self, user_id: str, questions: Iterable[Any],
                        options: RecallOptions = EVALUATION_OPTIONS) -> dict[str, Any]:
        """As :meth:`timem.engine_recall.Recaller.evaluate_recall`."""
        return self.recaller.evaluate_recall(user_id, questions, options)

    def add_exchange(self, user_id: str, session_id: str, user_text: str, assistant_text: str,
                     event_time: datetime, *, user_name: str = "User", assistant_name: str = ASSISTANT_NAME,
                     consolidate: bool = True, request: WriteRequest | None = None) -> list[MemoryNode]:
        """As :meth:`timem.engine_chat.OnlineChat.add_exchange`."""
        return self.chat.add_exchange(user_id, session_id, user_text, assistant_text, event_time, user_name=user_name,
                                      assistant_name=assistant_name, consolidate=consolidate, request=request)

    def add_message(self, user_id: str, session_id: str, text: str, event_time: datetime, *,
                    user_name: str = "User", request: WriteRequest | None = None, consolidate: bool = False) -> Turn:
        """As :meth:`timem.engine_chat.OnlineChat.add_message`."""
        return self.chat.add_message(user_id, session_id, text, event_time, user_name=user_name, request=request,
                                     consolidate=consolidate)

    def add_reply(self, user_id: str, session_id: str, text: str, event_time: datetime, *,
                  assistant_name: str = ASSISTANT_NAME, consolidate: bool = True,
                  request: WriteRequest | None = None) -> list[MemoryNode]:
        """As :meth:`timem.engine_chat.OnlineChat.add_reply`."""
        return self.chat.add_reply(user_id, session_id, text, event_time, assistant_name=assistant_name,
                                   consolidate=consolidate, request=request)

    def chat_config(self) -> Config:
        """As :meth:`timem.engine_chat.OnlineChat.chat_config`."""
        return self.chat.chat_config()

    def remember(self, user_id: str, session_id: str, message: str, event_time: datetime, *,
                 reply: str | None = None, user_name: str = "User", assistant_name: str = ASSISTANT_NAME,
                 consolidate: bool = True, request: WriteRequest | None = None) -> list[MemoryNode]:
        """As :meth:`timem.engine_chat.OnlineChat.remember`."""
        return self.chat.remember(user_id, session_id, message, event_time, reply=reply, user_name=user_name,
                                  assistant_name=assistant_name, consolidate=consolidate, request=request)

    def write_request(self, user_id: str, key: str) -> tuple[str, list[str]] | None:
        """As :meth:`timem.engine_chat.OnlineChat.write_request`."""
        return self.chat.write_request(user_id, key)

    def chat_turn(self, user_id: str, session_id: str, text: str, event_time: datetime, *,
                  user_name: str = "User", assistant_name: str = ASSISTANT_NAME, consolidate: bool = True,
                  confirm_forget: bool = False) -> ChatTurn:
        """As :meth:`timem.engine_chat.OnlineChat.chat_turn`."""
        return self.chat.chat_turn(user_id, session_id, text, event_time, user_name=user_name,
                                   assistant_name=assistant_name, consolidate=consolidate,
                                   confirm_forget=confirm_forget)

    def warm_recall(self) -> None:
        """As :meth:`timem.engine_recall.Recaller.warm`."""
        self.recaller.warm()

    def warm_chat(self, user_id: str, user_name: str = "User", *,
                  store_lock: AbstractContextManager[Any] | None = None) -> int | None:
        """As :meth:`timem.engine_chat.OnlineChat.warm_chat`."""
        return self.chat.warm_chat(user_id, user_name, store_lock=store_lock)
