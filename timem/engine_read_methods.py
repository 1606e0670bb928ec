"""The engine's read methods: users, turns, sessions, nodes, traces, stats, checks and exports, each a delegation to
its :class:`~timem.engine_reads.StoreReads` part. :class:`~timem.engine.MemoryEngine` has them as its own (a base
class), so that the facade stays one door while each module keeps to one concern.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from timem.engine_reads import StoreReads
from timem.models import MemoryNode, SessionInfo, Turn
from timem.recall.trace import RecallTrace


class StoreReadMethods:
    """What :class:`~timem.engine.MemoryEngine` reads from its store, by delegation to ``self.reads`` (which the
    engine builds)."""

    reads: StoreReads

    def export(self, user_id: str, *, traces: int = 1000) -> dict[str, Any]:
        """The library's name for :meth:`export_user`: everything stored of one user, JSON-ready (``json.dumps``
        it as is; times ISO 8601 UTC). Raises :class:`NotFoundError` for a user not in the store."""
        return self.reads.export_user(user_id, traces=traces)

    def stats(self) -> dict[str, Any]:
        """As :meth:`timem.engine_reads.StoreReads.stats`."""
        return self.reads.stats()

    def check(self, user_id: str | None = None, *, repair: bool = False) -> list[Any]:
        """As :meth:`timem.engine_reads.StoreReads.check`."""
        return self.reads.check(user_id, repair=repair)

    def tree_text(self, user_id: str, *, level: int | None = None, width: int = 100) -> str:
        """As :meth:`timem.engine_reads.StoreReads.tree_text`."""
        return self.reads.tree_text(user_id, level=level, width=width)

    @property
    def has_llm(self) -> bool:
        """As :attr:`timem.engine_reads.StoreReads.has_llm`."""
        return self.reads.has_llm

    @property
    def db_path(self) -> str:
        """As :attr:`timem.engine_reads.StoreReads.db_path`."""
        return self.reads.db_path

    def export_jsonl(self, user_id: str, path: str | Path, *, include_forgotten: bool = False) -> int:
        """As :meth:`timem.engine_reads.StoreReads.export_jsonl`."""
        return self.reads.export_jsonl(user_id, path, include_forgotten=include_forgotten)

    def save_trace(self, trace: RecallTrace) -> None:
        """As :meth:`timem.engine_reads.StoreReads.save_trace`."""
        return self.reads.save_trace(trace)

    def traces(self, user_id: str | None = None, limit: int = 100) -> list[RecallTrace]:
        """As :meth:`timem.engine_reads.StoreReads.traces`."""
        return self.reads.traces(user_id, limit)

    def users(self) -> list[str]:
        """As :meth:`timem.engine_reads.StoreReads.users`."""
        return self.reads.users()

    def turns(self, user_id: str, session_id: str | None = None, ids: Sequence[str] | None = None) -> list[Turn]:
        """As :meth:`timem.engine_reads.StoreReads.turns`."""
        return self.reads.turns(user_id, session_id, ids)

    def forgotten_turn_ids(self, user_id: str, session_id: str | None = None) -> set[str]:
        """As :meth:`timem.engine_reads.StoreReads.forgotten_turn_ids`."""
        return self.reads.forgotten_turn_ids(user_id, session_id)

    def history(self, user_id: str, session_id: str) -> tuple[list[Turn], set[str]]:
        """As :meth:`timem.engine_reads.StoreReads.history`."""
        return self.reads.history(user_id, session_id)

    def sessions(self, user_id: str) -> list[SessionInfo]:
        """As :meth:`timem.engine_reads.StoreReads.sessions`."""
        return self.reads.sessions(user_id)

    def nodes(self, user_id: str | None = None, level: int | None = None, **kw: Any) -> list[MemoryNode]:
        """As :meth:`timem.engine_reads.StoreReads.nodes`."""
        return self.reads.nodes(user_id, level, **kw)

    def node(self, node_id: str) -> MemoryNode | None:
        """As :meth:`timem.engine_reads.StoreReads.node`."""
        return self.reads.node(node_id)

    def embeddings(self, node_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """As :meth:`timem.engine_reads.StoreReads.embeddings`."""
        return self.reads.embeddings(node_ids)

    @property
    def dim(self) -> int:
        """As :attr:`timem.engine_reads.StoreReads.dim`."""
        return self.reads.dim

    def llm_usage(self, since: datetime) -> dict[str, dict[str, float]]:
        """As :meth:`timem.engine_reads.StoreReads.llm_usage`."""
        return self.reads.llm_usage(since)

    @property
    def local_model_path(self) -> str | None:
        """As :attr:`timem.engine_reads.StoreReads.local_model_path`."""
        return self.reads.local_model_path

    def segment_topics(self, user_id: str) -> dict[str, str]:
        """As :meth:`timem.engine_reads.StoreReads.segment_topics`."""
        return self.reads.segment_topics(user_id)

    def export_user(self, user_id: str, *, traces: int = 1000) -> dict[str, Any]:
        """As :meth:`timem.engine_reads.StoreReads.export_user`."""
        return self.reads.export_user(user_id, traces=traces)

    def require_user(self, user_id: str) -> None:
        """As :meth:`timem.engine_reads.StoreReads.require_user`."""
        return self.reads.require_user(user_id)

    def default_question_time(self, user_id: str) -> datetime | None:
        """As :meth:`timem.engine_reads.StoreReads.default_question_time`."""
        return self.reads.default_question_time(user_id)
