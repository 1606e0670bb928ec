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
  service's one-line message (:func:`error_for`); a connection failure is :class:`ServiceUnreachableError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import httpx

from timem.chat_turns import ChatTurn
from timem.config import Complexity, Config, load_config
from timem.errors import (
    AuthError,
    ChatTurnError,
    ConfigError,
    ConsolidationIncomplete,
    EmbeddingError,
    InputError,
    LLMError,
    NotFoundError,
    ServiceUnreachableError,
    TextTooLongError,
    TimemError,
)
from timem.memory.forget import ForgetPreview
from timem.models import MemoryItem, MemoryNode, NodeStatus, Role, SessionInfo, Turn
from timem.progress import Progress, no_progress
from timem.recall.gating import GateMode
from timem.recall.options import RecallOptions, recall_options
from timem.recall.pipeline import RecallResult
from timem.recall.trace import RecallTrace

#: how the studio starts the service this client talks to (said when it cannot be reached)
START_HINT = "start it with `timem serve --db FILE --port PORT` (keys: `timem keys add TENANT --db FILE`)"


class RemoteConsolidationIncomplete(ConsolidationIncomplete):
    """The service stored a write but could not consolidate some window (its answer's ``warning``): the window
    stays due on the service. ``written`` holds the memories that were written; ``failures`` is empty (the service
    names the windows in the message)."""

    def __init__(self, message: str, written: list[MemoryNode]) -> None:
        LLMError.__init__(self, message)
        self.failures, self.written, self.report = [], list(written), None


def error_for(status: int, body: Any, url: str) -> TimemError:
    """The :mod:`timem.errors` exception for a service error answer (``status`` >= 400, JSON ``body``).

    401 -> :class:`AuthError` (check the key), 404 -> :class:`NotFoundError`, 413 -> :class:`TextTooLongError`,
    400 / 422 -> :class:`InputError`, 409 -> :class:`ConfigError`, 502 -> :class:`ChatTurnError` (a chat turn,
    with its ``stage``) or :class:`LLMError`, 503 -> :class:`EmbeddingError`, else :class:`TimemError`.
    """
    msg = body.get("error") if isinstance(body, dict) else None
    msg = " ".join(str(msg or body or f"HTTP {status}").split())
    if status == 401:
        return AuthError(f"the service at {url} refused the API key ({msg}); check the key given with --key or "
                         "TIMEM_SERVICE_KEY (`timem keys list --db FILE` on the service's machine)")
    if status == 404:
        return NotFoundError(msg)
    if status == 413:
        return TextTooLongError(msg)
    if status in (400, 422):
        return InputError(msg)
    if status == 409:
        return ConfigError(msg)
    if status == 502:
        stage = body.get("stage") if isinstance(body, dict) else None
        return ChatTurnError(stage, msg) if stage else LLMError(msg)
    if status == 503:
        return EmbeddingError(msg)
    return TimemError(f"the service at {url} failed (HTTP {status}): {msg}")


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
        self._http = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=timeout,
                                  transport=transport)
        self._node_owner: dict[str, str] = {}
        self._item_owner: dict[str, str] = {}
        about = self._call("GET", "/v1/about")
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

    # ------------------------------------------------------------------ HTTP
    def _call(self, method: str, path: str, **kw: Any) -> Any:
        try:
            r = self._http.request(method, path, **kw)
        except httpx.TimeoutException as exc:
            raise ServiceUnreachableError(
                f"the memory service at {self.url} did not answer in time ({type(exc).__name__}); a write may or may "
                "not have been stored: look before sending it again, or check that the service is running") from exc
        except httpx.TransportError as exc:
            raise ServiceUnreachableError(f"the memory service is not reachable at {self.url} ({exc}); {START_HINT}, "
                                          "or fix --service / TIMEM_SERVICE_URL") from exc
        try:
            body = r.json()
        except ValueError:
            body = r.text
        if r.status_code >= 400:
            raise error_for(r.status_code, body, self.url)
        return body

    def _list(self, path: str, field: str, **params: Any) -> list[Any]:
        """``GET path`` -> ``body[field]``; ``[]`` when the user is unknown (404), as the engine's reads."""
        try:
            return list(self._call("GET", path, params={k: v for k, v in params.items() if v is not None})[field])
        except NotFoundError:
            return []

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
        return list(self._call("GET", "/v1/users")["users"])

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
        rows = self._list(f"/v1/users/{user_id}/turns", "turns", session_id=session_id,
                          ids=list(ids) if ids else None)
        turns = [Turn(user_id=user_id, **{**{k: v for k, v in t.items() if k != "forgotten"},
                                          "role": Role(t["role"])}) for t in rows]
        return turns, {t["id"] for t in rows if t.get("forgotten")}

    def sessions(self, user_id: str) -> list[SessionInfo]:
        """The user's sessions, by start."""
        return [SessionInfo(**s) for s in self._list(f"/v1/users/{user_id}/sessions", "sessions")]

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
        rows = self._list(f"/v1/users/{user_id}/memories", "memories", level=level,
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
        return [RecallTrace.model_validate(t) for t in self._list(f"/v1/users/{user_id}/traces", "traces",
                                                                  limit=limit)]

    def default_question_time(self, user_id: str) -> datetime | None:
        """The user's latest event (UTC), or ``None`` without turns (see :meth:`MemoryEngine.default_question_time`)."""
        sessions = self.sessions(user_id)
        return max(s.last_event_at for s in sessions) if sessions else None

    def memory_items(self, user_id: str, *, status: str | None = "active", reopen: bool = True
                     ) -> list[MemoryItem]:
        """The user's memory items (``"active"``, ``"deleted"`` or ``None`` = all), oldest first; ``reopen`` as
        :meth:`timem.engine_items.MemoryItems.memory_items`."""
        rows = self._list(f"/v1/users/{user_id}/items", "items", status=status or "all",
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
        out = self._call("POST", f"/v1/users/{user_id}/recall", json={k: v for k, v in body.items() if v is not None})
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
        out = self._call("POST", f"/v1/users/{user_id}/chat", json={
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
                             reopened=[self._item(i, user_id) for i in f.get("reopened", [])],
                             hint=f.get("hint") or "")

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
        return self._written(user_id, self._call("POST", f"/v1/users/{user_id}/sessions/{session_id}/end"))

    def consolidate(self, user_id: str | None = None, *, flush: bool = False,
                    progress: Progress = no_progress) -> list[MemoryNode]:
        """Consolidate the user's due windows (every open one with ``flush``; every user without ``user_id``) on the
        service; ``progress`` is not called (the work runs there, in one request).

        Raises:
            NotFoundError: unknown user. ConsolidationIncomplete: as :meth:`end_session`.
        """
        written: list[MemoryNode] = []
        for user in [user_id] if user_id else self.users():
            written += self._written(user, self._call("POST", f"/v1/users/{user}/consolidate", json={"flush": flush}))
        return written

    def edit_memory(self, node_id: str, content: str, *, actor: str = "user") -> MemoryNode:
        """New content for an active memory; the service re-consolidates its ancestors. Returns the edited node.

        Raises:
            NotFoundError: no such memory of this tenant. InputError: empty content, or the memory is not active.
        """
        user = self._owner(self._node_owner, "memory", node_id)
        return self._node(self._call("PATCH", f"/v1/users/{user}/memories/{node_id}", json={"content": content}), user)

    def delete_memories(self, node_ids: Sequence[str], *, hard: bool = False, actor: str = "user") -> dict[str, float]:
        """Soft-delete (undoable) or, with ``hard``, erase memories one by one; returns ``{}`` (the file rewrite's
        cost stays on the service).

        Raises:
            NotFoundError: a memory that is not the tenant's (the ones before it are deleted).
        """
        for node_id in node_ids:
            user = self._owner(self._node_owner, "memory", node_id)
            self._call("DELETE", f"/v1/users/{user}/memories/{node_id}", params={"hard": "true"} if hard else None)
        return {}

    def restore_memory(self, node_id: str, *, actor: str = "user") -> None:
        """Undo a soft delete."""
        user = self._owner(self._node_owner, "memory", node_id)
        self._call("POST", f"/v1/users/{user}/memories/{node_id}/restore")

    def erase_user(self, user_id: str, *, actor: str = "user") -> dict[str, float]:
        """Erase the user on the service; returns the rows removed per table and ``file_*`` (the file rewrite)."""
        out = self._call("DELETE", f"/v1/users/{user_id}")
        return {**{k: float(v) for k, v in out["counts"].items()}, **{f"file_{k}": v for k, v in out["file"].items()}}

    def forget_items(self, item_ids: Sequence[str], *, actor: str = "user") -> None:
        """Forget memory items alone (soft delete; their segments stay).

        Raises:
            NotFoundError: an item that is not the tenant's.
        """
        for item_id in item_ids:
            user = self._owner(self._item_owner, "memory item", item_id)
            self._call("DELETE", f"/v1/users/{user}/items/{item_id}")

    def pin_item(self, item_id: str, pinned: bool = True, *, actor: str = "user") -> MemoryItem:
        """Pin (or unpin) a memory item: pinned items go into every answer's system message."""
        user = self._owner(self._item_owner, "memory item", item_id)
        return self._item(self._call("POST", f"/v1/users/{user}/items/{item_id}/pin", json={"pinned": pinned}), user)

    def forget(self, user_id: str, text: str = "", *, item_ids: Sequence[str] = (), confirm: bool = False,
               actor: str = "user") -> ForgetPreview:
        """What matches ``text`` ("I work at Blue Harbor"), or the items ``item_ids`` with their source segments:
        items and L1 segments; with ``confirm`` they are soft-deleted on the service.

        Raises:
            InputError: empty text and no ids. NotFoundError: unknown user or item.
        """
        out = self._call("POST", f"/v1/users/{user_id}/forget",
                         json={"text": text, "item_ids": list(item_ids), "confirm": confirm})
        return self._preview(user_id, out)
