"""The engine facade's shared core and its read part (:class:`timem.engine.MemoryEngine` owns one of each).

:class:`EngineCore` is what every part of the engine shares (settings, store, embedder, LLM); :class:`StoreReads`
reads users, turns, sessions, nodes, vectors, traces, statistics, checks and exports. Nothing here writes, except
:meth:`StoreReads.check` with ``repair`` (rebuilds the BM25 index)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from timem.config import Config
from timem.embed.protocol import Embedder
from timem.errors import InputError, UnknownUserError
from timem.ids import check_new_user_id
from timem.llm.client import local_model
from timem.llm.protocol import LLMClient
from timem.models import MemoryNode, SessionInfo, Turn
from timem.recall.trace import RecallTrace
from timem.recall.trace_store import save_trace
from timem.store.ports import MemoryStore


@dataclass
class EngineCore:
    """What the parts of one engine share. Mutable: the engine's ``config`` and ``llm`` setters replace them here,
    so every part sees the new value (:meth:`timem.engine.MemoryEngine.set_consolidation_mode`)."""

    config: Config
    store: MemoryStore
    embedder: Embedder
    llm: LLMClient | None
    #: user ids are the memory service's ``tenant/user`` (set by :class:`timem.service.context.Service`): a new
    #: user's id is checked by its user part (:func:`timem.ids.check_new_user_id`)
    tenant_ids: bool = False


class EnginePart:
    """A part of the engine: reads settings, store, embedder and LLM from the shared :class:`EngineCore`."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    @property
    def config(self) -> Config:
        return self.core.config

    @property
    def store(self) -> MemoryStore:
        return self.core.store

    @property
    def embedder(self) -> Embedder:
        return self.core.embedder

    @property
    def llm(self) -> LLMClient | None:
        return self.core.llm

    def check_writes_user(self, user_id: str) -> None:
        """Refuse a write that would create a user whose id breaks the rule of new user ids
        (:func:`timem.ids.check_new_user_id`, the rule of ``timem ingest``, the studio and the memory service), so
        that what the library writes exports to a file ``timem ingest`` reads back. A user already stored keeps its
        id (files written before the rule, datasets); the store is read only for an id that breaks the rule.

        Raises:
            InputError: a new user whose id breaks the rule; nothing is written.
        """
        try:
            check_new_user_id(user_id, tenant_ids=self.core.tenant_ids)
        except InputError:
            if user_id not in self.store.users():
                raise


class StoreReads(EnginePart):
    """What the CLI, studio, service and bench read through the facade."""

    def stats(self) -> dict[str, Any]:
        """Nodes per level, turns, LLM calls, tokens and cache hits (:meth:`timem.store.Store.stats`), and the DuckDB
        memory limit in effect (:meth:`duckdb_memory_limit`)."""
        return {**self.store.stats(), "duckdb_memory_limit": self.duckdb_memory_limit()}

    def duckdb_memory_limit(self) -> str:
        """DuckDB's buffer pool limit in effect for the open file (``SELECT current_setting('memory_limit')``) and
        where it comes from: ``"256.0 MiB (duckdb_memory_mb)"``, or ``"18.8 GiB (DuckDB's default: 80 % of the RAM;
        duckdb_memory_mb sets it)"``. ``timem stats`` and the service's ``GET /v1/about`` show it (a new-user trial:
        no view did)."""
        from timem.store import Store

        if not isinstance(self.store, Store):  # no DuckDB file behind it (a test double)
            return "unknown"
        (limit,) = self.store.con.execute("SELECT current_setting('memory_limit')").fetchone() or ("unknown",)
        source = ("duckdb_memory_mb" if self.store.duckdb_memory_mb is not None
                  else "DuckDB's default: 80 % of the RAM; duckdb_memory_mb sets it")
        return f"{limit} ({source})"

    def check(self, user_id: str | None = None, *, repair: bool = False) -> list[Any]:
        """Tree invariant violations (:func:`timem.store.check.check_store`) of one user or all; ``repair``
        first rebuilds the BM25 index and the mentioned dates (:mod:`timem.store.mentions`) from every node. Raises
        :class:`NotFoundError` for an unknown user."""
        from timem.store.check import check_store

        if user_id is not None:
            self.require_user(user_id)
        if repair:
            self.store.refresh_fts(force=True)
        return check_store(self.store, self.config, user_id)

    def tree_text(self, user_id: str, *, level: int | None = None, width: int = 100) -> str:
        """The user's tree as text, top level first (:func:`timem.viz.tree_text.render_tree`).
        Raises :class:`NotFoundError` for an unknown user."""
        from timem.viz.tree_text import render_tree

        self.require_user(user_id)
        return render_tree(self.store, user_id, self.config.time.tz, level=level, width=width)

    @property
    def has_llm(self) -> bool:
        """Whether an LLM is configured (answers, LLM planner / gate, hybrid and abstractive consolidation)."""
        return self.llm is not None

    @property
    def db_path(self) -> str:
        """The DuckDB file this engine owns (``":memory:"`` for an in-memory store)."""
        return self.store.path

    def export_jsonl(self, user_id: str, path: str | Path, *, include_forgotten: bool = False) -> int:
        """Write the user's turns to ``path`` as TiMem JSONL (:func:`timem.datasets.jsonl.write_jsonl`:
        timestamps at each speaker's offset), session by session; ``timem ingest --format jsonl`` reads it
        back. Turns whose L1 memories were all soft-deleted (forgotten, :meth:`forgotten_turn_ids`) are left out
        unless ``include_forgotten`` (JSONL has no mark for them: a re-import remembers them again). Returns the
        number of turns written. Raises :class:`NotFoundError` for an unknown user."""
        from timem.datasets.base import ImportedSession, ImportedUser
        from timem.datasets.jsonl import write_jsonl

        self.require_user(user_id)
        # turns the person asked to forget are left out: a re-import would bring the forgotten facts back
        forgotten = set() if include_forgotten else self.forgotten_turn_ids(user_id)
        sessions = [ImportedSession(session_id=s.session_id, turns=turns, date_label="")
                    for s in self.store.sessions(user_id)
                    if (turns := [t for t in self.store.turns(user_id, s.session_id) if t.id not in forgotten])]
        speakers = list(dict.fromkeys(t.speaker for s in sessions for t in s.turns))
        return write_jsonl([ImportedUser(user_id=user_id, participants=speakers, sessions=sessions)], path)

    def save_trace(self, trace: RecallTrace) -> None:
        """Persist a recall trace (e.g. one recalled with ``persist=False``, under another trace id), within the
        retention rule of ``Config.store``."""
        save_trace(self.store, trace, self.config.store)

    def traces(self, user_id: str | None = None, limit: int = 100) -> list[RecallTrace]:
        """Saved recall traces (of one user, or all), newest first."""
        from timem.recall.trace_store import load_traces

        return load_traces(self.store, user_id, limit=limit)

    def users(self) -> list[str]:
        """Ids of the users in the store, sorted."""
        return self.store.users()

    def turns(self, user_id: str, session_id: str | None = None, ids: Sequence[str] | None = None) -> list[Turn]:
        """The user's stored turns (one session's if ``session_id``; only ``ids`` if given), in conversation order."""
        return self.store.turns(user_id, session_id, ids)

    def forgotten_turn_ids(self, user_id: str, session_id: str | None = None) -> set[str]:
        """Ids of the user's turns (one session's if ``session_id``) whose L1 segments were all forgotten (soft-deleted,
        restorable): views of the conversation hide their text (:func:`timem.memory.forget.forgotten_turn_ids`)."""
        from timem.memory.forget import forgotten_turn_ids

        return forgotten_turn_ids(self.store.nodes(user_id, 1, status=None, session_id=session_id))

    def history(self, user_id: str, session_id: str) -> tuple[list[Turn], set[str]]:
        """One session's turns in conversation order and the ids of those forgotten (:meth:`turns`,
        :meth:`forgotten_turn_ids`): what a chat history shows."""
        turns = self.turns(user_id, session_id)
        return turns, self.forgotten_turn_ids(user_id, session_id) if turns else set()

    def sessions(self, user_id: str) -> list[SessionInfo]:
        """The user's sessions, by start."""
        return self.store.sessions(user_id)

    def nodes(self, user_id: str | None = None, level: int | None = None, **kw: Any) -> list[MemoryNode]:
        """Memory nodes, as :meth:`timem.store.Store.nodes` (active only unless ``status=None``)."""
        return self.store.nodes(user_id, level, **kw)

    def node(self, node_id: str) -> MemoryNode | None:
        """One memory node by id, in any status (active, deleted, superseded), or ``None`` if absent."""
        found = self.store.nodes(ids=[node_id], status=None)
        return found[0] if found else None

    def embeddings(self, node_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored unit vectors of ``node_ids`` (float32, shape ``(dim,)`` each), by id; unknown ids are absent."""
        return self.store.embeddings(node_ids)

    @property
    def dim(self) -> int:
        """The embedder's vector dimension."""
        return self.embedder.dim

    def llm_usage(self, since: datetime) -> dict[str, dict[str, float]]:
        """LLM calls made (not answered from the cache) since ``since`` (UTC-aware), per purpose:
        ``{"consolidate-L2": {"calls": n, "seconds": s}, ...}`` (seconds: the sum of call latencies)."""
        return self.store.llm_usage(since)

    @property
    def local_model_path(self) -> str | None:
        """The GGUF file of the embedded model when the LLM is the local backend, else ``None``."""
        model = local_model(self.llm)
        return None if model is None else str(model.model_path)

    def segment_topics(self, user_id: str) -> dict[str, str]:
        """LLM topic lines of the user's segment-tree nodes, by node id (:mod:`timem.consolidation.segment_topics`)."""
        return self.store.segment_tree.summaries(user_id)

    def export_user(self, user_id: str, *, traces: int = 1000) -> dict[str, Any]:
        """Everything stored of one user as JSON-ready data: ``user_id``, ``sessions``, ``turns`` (conversation
        order; each with ``forgotten``: true when a forget took its line, whose text is kept until a restore or an
        erase, as the service's turn list marks it), ``nodes`` (every status, conversation order), ``items`` (the
        memory layer's facts and preferences, every status, with validity and supersession) and the newest
        ``traces`` recall traces.
        Times are ISO 8601 UTC.

        Raises:
            NotFoundError: the user is not in the store.
        """
        self.require_user(user_id)
        forgotten = self.forgotten_turn_ids(user_id)  # a trial: the export showed a forgotten line as any other
        sessions = [{**s.model_dump(), "started_at": s.started_at.isoformat(),
                     "last_event_at": s.last_event_at.isoformat()} for s in self.store.sessions(user_id)]
        return {
            "user_id": user_id,
            "sessions": sessions,
            "turns": [{**t.model_dump(mode="json"), "forgotten": t.id in forgotten}
                      for t in self.store.turns(user_id)],
            "nodes": [n.model_dump(mode="json") for n in self.store.nodes(user_id, status=None)],
            "items": [i.model_dump(mode="json") for i in self.store.items(user_id, status=None)],
            "traces": [t.model_dump(mode="json") for t in self.traces(user_id, limit=traces)],  # whole again
        }

    def require_user(self, user_id: str) -> None:
        """Raise :class:`UnknownUserError` (a :class:`NotFoundError` naming the users there are) unless ``user_id``
        is in the store."""
        if self.store.has_user(user_id):
            return
        users = self.store.users()
        if user_id not in users:
            db = self.config.store.db_path
            raise UnknownUserError(f"no user {user_id!r} in {db}; users: {', '.join(users) or 'none'}", user_id)

    def default_question_time(self, user_id: str) -> datetime | None:
        """The time a question is asked "as of" when none is given: the user's latest event (UTC), or
        ``None`` (= now) for a user without turns. LoCoMo-style logs have no question dates; asking at
        the wall clock would make "last week" mean the wrong week."""
        sessions = self.store.sessions(user_id)
        return max(s.last_event_at for s in sessions) if sessions else None
