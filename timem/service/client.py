"""ServiceClient: the memory service (``timem serve``) over HTTP, as one tenant, with the engine facade's methods.

It offers what the studio calls on :class:`timem.engine.MemoryEngine` (:class:`timem.studio_backend.StudioBackend`),
with the same names, argument types and return types (:class:`~timem.models.MemoryNode`, :class:`~timem.models.Turn`,
:class:`~timem.recall.pipeline.RecallResult`, :class:`~timem.models.MemoryItem`, ...), built from the service's
JSON. So ``timem studio --service URL --key KEY`` shows a file that a running service owns, without opening it.

* User ids are the tenant's own (``mia``, not ``acme/mia``); so are turn ids (``mia:s1:0``) and window keys.
* Reads of an unknown user answer ``[]`` as the engine does (the service's 404 for a user is read as "nothing
  stored yet"); writes and single-node calls raise :class:`~timem.errors.NotFoundError`.
* Times are UTC-aware. The ``actor`` of a write is the service's (``api:<tenant>`` in its audit log).
* Errors: a service error ``{"error": "..."}`` becomes the matching :mod:`timem.errors` exception with the
  service's one-line message (:func:`error_for`); a connection failure is :class:`ServiceUnreachableError`
  (:mod:`timem.service.client_http`, the HTTP side).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import httpx

from timem.chat_turns import ChatTurn
from timem.config import Complexity, Config, load_config
from timem.errors import ConfigError, InputError, NotFoundError
from timem.memory.forget import ForgetPreview
from timem.models import MemoryItem, MemoryNode, NodeStatus, Role, SessionInfo, Turn
from timem.progress import Progress, no_progress
from timem.recall.gating import GateMode
from timem.recall.options import RecallOptions, recall_options
from timem.recall.pipeline import RecallResult
from timem.recall.trace import RecallTrace
from timem.service.client_http import START_HINT, RemoteConsolidationIncomplete, ServiceHttp, error_for

__all__ = ["START_HINT", "RemoteConsolidationIncomplete", "ServiceClient", "error_for"]

class ServiceClient:
    """One tenant's view of a running memory service, with the engine facade's methods (see module doc).

    Args:
        url: the service's base URL, e.g. ``http://127.0.0.1:8600``.
        key: the tenant's API key (``tmk_…``); sent as ``Authorization: Bearer``, never shown.
        config: local settings (default :func:`load_config`); the time zone, the session idle timeout and the
            consolidation modes are replaced by the service's (``GET /v1/about``).
        timeout: seconds per request (a chat turn with an embedded model can take a minute).

    Raises:
        ServiceUnreachableError: nothing answers at ``url``. AuthError: the key is refused.
    """

    def __init__(self, url: str, key: str, *, config: Config | None = None, timeout: float = 300.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.url = url.rstrip("/")
        self._http = ServiceHttp(self.url, key, timeout=timeout, transport=transport)
        self._node_owner: dict[str, str] = {}
        self._item_owner: dict[str, str] = {}
        about = self._http.call("GET", "/v1/about")
        self.tenant: str = about["tenant"]
        self.llm_label: str = about["llm"] or "no LLM"
        self._has_llm: bool = about["has_llm"]
        base = config if config is not None else load_config()
        self.config: Config = base.with_overrides(timezone=about["timezone"],
                                                  session_idle_timeout_minutes=about["session_idle_timeout_minutes"],
                                                  consolidation_mode=about["consolidation_mode"],
                                                  level_modes={int(k): v for k, v in about["level_modes"].items()})

    @classmethod
    def from_config(cls, config: Config) -> ServiceClient:
        """The client of ``config.service.service_url`` with ``config.service.service_key``.

        Raises:
            ConfigError: no URL or no key is set. ServiceUnreachableError, AuthError: as the constructor.
        """
        svc = config.service
        if not svc.service_url:
            raise ConfigError("no memory service URL; pass --service URL or set TIMEM_SERVICE_URL")
        if svc.service_key is None or not svc.service_key.get_secret_value():
            raise ConfigError(f"no API key for the service at {svc.service_url}; pass --key KEY or set "
                              "TIMEM_SERVICE_KEY (a key from `timem keys add TENANT`)")
        return cls(svc.service_url, svc.service_key.get_secret_value(), config=config)

    def close(self) -> None:
        """Close the HTTP connections."""
        self._http.close()

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _node(self, m: dict[str, Any], user: str) -> MemoryNode:
        self._node_owner[m["id"]] = user
        extra = {"created_at": m["created_at"]} if m.get("created_at") else {}
        return MemoryNode(id=m["id"], user_id=user, level=m["level"], window_key=m["window_key"],
                          span_start=m["span_start"], span_end=m["span_end"], content=m["content"],
                          child_ids=m["child_ids"], source_turn_ids=m["source_turn_ids"], session_id=m["session_id"],
                          model_id=m.get("model_id") or "?", prompt_version=m.get("prompt_version") or "?",
                          mode=m["mode"], status=NodeStatus(m["status"]), stale=m["stale"], **extra)

    def _item(self, i: dict[str, Any], user: str) -> MemoryItem:
        self._item_owner[i["id"]] = user
        return MemoryItem(user_id=user, **i)

    def _owner(self, cache: dict[str, str], what: str, ident: str) -> str:
        """The user of a node or item id: remembered from an earlier answer, else looked up user by user."""
        if ident in cache:
            return cache[ident]
        for user in self.users():
            if what == "memory":
                self.nodes(user, ids=[ident], status=None)
            else:
                self.memory_items(user, status=None)
            if ident in cache:
                return cache[ident]
        raise NotFoundError(f"no {what} {ident!r} for tenant {self.tenant!r}")

    # ------------------------------------------------------------------ what the service is
    @property
    def has_llm(self) -> bool:
        """Whether the service has an LLM (answers, hybrid / abstractive memories, LLM planner and gate)."""
        return self._has_llm

    @property
    def local_model_path(self) -> str | None:
        """Always ``None``: the model (if any) runs in the service's process, not here."""
        return None

    # ------------------------------------------------------------------ reads
    def users(self) -> list[str]:
        """The tenant's user ids, sorted."""
        return list(self._http.call("GET", "/v1/users")["users"])

    def require_user(self, user_id: str) -> None:
        """Raise :class:`NotFoundError` unless the tenant has ``user_id``."""
        if user_id not in self.users():
            raise NotFoundError(f"no user {user_id!r} for tenant {self.tenant!r} at {self.url}")

    def turns(self, user_id: str, session_id: str | None = None, ids: Sequence[str] | None = None) -> list[Turn]:
        """The user's turns in conversation order (one session's; only ``ids`` if given)."""
        if ids is not None and not ids:
            return []
        return self._turns(user_id, session_id, ids)[0]

    def forgotten_turn_ids(self, user_id: str, session_id: str | None = None) -> set[str]:
        """Ids of the turns the service marks ``forgotten`` (their L1 segments all soft-deleted)."""
        return self._turns(user_id, session_id)[1]

    def history(self, user_id: str, session_id: str) -> tuple[list[Turn], set[str]]:
        """One session's turns and the ids of the forgotten ones, from one GET of the turns listing."""
        return self._turns(user_id, session_id)

    def _turns(self, user_id: str, session_id: str | None = None,
               ids: Sequence[str] | None = None) -> tuple[list[Turn], set[str]]:
        rows = self._http.rows(f"/v1/users/{user_id}/turns", "turns", session_id=session_id,
                          ids=list(ids) if ids else None)
        turns = [Turn(user_id=user_id, **{**{k: v for k, v in t.items() if k != "forgotten"},
                                          "role": Role(t["role"])}) for t in rows]
        return turns, {t["id"] for t in rows if t.get("forgotten")}

    def sessions(self, user_id: str) -> list[SessionInfo]:
        """The user's sessions, by start."""
        return [SessionInfo(**s) for s in self._http.rows(f"/v1/users/{user_id}/sessions", "sessions")]

    def nodes(self, user_id: str | None = None, level: int | None = None, **kw: Any) -> list[MemoryNode]:
        """Memory nodes as :meth:`MemoryEngine.nodes`: keywords ``status`` (a :class:`NodeStatus`, default active;
        ``None`` = any), ``ids`` and ``session_id``. Without ``user_id``, every user of the tenant.

        Raises:
            InputError: another keyword.
        """
        unknown = set(kw) - {"status", "ids", "session_id"}
        if unknown:
            raise InputError(f"nodes() takes status, ids and session_id, not {', '.join(sorted(unknown))}")
        if user_id is None:
            return [n for u in self.users() for n in self.nodes(u, level, **kw)]
        status = kw.get("status", NodeStatus.ACTIVE)
        ids = kw.get("ids")
        if ids is not None and not ids:
            return []
        rows = self._http.rows(f"/v1/users/{user_id}/memories", "memories", level=level,
                          status="all" if status is None else NodeStatus(status).value,
                          ids=list(ids) if ids else None)
        nodes = [self._node(m, user_id) for m in rows]
        sid = kw.get("session_id")
        return [n for n in nodes if n.session_id == sid] if sid is not None else nodes

    def traces(self, user_id: str | None = None, limit: int = 100) -> list[RecallTrace]:
        """Stored recall traces (of one user, or every user of the tenant), newest first."""
        if user_id is None:
            every = [t for u in self.users() for t in self.traces(u, limit)]
            return sorted(every, key=lambda t: t.created_at, reverse=True)[:limit]
        return [RecallTrace.model_validate(t) for t in self._http.rows(f"/v1/users/{user_id}/traces", "traces",
                                                                  limit=limit)]

    def default_question_time(self, user_id: str) -> datetime | None:
        """The user's latest event (UTC), or ``None`` without turns (see :meth:`MemoryEngine.default_question_time`)."""
        sessions = self.sessions(user_id)
        return max(s.last_event_at for s in sessions) if sessions else None

    def memory_items(self, user_id: str, *, status: str | None = "active", reopen: bool = True
                     ) -> list[MemoryItem]:
        """The user's memory items (``"active"``, ``"deleted"`` or ``None`` = all), oldest first; ``reopen`` as
        :meth:`timem.engine_items.MemoryItems.memory_items`."""
        rows = self._http.rows(f"/v1/users/{user_id}/items", "items", status=status or "all",
                          reopen=str(reopen).lower())
        return [self._item(i, user_id) for i in rows]

    # ------------------------------------------------------------------ recall and chat
    def recall(self, user_id: str, query: str, question_time: datetime | None = None,
               options: RecallOptions | None = None, *, complexity: Complexity | None = None,
               gate: GateMode | None = None, planner: str | None = None, participants: Sequence[str] = (),
               persist: bool = True, config: Config | None = None) -> RecallResult:
        """Recall on the service (``POST …/recall``), the options as one value or as keywords
        (:func:`timem.recall.options.recall_options`). Of ``options.config`` the recall settings ``recall_lambda``,
        ``recall_top_k``, ``token_budget`` and ``quotas`` are sent; ``participants`` and ``asker`` are not (the
        service finds the participants).

        Raises:
            NotFoundError: unknown user. InputError: empty query. ConfigError: an LLM planner / gate without an LLM,
                or both ``options`` and keywords.
        """
        opts = recall_options(options, complexity=complexity, gate=gate, planner=planner, participants=participants,
                              persist=persist, config=config)
        body: dict[str, Any] = {"query": query, "complexity": opts.complexity, "gate": opts.gate,
                                "planner": opts.planner, "persist": opts.persist}
        if question_time is not None:
            body["question_time"] = question_time.isoformat()
        if opts.config is not None:
            rc = opts.config.recall
            body |= {"recall_lambda": rc.recall_lambda, "recall_top_k": rc.recall_top_k,
                     "token_budget": rc.token_budget, "quotas": rc.quotas}
        out = self._http.call("POST", f"/v1/users/{user_id}/recall",
                              json={k: v for k, v in body.items() if v is not None})
        by_id = {n.id: n for n in self.nodes(user_id, ids=out["node_ids"], status=None)}
        return RecallResult(context=out["context"], nodes=[by_id[i] for i in out["node_ids"] if i in by_id],
                            trace=RecallTrace.model_validate(out["trace"]))

    def chat_turn(self, user_id: str, session_id: str, text: str, event_time: datetime, *,
                  user_name: str = "User", assistant_name: str = "Assistant", consolidate: bool = True,
                  confirm_forget: bool = False) -> ChatTurn:
        """One chat turn answered by the service (``POST …/chat``; :meth:`MemoryEngine.chat_turn`): the message is
        stored, recalled for and answered (without an LLM there: a short note), the reply stored, memories written.

        Raises:
            InputError: empty message, naive time, ended session. ChatTurnError: the message is stored but
                answering (``stage="answer"``) or storing the reply / its memories failed.
        """
        out = self._http.call("POST", f"/v1/users/{user_id}/chat", json={
            "session_id": session_id, "event_time": event_time.isoformat(), "message": text, "user_name": user_name,
            "assistant_name": assistant_name, "consolidate": consolidate, "confirm_forget": confirm_forget})
        forgotten = None
        if out.get("forgotten") is not None:
            forgotten = self._preview(user_id, out["forgotten"])
        return ChatTurn(session_id=out["session_id"], trace=RecallTrace.model_validate(out["trace"]),
                        reply=out["reply"], written=[self._node(m, user_id) for m in out["written"]],
                        warning=out.get("warning"), forgotten=forgotten)

    def _preview(self, user_id: str, f: dict[str, Any]) -> ForgetPreview:
        segments = self.nodes(user_id, ids=f["segments"], status=None)
        return ForgetPreview(user_id=user_id, text=f["text"], items=[self._item(i, user_id) for i in f["items"]],
                             segments=segments, collateral=set(f.get("collateral", [])),
                             replies=set(f.get("replies", [])),
                             reopened=[self._item(i, user_id) for i in f.get("reopened", [])],
                             hint=_without_routes(f.get("hint") or ""))

    def _written(self, user_id: str, out: dict[str, Any]) -> list[MemoryNode]:
        nodes = [self._node(m, user_id) for m in out["written"]]
        if out.get("warning"):
            raise RemoteConsolidationIncomplete(out["warning"], nodes)
        return nodes

    # ------------------------------------------------------------------ writes
    def end_session(self, user_id: str, session_id: str) -> list[MemoryNode]:
        """End a session and consolidate what that closes; returns the memories written.

        Raises:
            NotFoundError: unknown user or session. ConsolidationIncomplete: the session is ended but some window
                could not be consolidated (``written`` holds the rest).
        """
        return self._written(user_id, self._http.call("POST", f"/v1/users/{user_id}/sessions/{session_id}/end"))

    def consolidate(self, user_id: str | None = None, *, flush: bool = False,
                    progress: Progress = no_progress) -> list[MemoryNode]:
        """Consolidate the user's due windows (every open one with ``flush``; every user without ``user_id``) on the
        service; ``progress`` is not called (the work runs there, in one request).

        Raises:
            NotFoundError: unknown user. ConsolidationIncomplete: as :meth:`end_session`.
        """
        written: list[MemoryNode] = []
        for user in [user_id] if user_id else self.users():
            out = self._http.call("POST", f"/v1/users/{user}/consolidate", json={"flush": flush})
            written += self._written(user, out)
        return written

    def edit_memory(self, node_id: str, content: str, *, actor: str = "user") -> MemoryNode:
        """New content for an active memory; the service re-consolidates its ancestors. Returns the edited node.

        Raises:
            NotFoundError: no such memory of this tenant. InputError: empty content, or the memory is not active.
        """
        user = self._owner(self._node_owner, "memory", node_id)
        out = self._http.call("PATCH", f"/v1/users/{user}/memories/{node_id}", json={"content": content})
        return self._node(out, user)

    def delete_memories(self, node_ids: Sequence[str], *, hard: bool = False, actor: str = "user") -> dict[str, float]:
        """Soft-delete (undoable) or, with ``hard``, erase memories one by one; returns ``{}`` (the file rewrite's
        cost stays on the service).

        Raises:
            NotFoundError: a memory that is not the tenant's (the ones before it are deleted).
        """
        for node_id in node_ids:
            user = self._owner(self._node_owner, "memory", node_id)
            self._http.call("DELETE", f"/v1/users/{user}/memories/{node_id}", params={"hard": "true"} if hard else None)
        return {}

    def restore_memory(self, node_id: str, *, actor: str = "user") -> None:
        """Undo a soft delete."""
        user = self._owner(self._node_owner, "memory", node_id)
        self._http.call("POST", f"/v1/users/{user}/memories/{node_id}/restore")

    def erase_user(self, user_id: str, *, actor: str = "user") -> dict[str, float]:
        """Erase the user on the service; returns the rows removed per table and ``file_*`` (the file rewrite)."""
        out = self._http.call("DELETE", f"/v1/users/{user_id}")
        return {**{k: float(v) for k, v in out["counts"].items()}, **{f"file_{k}": v for k, v in out["file"].items()}}

    def forget_items(self, item_ids: Sequence[str], *, actor: str = "user") -> None:
        """Forget memory items alone (soft delete; their segments stay).

        Raises:
            NotFoundError: an item that is not the tenant's.
        """
        for item_id in item_ids:
            user = self._owner(self._item_owner, "memory item", item_id)
            self._http.call("DELETE", f"/v1/users/{user}/items/{item_id}")

    def pin_item(self, item_id: str, pinned: bool = True, *, actor: str = "user") -> MemoryItem:
        """Pin (or unpin) a memory item: pinned items go into every answer's system message."""
        user = self._owner(self._item_owner, "memory item", item_id)
        out = self._http.call("POST", f"/v1/users/{user}/items/{item_id}/pin", json={"pinned": pinned})
        return self._item(out, user)

    def forget(self, user_id: str, text: str = "", *, item_ids: Sequence[str] = (), confirm: bool = False,
               actor: str = "user") -> ForgetPreview:
        """What matches ``text`` ("I work at Blue Harbor"), or the items ``item_ids`` with their source segments:
        items and L1 segments; with ``confirm`` they are soft-deleted on the service.

        Raises:
            InputError: empty text and no ids. NotFoundError: unknown user or item.
        """
        out = self._http.call("POST", f"/v1/users/{user_id}/forget",
                         json={"text": text, "item_ids": list(item_ids), "confirm": confirm})
        return self._preview(user_id, out)


def _without_routes(hint: str) -> str:
    """A forget preview's ``hint`` as the service sends it (:meth:`timem.service.models.ForgetOut.of`) without its last
    sentence, the routes that list the user's memories: a front end of this client (the studio) names its own
    pages instead, as ``timem forget`` names its commands."""
    return hint.split(" List them with GET /v1/", 1)[0]
