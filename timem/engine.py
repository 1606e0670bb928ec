"""MemoryEngine: the facade the CLI and the studio use (ingest, chat turns, consolidation, recall, editing).

It owns one :class:`~timem.store.Store`, one embedder and an optional LLM client, all built
from one :class:`~timem.config.Config`. It contains no SQL and no prompt text; those live in
``store/`` and ``prompts/``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from timem import editing
from timem.chat_turns import check_names, check_question, check_turn, check_user_id
from timem.config import Complexity, Config
from timem.consolidation.consolidator import Consolidator, Progress, _no_progress
from timem.consolidation.segment_topics import TopicReport
from timem.datasets.base import ImportedUser
from timem.embed.protocol import Embedder
from timem.engine_chat import ASSISTANT_NAME, OnlineChat
from timem.engine_queue import ConsolidationQueue
from timem.engine_reads import StoreReads
from timem.errors import (
    ConfigError,
    ConsolidationIncomplete,
    InputError,
    LLMError,
)
from timem.llm.client import LLM
from timem.llm.protocol import ChatBackend, LLMClient
from timem.memory.facade import MemoryLayer
from timem.memory.writer import ItemWriter
from timem.models import MemoryNode
from timem.recall import pipeline
from timem.recall.gating import GateMode
from timem.recall.pipeline import AnswerResult, RecallResult
from timem.store import open_store
from timem.store.ports import MemoryStore
from timem.store.segtree_tables import SyncReport
from timem.tree.segtree import SegNode

__all__ = ["ASSISTANT_NAME", "IngestReport", "MemoryEngine"]


@dataclass
class IngestReport:
    """What one ingest run added: turns and nodes per level, per user."""

    users: list[str] = field(default_factory=list)
    turns_added: int = 0
    nodes_added: dict[str, int] = field(default_factory=dict)
    #: ids of stored turns whose text (or image caption) differs in the input
    changed_turns: list[str] = field(default_factory=list)
    #: how many of them were updated (``update_changed=True``), else 0
    turns_updated: int = 0

    def add_nodes(self, nodes: Sequence[MemoryNode]) -> None:
        for n in nodes:
            key = f"L{int(n.level)}"
            self.nodes_added[key] = self.nodes_added.get(key, 0) + 1


class MemoryEngine(StoreReads, MemoryLayer, OnlineChat, ConsolidationQueue):
    """Temporal Memory Tree engine over one DuckDB store.

    Args:
        config: resolved settings.
        store: an open store (its embedder id must match ``embedder``).
        embedder: text embedder (MiniLM by default).
        llm: LLM client for hybrid / abstractive L2–L5 (and LLM L1); ``None`` = verbatim L1, and L2–L5
            only where the consolidation mode is extractive.
    """

    def __init__(self, config: Config, store: MemoryStore, embedder: Embedder, llm: LLMClient | None) -> None:
        self.config, self.store, self.embedder, self.llm = config, store, embedder, llm
        self.consolidator = Consolidator(store, embedder, llm, config)
        self.item_writer = ItemWriter(store, embedder, llm, config)
        #: per user, the failures of the last memory-item extraction (``(session id, error)``; also audited)
        self.extraction_failures: dict[str, list[tuple[str, str]]] = {}

    @classmethod
    def open(cls, config: Config, *, with_llm: bool = True) -> MemoryEngine:
        """Build the embedder, open ``config.store.db_path`` and (if ``with_llm``) the configured LLM."""
        from timem.embed.batching import BatchingEmbedder
        from timem.embed.minilm import MiniLMEmbedder
        from timem.llm.factory import make_llm

        embedder: Embedder = MiniLMEmbedder(batch_size=config.embedding.embed_batch_size)
        if config.embedding.embed_batch_wait_ms > 0:  # concurrent one-text calls in one model call, same vectors
            embedder = BatchingEmbedder(embedder, config.embedding.embed_batch_wait_ms / 1000,
                                        config.embedding.embed_batch_size)
        store = open_store(config.store.db_path, embedder.model_id, embedder.dim, config.store.vector_index)
        llm = make_llm(config, store) if with_llm else None
        return cls(config, store, embedder, llm)

    def close(self) -> None:
        """Stop the queue worker if one runs (a job it was running is retried when the file is next opened), then
        close the store (the DuckDB file); the engine is unusable afterwards. Closing twice is harmless."""
        if self.queue_worker is not None:
            self.queue_worker.stop()
        self.store.close()

    def __enter__(self) -> MemoryEngine:
        """``with MemoryEngine.open(cfg) as eng: ...`` closes the store when the block ends, also on an error."""
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_consolidation_mode(self, mode: str) -> None:
        """Write new L2-L5 windows in ``mode`` from now on (every level; ``level_modes`` cleared).

        Existing nodes keep their own mode when they are re-consolidated.

        Raises:
            ConfigError: an unknown mode.
        """
        self.config = self.config.with_overrides(consolidation_mode=mode, level_modes={})
        self.consolidator.config = self.item_writer.config = self.config

    # ------------------------------------------------------------------ ingest (backfill)
    def ingest(self, users: Sequence[ImportedUser], *, flush: bool = True, upper_levels: bool = True,
               update_changed: bool = False, progress: Progress = _no_progress) -> IngestReport:
        """Store every user's turns (all users in one transaction: a bad value anywhere writes nothing),
        then consolidate each user in event-time order.

        Dataset sessions are complete, so they are marked ended; ``flush`` also closes the last day,
        week and month. ``upper_levels=False`` writes L1 only and leaves L2..L5 to a later
        :meth:`consolidate`. Running it again adds nothing (turn ids and windows are deterministic).

        A turn id that is already stored with another text (or image caption) is listed in the report's
        ``changed_turns`` and left as stored, unless ``update_changed``: then its text is replaced (audit
        action ``turn-updated`` with the old text), its L1 segment is written again (re-embedded,
        re-indexed) and every ancestor is marked stale, so consolidation rewrites it (with an LLM).

        Raises:
            InputError: a turn's text, speaker or caption holds a lone surrogate, a control character or
                only invisible characters (:func:`timem.datasets.base.check_text`), a user or session id holds
                ``:``, a turn id is not ``user:session:seq`` or two turns share one, or a text is longer than
                ``max_turn_chars``; nothing is written.
            ConsolidationIncomplete: after every user was imported, if some window could not be
                consolidated (its ``.report`` is the :class:`IngestReport`); the turns, the L1
                segments and every other window are stored.
        """
        report = IngestReport()
        read: set[str] = set()  # users whose memory items _consolidate read in this write
        failures: list[tuple[int, str, str]] = []
        written: list[MemoryNode] = []
        seen: set[str] = set()
        for user in users:
            check_user_id(user.user_id)
            for t in user.turns:
                check_turn(t, self.config.store.max_turn_chars)
                if t.id in seen:  # one of them would be dropped
                    raise InputError(f"two turns of the input have the id {t.id!r}; give each session of a user its "
                                     "own id and each turn its own seq", record=f"turn {t.id}", field="id")
                seen.add(t.id)
        changed = self.store.changed_turns([t for u in users for t in u.turns])
        report.changed_turns = [new.id for new, _ in changed]
        relinks: list[tuple[str, str]] = []
        with self.store.transaction():  # all users of the input or none
            if update_changed:
                for new, old in changed:
                    rewritten = self.store.update_turn_text(new)
                    # the memory items read from the old text go; the new segment and session are read again
                    self.store.drop_item_sources([l1 for l1, _ in rewritten], [f"session:{new.session_id}"])
                    for l1_id, parent in rewritten:
                        for a in editing.ancestors(self.store, parent) if parent else []:
                            self.store.update_node(a.id, stale=True)
                        if parent:
                            self.store.update_node(parent, stale=True)
                            relinks.append((l1_id, parent))
                    self.store.audit("turn-updated", new.user_id, None, {"turn_id": new.id, "old_text": old.text,
                                                                         "old_image_caption": old.image_caption})
                report.turns_updated = len(changed)
            for user in users:
                report.turns_added += self.store.add_turns(user.turns)
                for s in user.sessions:
                    self.store.end_session(user.user_id, s.session_id)
        try:
            for user in users:
                report.users.append(user.user_id)
                nodes = self._consolidate_user(user.user_id, failures, read, flush=flush, upper_levels=upper_levels,
                                               progress=progress)
                report.add_nodes(nodes)
                written += nodes
            for child, parent in relinks:  # the parent was not rewritten (no LLM / --l1-only): same id, same link
                self.store.relink(child, parent)
            self._extract_rest(report.users, read, with_llm=upper_levels)
            self.sync_segtree(report.users)
        finally:
            self.store.refresh_fts()
        if failures:
            raise ConsolidationIncomplete(failures, written, report=report)
        return report

    def _consolidate_user(self, user_id: str, failures: list[tuple[int, str, str]], read: set[str], *,
                          name_user: bool = True, **kw: Any) -> list[MemoryNode]:
        """:meth:`Consolidator.consolidate` for one user; a :class:`ConsolidationIncomplete` is folded
        into ``failures`` (window keys prefixed with the user id if ``name_user``) so that the caller
        can go on with other users and raise once. Returns the nodes written either way."""
        try:
            return self._consolidate(user_id, read, **kw)
        except ConsolidationIncomplete as exc:
            failures += [(lv, f"{user_id} {key}" if name_user else key, msg) for lv, key, msg in exc.failures]
            return exc.written

    def _extract_rest(self, user_ids: Sequence[str], read: set[str], *, with_llm: bool = True) -> None:
        """:meth:`extract_items` for the users not in ``read``, those whose items :meth:`_consolidate` did not
        read in this write (each write reads them once: an LLM extraction that fails is not asked twice)."""
        rest = [u for u in user_ids if u not in read]
        if rest:
            self.extract_items(rest, with_llm=with_llm)

    def _consolidate(self, user_id: str, read: set[str], **kw: Any) -> list[MemoryNode]:
        """:meth:`Consolidator.consolidate`, with the memory items read between L1 and L2-L5 so that an L5
        profile lists the items that hold at its window's end (:mod:`timem.consolidation.profile_facts`); ``user_id`` is
        added to ``read`` once they are (the caller's :meth:`_extract_rest` then skips it).

        Raises:
            ConsolidationIncomplete: as the consolidator; ``.written`` includes the L1 nodes of the first pass.
        """
        if not (self.config.memory.memory_items and kw.get("upper_levels", True)):
            return self.consolidator.consolidate(user_id, **kw)
        first = self.consolidator.consolidate(user_id, **{**kw, "upper_levels": False})
        self.extract_items([user_id])
        read.add(user_id)
        try:
            return first + self.consolidator.consolidate(user_id, **kw)
        except ConsolidationIncomplete as exc:
            exc.written[:0] = first
            raise

    def end_session(self, user_id: str, session_id: str) -> list[MemoryNode]:
        """Mark a session ended and consolidate what that closes (its L2 at least).

        Raises:
            ConsolidationIncomplete: see :meth:`Consolidator.consolidate`; the session is ended anyway.
        """
        self.store.end_session(user_id, session_id)
        return self._consolidate_online(user_id)

    def _consolidate_online(self, user_id: str, *, sync_tree: bool = True) -> list[MemoryNode]:
        """After a chat write: consolidate what closed, then (also when that fails) read the memory items
        left, bring the segment tree in step (unless not ``sync_tree``: the queue worker does it in a step of its
        own) and refresh the BM25 index."""
        read: set[str] = set()
        try:
            return self._consolidate(user_id, read)
        finally:
            self._extract_rest([user_id], read)
            if sync_tree:
                self.sync_segtree([user_id])
            self.store.refresh_fts()

    def consolidate(self, user_id: str | None = None, *, flush: bool = False,
                    progress: Progress = _no_progress) -> list[MemoryNode]:
        """Consolidate due windows of one user (or all users); ``flush`` closes every open window.

        Raises:
            ConsolidationIncomplete: after every user was tried, if some window failed (see
                :meth:`Consolidator.consolidate`).
        """
        nodes: list[MemoryNode] = []
        read: set[str] = set()
        failures: list[tuple[int, str, str]] = []
        try:
            for uid in [user_id] if user_id else self.store.users():
                nodes += self._consolidate_user(uid, failures, read, name_user=user_id is None, flush=flush,
                                                progress=progress)
        finally:
            self._extract_rest([user_id] if user_id else self.store.users(), read)
            self.sync_segtree([user_id] if user_id else self.store.users())
            self.store.refresh_fts()
        if failures:
            raise ConsolidationIncomplete(failures, nodes)
        return nodes

    def sync_segtree(self, user_ids: Sequence[str], *, rebuild: bool = False) -> dict[str, SyncReport]:
        """Append the users' new L1 memories to their SegTreeMem segment trees online (or rebuild them when the
        L1 memories changed otherwise); see :func:`timem.store.segtree_tables.sync`."""
        return self.store.segment_tree.sync_users(user_ids, self.config.recall.segtree_threshold,
                                        self.config.recall.segtree_max_children, rebuild=rebuild)

    def segment_tree(self, user_id: str) -> tuple[list[SegNode], SyncReport | None]:
        """The user's SegTreeMem segment tree (:mod:`timem.tree.segtree`), synced first if it is behind the L1
        memories: ``(nodes, the sync's report or None)``."""
        cfg = self.config
        report = None
        rc = cfg.recall
        if not self.store.segment_tree.is_current(user_id, rc.segtree_threshold, rc.segtree_max_children):
            report = self.sync_segtree([user_id])[user_id]
        return self.store.segment_tree.load(user_id), report

    def summarise_segment_tree(self, user_id: str, *, min_height: int = 2, limit: int | None = None) -> TopicReport:
        """One-line LLM topics for the user's closed segment-tree nodes (:mod:`timem.consolidation.segment_topics`);
        the tree is synced first.

        Raises:
            NotFoundError: unknown user. LLMError: no LLM is configured, or it could not be reached.
        """
        from timem.consolidation.segment_topics import summarise

        self.require_user(user_id)
        if self.llm is None:
            raise LLMError("segment-tree topics need an LLM; pass --llm local or --llm openai")
        self.segment_tree(user_id)
        return summarise(self.store, self.llm, user_id, min_height=min_height, limit=limit)

    # ------------------------------------------------------------------ correcting and erasing
    def edit_memory(self, node_id: str, content: str, *, actor: str = "user") -> MemoryNode:
        """New content for a memory; ancestors re-consolidated (see :mod:`timem.editing`)."""
        return editing.edit_memory(self.store, self.consolidator, node_id, content, actor=actor)

    def delete_memories(self, node_ids: Sequence[str], *, hard: bool = False, actor: str = "user") -> dict[str, float]:
        """Soft-delete (undoable) or, with ``hard``, erase memories; ancestors re-consolidated without them.

        Returns the file rewrite's ``seconds``, ``bytes_before``, ``bytes_after`` for a hard erase, else ``{}``.
        """
        if hard:
            return editing.erase(self.store, self.consolidator, node_ids, actor=actor)
        editing.soft_delete(self.store, self.consolidator, node_ids, actor=actor)
        return {}

    def compact(self) -> dict[str, float]:
        """Rewrite the database file (what every hard erase does last): ``seconds``, ``bytes_before``,
        ``bytes_after``."""
        return self.store.compact()

    def restore_memory(self, node_id: str, *, actor: str = "user") -> None:
        """Undo a soft delete."""
        editing.restore(self.store, self.consolidator, node_id, actor=actor)

    def erase_user(self, user_id: str, *, actor: str = "user") -> dict[str, float]:
        """Erase every trace of a user (turns, nodes, vectors, FTS, traces, LLM cache); returns the rows removed
        per table and the compaction cost (``file_seconds``, ``file_bytes_before``, ``file_bytes_after``)."""
        return editing.erase_user(self.store, user_id, actor=actor)

    # ------------------------------------------------------------------ recall and answers
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

    def recall(self, user_id: str, query: str, question_time: datetime | None = None, *,
               complexity: Complexity | None = None, gate: GateMode | None = None, planner: str | None = None,
               participants: Sequence[str] = (), persist: bool = True, config: Config | None = None) -> RecallResult:
        """Recall ``user_id``'s memories for ``query`` (plan → leaves → propagation → gate → context).

        See :func:`timem.recall.pipeline.recall` for the stages and the trace. Queued chat writes of the user are
        seen: their L1 segments are written first if the queue worker has not yet (read-your-writes,
        :mod:`timem.engine_queue`). ``complexity`` / ``gate`` /
        ``planner`` override the planner's complexity, ``config.recall.gate`` and ``config.recall.planner`` for this
        call; ``config`` replaces the engine's settings for this call (e.g. a benchmark recipe).
        The LLM planner or gate uses the engine's LLM when one is configured.

        Raises:
            InputError: the query is empty or invisible-only, or holds a lone surrogate or a control character, or
                ``question_time`` lies outside the years 2-9998 (:func:`timem.chat_turns.check_question`); nothing
                is recalled or stored.
            ConfigError: an LLM planner / gate asked for by name without an LLM.
            EmbeddingError: the query cannot be embedded.
        """
        check_question(query, question_time, (config or self.config).time.tz)
        self.read_your_writes(user_id)
        return pipeline.recall(self.store, self.embedder, self.llm, config or self.config, user_id, query,
                               question_time, complexity_override=complexity, gate_override=gate,
                               planner_override=planner, participants=participants, persist=persist)

    def ask(self, user_id: str, query: str, question_time: datetime | None = None, *,
            complexity: Complexity | None = None, gate: GateMode | None = None, planner: str | None = None,
            participants: Sequence[str] = (), persist: bool = True, config: Config | None = None,
            asker: str | None = None) -> AnswerResult:
        """Recall (as :meth:`recall`), then answer from the context with one LLM call; the trace holds both.
        ``config`` replaces the engine's settings for this call; ``asker`` (a chat's speaker) is answered as
        "you"; pinned items go into the system message (:meth:`pin_item`).

        Raises:
            ConfigError: no LLM is configured (use :meth:`recall` for the context alone).
            InputError: as :meth:`recall`, or ``asker`` is empty or not one line of text
                (:func:`timem.chat_turns.check_names`).
            LLMError: the answer call failed (the trace is saved with ``answer_error``).
        """
        check_question(query, question_time, (config or self.config).time.tz)
        if asker is not None:  # it goes into the system message
            check_names(asker=asker)
        if self.llm is None:
            raise ConfigError("answering needs an LLM; set llm_backend to 'local' or 'openai', "
                              "or ask for the context alone (--recall-only / MemoryEngine.recall).")
        self.read_your_writes(user_id)
        return pipeline.answer(self.store, self.embedder, self.llm, config or self.config, user_id, query,
                               question_time, complexity_override=complexity, gate_override=gate,
                               planner_override=planner, participants=participants, persist=persist, asker=asker)

    def evaluate_recall(self, user_id: str, questions: Iterable[Any], *, complexity: str | None = None,
                        gate: str | None = None, participants: Sequence[str] = ()) -> dict[str, Any]:
        """Offline recall quality of one user's questions: :func:`timem.recall.evaluate.evaluate_recall`
        (gold-evidence coverage and answer-in-context per category; traces not persisted)."""
        from timem.recall.evaluate import evaluate_recall

        return evaluate_recall(self.store, self.embedder, None, self.config, user_id, questions,
                               complexity_override=complexity, gate_override=gate,  # type: ignore[arg-type]
                               participants=participants)
