"""The engine facade's memory-item part (:class:`timem.engine.MemoryEngine` owns one): extraction, explicit
forgetting, pinning (:mod:`timem.memory`). It uses the shared core, the engine's consolidator and item writer, and
the read part (to check a user)."""

from __future__ import annotations

from collections.abc import Sequence

from timem import editing
from timem.consolidation.consolidator import Consolidator
from timem.engine_reads import EngineCore, EnginePart, StoreReads
from timem.errors import ConfigError
from timem.item_holding import as_held
from timem.memory import forget as forget_mod
from timem.memory.forget import ForgetPreview
from timem.memory.writer import ExtractionReport, ItemWriter
from timem.models import MemoryItem
from timem.progress import Progress, no_progress


class MemoryItems(EnginePart):
    """Memory-item methods of the engine facade."""

    def __init__(self, core: EngineCore, consolidator: Consolidator, item_writer: ItemWriter,
                 reads: StoreReads) -> None:
        super().__init__(core)
        self.consolidator, self.item_writer, self.reads = consolidator, item_writer, reads
        #: per user, the failures of the last memory-item extraction (``(session id, error)``; also audited)
        self.extraction_failures: dict[str, list[tuple[str, str]]] = {}

    def extract_items(self, user_ids: Sequence[str], *, with_llm: bool = True,
                      progress: Progress = no_progress) -> dict[str, ExtractionReport]:
        """Read the users' new L1 segments (rules) or closed sessions (LLM) into memory items, with merge and
        supersession (:mod:`timem.memory.writer`); nothing when ``Config.memory.memory_items`` is off.
        ``with_llm=False`` defers LLM extraction (an L1-only ingest makes no LLM call). Failed LLM sessions are
        audited and kept in :attr:`extraction_failures` (they are tried again on the next write). ``progress``
        wraps the LLM's sessions (:meth:`timem.memory.writer.ItemWriter.extract`).

        Raises:
            ConfigError: ``memory_extractor = "llm"`` but no LLM is configured.
        """
        if not self.config.memory.memory_items:
            return {}
        if self.config.memory.memory_extractor == "llm" and self.llm is None:
            raise ConfigError("memory_extractor is 'llm' but no LLM is configured; set llm_backend or "
                              "memory_extractor = 'rules'.")
        out: dict[str, ExtractionReport] = {}
        for uid in user_ids:
            if self.item_writer.mode == "llm" and not with_llm:
                continue
            out[uid] = self.item_writer.extract(uid, progress)
            self.extraction_failures[uid] = out[uid].failures
        return out

    @property
    def items_use_llm(self) -> bool:
        """Whether memory-item extraction calls the LLM (``memory_extractor`` ``llm``, or ``auto`` with an
        OpenAI-compatible endpoint; :attr:`timem.memory.writer.ItemWriter.mode`)."""
        return self.config.memory.memory_items and self.item_writer.mode == "llm"

    @property
    def items_use_rules(self) -> bool:
        """Whether memory items are read by the rules (no LLM): on, and not :attr:`items_use_llm`."""
        return self.config.memory.memory_items and self.item_writer.mode == "rules"

    def forget(self, user_id: str, text: str = "", *, item_ids: Sequence[str] = (), confirm: bool = False,
               actor: str = "user") -> ForgetPreview:
        """Explicit forgetting (:mod:`timem.memory.forget`): the memory items and L1 segments matching ``text``
        ("I work at Blue Harbor"), or the items ``item_ids`` with the segments they were read from (the Facts
        view); with ``confirm`` they are soft-deleted (audited; segments undoable with :meth:`restore_memory`),
        otherwise nothing changes and the preview says what would go.

        Raises:
            InputError: empty text and no ids. NotFoundError: unknown user, or an id not of the user's items.
        """
        self.reads.require_user(user_id)
        plan = (forget_mod.preview_items(self.store, user_id, list(item_ids)) if item_ids
                else forget_mod.preview(self.store, user_id, text))
        return forget_mod.apply(self.store, self.consolidator, plan, actor=actor) if confirm else plan

    def memory_items(self, user_id: str, *, status: str | None = "active", reopen: bool = True) -> list[MemoryItem]:
        """The user's memory items (active only unless ``status`` is ``"deleted"`` or ``None`` = all), oldest first.

        With ``reopen`` (the default) an active item whose successor was forgotten (``superseded_by`` names an item
        that is deleted or gone) is returned as holding again, as recall reads it (:func:`timem.recall.items._as_of`)
        and as the forget preview says ("holds again"): until the next active value of its subject and single-valued
        attribute begins, else open (:func:`timem.item_holding.as_held`; a trial saw Manchester, 上海 and Cardiff
        all current after "forget that I live in Bristol"). The stored row
        keeps them, so restoring the successor supersedes it again. A trial saw ``timem memories list`` and the
        service's items still end "dislikes jazz" at the forgotten "likes jazz" while recall gave it as holding.
        ``reopen=False``: the rows as stored (the studio's Facts view marks such a row itself)."""
        items = self.store.items(user_id, status=status)
        if not reopen or not any(i.superseded_by for i in items):
            return items
        if status == "active":
            return as_held(items)
        held = {i.id: i for i in as_held(self.store.items(user_id, status="active"))}
        return [held.get(i.id, i) for i in items]

    def memory_item(self, item_id: str) -> MemoryItem:
        """One memory item by id, whatever its status.

        Raises:
            NotFoundError: unknown item id.
        """
        return self.store.item(item_id)

    def forget_items(self, item_ids: Sequence[str], *, actor: str = "user") -> None:
        """Soft-delete memory items alone (their segments stay; audit ``forget-item``; the L5 profiles listing them
        are rewritten), e.g. the studio's Facts view.

        Raises:
            NotFoundError: an unknown item id (nothing is changed).
        """
        items = [self.store.item(i) for i in item_ids]
        with self.store.transaction():
            for item in items:
                self.store.update_item(item.id, status="deleted")
                self.store.audit("forget-item", item.user_id, item.id, {"actor": actor, "segments": []})
            editing.refresh_profiles(self.store, self.consolidator, items, actor=actor)  # the L5 profiles listing them

    def pin_item(self, item_id: str, pinned: bool = True, *, actor: str = "user") -> MemoryItem:
        """Pin (or unpin) a memory item: pinned open items go into every answer's system message, within
        ``Config.memory.memory_pinned_tokens``. Audited (``item-pin`` / ``item-unpin``).

        Raises:
            NotFoundError: unknown item id.
        """
        item = self.store.item(item_id)
        with self.store.transaction():
            self.store.update_item(item_id, pinned=pinned)
            self.store.audit("item-pin" if pinned else "item-unpin", item.user_id, item_id, {"actor": actor})
        return self.store.item(item_id)
