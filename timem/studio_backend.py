"""StudioBackend: what the studio's pages call on the memory they show, as one typed protocol.

Two classes satisfy it (mypy checks both, ``_checks`` at the bottom):

* :class:`timem.engine.MemoryEngine` — the studio opened the DuckDB file itself (``timem studio``);
* :class:`timem.service.client.ServiceClient` — the studio is connected to a running memory service as one
  tenant (``timem studio --service URL --key KEY``) and never opens a file.

What only a local engine offers (importing files, switching the consolidation mode, the segment tree, the
manifold's vectors, comparing with another file, warming the embedded model) is not part of it: the studio reaches
it through :attr:`timem.ui.state.StudioContext.local`, which is ``None`` over a service, and says so on the page.

Times are UTC-aware; user ids are those the backend shows (a service's tenant sees its own, unprefixed).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from timem.chat_turns import ChatTurn
from timem.config import Config
from timem.memory.forget import ForgetPreview
from timem.models import MemoryItem, MemoryNode, SessionInfo, Turn
from timem.progress import Progress
from timem.recall.pipeline import RecallResult
from timem.recall.trace import RecallTrace

if TYPE_CHECKING:
    from timem.engine import MemoryEngine
    from timem.service.client import ServiceClient


class StudioBackend(Protocol):
    """The engine facade's methods the studio's pages use (see :class:`timem.engine.MemoryEngine` for each).

    Reads of a user with nothing stored answer ``[]``; writes raise :class:`timem.errors.NotFoundError` for an
    unknown memory, item or session; every error derives from :class:`timem.errors.TimemError`.
    """

    config: Config  #: settings the pages read (time zone, consolidation mode, recall defaults, decay)

    @property
    def has_llm(self) -> bool:
        """Whether an LLM answers, plans, gates and writes hybrid / abstractive memories."""
        ...

    @property
    def local_model_path(self) -> str | None:
        """The embedded model's GGUF file when it runs in this process, else ``None``."""
        ...

    # reads
    def users(self) -> list[str]: ...

    def turns(self, user_id: str, session_id: str | None = None, ids: Sequence[str] | None = None) -> list[Turn]: ...

    def forgotten_turn_ids(self, user_id: str, session_id: str | None = None) -> set[str]:
        """Ids of turns whose L1 segments were all forgotten (restorable): the chat history hides their text."""
        ...

    def history(self, user_id: str, session_id: str) -> tuple[list[Turn], set[str]]:
        """One session's turns in conversation order and the ids of the forgotten ones (one read)."""
        ...

    def sessions(self, user_id: str) -> list[SessionInfo]: ...

    def nodes(self, user_id: str | None = None, level: int | None = None, **kw: Any) -> list[MemoryNode]:
        """Keywords: ``status`` (default active, ``None`` = any), ``ids``, ``session_id``."""
        ...

    def traces(self, user_id: str | None = None, limit: int = 100) -> list[RecallTrace]: ...

    def default_question_time(self, user_id: str) -> datetime | None: ...

    def memory_items(self, user_id: str, *, status: str | None = "active", reopen: bool = True
                     ) -> list[MemoryItem]: ...

    # recall and chat
    def recall(self, user_id: str, query: str, question_time: datetime | None = None, *,
               complexity: Any = None, gate: Any = None, planner: str | None = None,
               participants: Sequence[str] = (), persist: bool = True, config: Config | None = None
               ) -> RecallResult: ...

    def chat_turn(self, user_id: str, session_id: str, text: str, event_time: datetime, *,
                  user_name: str = "User", assistant_name: str = ..., consolidate: bool = True,
                  confirm_forget: bool = False) -> ChatTurn: ...

    # writes
    def end_session(self, user_id: str, session_id: str) -> list[MemoryNode]: ...

    def consolidate(self, user_id: str | None = None, *, flush: bool = False,
                    progress: Progress = ...) -> list[MemoryNode]: ...

    def edit_memory(self, node_id: str, content: str, *, actor: str = "user") -> MemoryNode: ...

    def delete_memories(self, node_ids: Sequence[str], *, hard: bool = False,
                        actor: str = "user") -> dict[str, float]: ...

    def restore_memory(self, node_id: str, *, actor: str = "user") -> None: ...

    def erase_user(self, user_id: str, *, actor: str = "user") -> dict[str, float]: ...

    def forget_items(self, item_ids: Sequence[str], *, actor: str = "user") -> None: ...

    def pin_item(self, item_id: str, pinned: bool = True, *, actor: str = "user") -> MemoryItem: ...

    def forget(self, user_id: str, text: str = "", *, item_ids: Sequence[str] = (), confirm: bool = False,
               actor: str = "user") -> ForgetPreview: ...


if TYPE_CHECKING:  # mypy: the local engine and the service client both satisfy the protocol
    def _checks(engine: MemoryEngine, client: ServiceClient) -> tuple[StudioBackend, StudioBackend]:
        return engine, client
