"""The engine facade's write part (:class:`timem.engine.MemoryEngine` owns one): ingest (backfill), consolidation
of due windows, the segment tree, and correcting and erasing memories (:mod:`timem.editing`).

Chat writes go through :mod:`timem.engine_chat` and :mod:`timem.engine_queue`, which call
:meth:`MemoryWrites.consolidate_online` after a write.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from timem import editing
from timem.chat_turns import check_turn, check_user_id
from timem.consolidation.consolidator import Consolidator
from timem.consolidation.segment_topics import TopicReport
from timem.datasets.base import ImportedUser
from timem.engine_items import MemoryItems
from timem.engine_reads import EngineCore, EnginePart, StoreReads
from timem.errors import ConsolidationIncomplete, InputError, LLMError, NotFoundError
from timem.models import MemoryNode, NodeStatus
from timem.progress import Progress, labelled, no_progress, user_label
from timem.store.segtree_tables import SyncReport
from timem.tree.segtree import SegNode


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


class MemoryWrites(EnginePart):
    """Ingest, consolidation, the segment tree, editing and erasing: the engine facade's write methods."""

    def __init__(self, core: EngineCore, consolidator: Consolidator, items: MemoryItems, reads: StoreReads) -> None:
        super().__init__(core)
        self.consolidator, self.items, self.reads = consolidator, items, reads

    # ------------------------------------------------------------------ ingest (backfill)
    def ingest(self, users: Sequence[ImportedUser], *, flush: bool = True, upper_levels: bool = True,
               update_changed: bool = False, progress: Progress = no_progress) -> IngestReport:
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
                ``:``, a new user's id breaks :func:`timem.ids.check_new_user_id` (a stored user keeps its id), a
                turn id is not ``user:session:seq`` or two turns share one, or a text is longer than
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
            check_user_id(user.user_id)  # every stored id's rule; a new user's is stricter (check_writes_user)
            self.check_writes_user(user.user_id)
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
            for i, user in enumerate(users, start=1):
                report.users.append(user.user_id)
                shown = labelled(progress, user_label(user.user_id, i, len(users)))  # whose stages these are
                nodes = self._consolidate_user(user.user_id, failures, read, flush=flush, upper_levels=upper_levels,
                                               progress=shown)
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
        """:meth:`MemoryItems.extract_items` for the users not in ``read``, those whose items :meth:`_consolidate`
        did not read in this write (each write reads them once: an LLM extraction that fails is not asked twice)."""
        rest = [u for u in user_ids if u not in read]
        if rest:
            self.items.extract_items(rest, with_llm=with_llm)

    def _consolidate(self, user_id: str, read: set[str], **kw: Any) -> list[MemoryNode]:
        """:meth:`Consolidator.consolidate`, with the memory items read between L1 and L2-L5 so that an L5
        profile lists the items that hold at its window's end (:mod:`timem.consolidation.profile_facts`); ``user_id`` is
        added to ``read`` before they are (the caller's :meth:`_extract_rest` then skips it, also after a cancel
        between two LLM sessions: ``kw["progress"]`` wraps them too).

        Raises:
            ConsolidationIncomplete: as the consolidator; ``.written`` includes the L1 nodes of the first pass.
        """
        if not (self.config.memory.memory_items and kw.get("upper_levels", True)):
            return self.consolidator.consolidate(user_id, **kw)
        first = self.consolidator.consolidate(user_id, **{**kw, "upper_levels": False})
        read.add(user_id)  # read once in this write, also when it stops (a cancel): the rest stay due
        self.items.extract_items([user_id], progress=kw.get("progress", no_progress))
        try:  # no second L1 pass: the first wrote them (`timem ingest` showed "L1 segments 2/2" twice)
            return first + self.consolidator.consolidate(user_id, **kw, l1_pass=False)
        except ConsolidationIncomplete as exc:
            exc.written[:0] = first
            raise

    def end_session(self, user_id: str, session_id: str) -> list[MemoryNode]:
        """Mark a session ended and consolidate what that closes (its L2 at least).

        Raises:
            ConsolidationIncomplete: see :meth:`Consolidator.consolidate`; the session is ended anyway.
        """
        self.store.end_session(user_id, session_id)
        return self.consolidate_online(user_id)

    def consolidate_online(self, user_id: str, *, sync_tree: bool = True) -> list[MemoryNode]:
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
                    progress: Progress = no_progress) -> list[MemoryNode]:
        """Consolidate due windows of one user (or all users); ``flush`` closes every open window.

        Raises:
            ConsolidationIncomplete: after every user was tried, if some window failed (see
                :meth:`Consolidator.consolidate`).
        """
        nodes: list[MemoryNode] = []
        read: set[str] = set()
        failures: list[tuple[int, str, str]] = []
        try:
            uids = [user_id] if user_id else self.store.users()
            for i, uid in enumerate(uids, start=1):  # each stage names its user, as ingest's do (docs/cli.md)
                shown = labelled(progress, user_label(uid, i, len(uids)))
                nodes += self._consolidate_user(uid, failures, read, name_user=user_id is None, flush=flush,
                                                progress=shown)
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

        self.reads.require_user(user_id)
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

    def restore_memory(self, node_id: str, *, actor: str = "user") -> editing.Restored:
        """Undo a soft delete; returns what came back (:class:`timem.editing.Restored`)."""
        return editing.restore(self.store, self.consolidator, node_id, actor=actor)

    def restore_memories(self, user_id: str, node_ids: Sequence[str], *,
                         actor: str = "user") -> list[editing.Restored]:
        """Undo the soft delete (``timem forget``, the studio's Delete) of each of ``node_ids``, in the order given
        (a repeated id once); every id is checked first, so a bad one restores nothing. Returns, per id, the memory
        (active again) with the memory items that came back with it and those that stay forgotten
        (:class:`timem.editing.Restored`).

        Raises:
            NotFoundError: unknown user, or an id that is no memory of the user. InputError: no ids, or a memory
                that is not forgotten (active, or superseded by an edit): nothing to undo.
        """
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            raise InputError("give the id of a forgotten memory (`timem forget` prints it: \"segment ID: …\")")
        self.reads.require_user(user_id)
        for nid in ids:
            node = self.reads.node(nid)
            if node is None or node.user_id != user_id:
                raise NotFoundError(f"no memory {nid!r} for user {user_id!r}; the ids of forgotten segments are the "
                                    f"\"segment ID\" lines `timem forget` printed (active ones: `timem tree --user "
                                    f"{user_id} --level 1`)")
            if node.status != NodeStatus.DELETED:
                raise InputError(f"memory {nid} of {user_id!r} is {node.status.value}, not forgotten; nothing to "
                                 "restore, and nothing was restored")
        return [editing.restore(self.store, self.consolidator, nid, actor=actor) for nid in ids]

    def erase_user(self, user_id: str, *, actor: str = "user") -> dict[str, float]:
        """Erase every trace of a user (turns, nodes, vectors, FTS, traces, LLM cache); returns the rows removed
        per table and the compaction cost (``file_seconds``, ``file_bytes_before``, ``file_bytes_after``)."""
        return editing.erase_user(self.store, user_id, actor=actor)
