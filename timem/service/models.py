"""Request bodies of the memory service (pydantic; they make the OpenAPI schema), the id patterns and time types they
check, and (re-exported from :mod:`timem.service.responses`) the response bodies.

Times are ISO 8601 with an offset (``AwareDatetime``: a naive time is refused with 422); responses give
UTC. Ids visible to a tenant are its own user ids (``user``), never the namespaced store ids.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

from timem.config import Config
from timem.datasets.base import ahead_of_clock
from timem.ids import ID_PATTERN, ID_RULE
from timem.ids import id_error as user_id_error
from timem.recall.options import RecallOptions
from timem.service.responses import (
    AboutOut,
    AnswerOut,
    ChatOut,
    ErasedOut,
    ErrorOut,
    ForgetOut,
    ForgetSegmentOut,
    ItemOut,
    ItemsOut,
    MemoriesOut,
    MemoryOut,
    QueueJobOut,
    QueueOut,
    RecallOut,
    RestoredMemoryOut,
    RestoredOut,
    SessionsOut,
    TenantErasedOut,
    TracesOut,
    TurnOut,
    TurnsOut,
    UsersOut,
    WrittenOut,
)
from timem.time_text import time_text_problem

#: the request bodies and their checks, and the response bodies (timem.service.responses), importable from here
__all__ = ["ChatIn", "ConsolidateIn", "EditIn", "EventTime", "ForgetIn", "id_error", "IDEMPOTENCY_KEY_PATTERN",
           "IsoTime", "ITEM_ID_PATTERN", "PATTERN_RULES", "PinIn", "RecallIn", "RestoreIn", "TurnsIn", "AboutOut",
           "AnswerOut", "ChatOut", "ErasedOut", "ErrorOut", "ForgetOut", "ForgetSegmentOut", "ItemOut", "ItemsOut",
           "MemoriesOut", "MemoryOut", "QueueJobOut", "QueueOut", "RecallOut", "RestoredMemoryOut", "RestoredOut",
           "SessionsOut", "TenantErasedOut", "TracesOut", "TurnOut", "TurnsOut", "UsersOut", "WrittenOut"]

#: idempotency keys: 1-255 printable ASCII characters without spaces (a UUID is the usual choice)
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{1,255}$"
#: memory item ids, as the item routes show them
ITEM_ID_PATTERN = r"^item-[0-9a-f]{16}$"
#: what each pattern allows, in words: a request that breaks one is told this, never the regex; user and session
#: ids follow :data:`timem.ids.ID_PATTERN`, the rule the studio applies too
PATTERN_RULES = {
    ID_PATTERN: ID_RULE,
    IDEMPOTENCY_KEY_PATTERN: "use 1-255 printable ASCII characters without spaces (a UUID is the usual choice)",
    ITEM_ID_PATTERN: "use an item id as the item routes show it: 'item-' and 16 hex digits",
}


def id_error(what: str, value: object, pattern: str = ID_PATTERN) -> str:
    """The one-line message for ``value`` that breaks ``pattern`` (one of :data:`PATTERN_RULES`), named ``what``
    (e.g. ``"user id"``, ``"session_id"``): what the id may hold and, for a user or session id holding ``:`` or
    ``/``, why that separator is refused (:func:`timem.ids.id_error`)."""
    if pattern == ID_PATTERN:
        return user_id_error(what, value)
    shown = repr(value) if len(str(value)) <= 80 else f"{str(value)[:77]!r}..."
    return f"{what} {shown} is not valid: {PATTERN_RULES[pattern]}"


def _iso_text(value: Any) -> Any:
    """Only ISO 8601 text with a time of day and an offset is a time here (:func:`timem.time_text.time_text_problem`):
    pydantic would read a number as seconds since 1970 (a client's mistake, e.g. milliseconds, would be stored as a
    date centuries away), and its own message for a date alone said "a valid datetime or date"."""
    if said := time_text_problem(value, offset_needed=True):  # a date alone, a number, a naive time: what to write
        raise ValueError(said)
    return value


def _not_ahead(value: datetime) -> datetime:
    """A turn's event time is when it was said: more than a day after the server's clock is refused, as by
    ``timem ingest`` (:func:`timem.datasets.base.ahead_of_clock`)."""
    if said := ahead_of_clock(value, value.isoformat()):
        raise ValueError(said)
    return value


#: a request's time: ISO 8601 text with an offset (a naive time or a number is 422)
IsoTime = Annotated[AwareDatetime, BeforeValidator(_iso_text)]
#: a turn's event time: an :data:`IsoTime` at most :data:`timem.models.MAX_AHEAD` after the server's clock
EventTime = Annotated[AwareDatetime, BeforeValidator(_iso_text), AfterValidator(_not_ahead)]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TurnsIn(_In):
    """Add the user's ``message``, the assistant's ``reply``, or both (one exchange) to ``session_id``.

    ``message`` alone stores the user turn (no consolidation yet: its L1 segment waits for the reply);
    ``reply`` alone stores the assistant's answer to it and consolidates; both store the exchange at once.
    ``event_time`` is when it was said (not when it is sent), with an offset.

    ``idempotency_key`` (or the ``Idempotency-Key`` header): send the same key when you retry this write
    (after a timeout, a dropped connection or a restart of the service) and it is stored once; the retry
    gets the first answer's ``turn_ids`` with ``replayed`` true. The same key with a different body is 422.
    """

    session_id: str = Field(pattern=ID_PATTERN)
    event_time: EventTime
    message: str | None = None
    reply: str | None = None
    #: the person's name on their turns and facts; default: the user id (as the studio names them)
    user_name: str | None = Field(default=None, min_length=1, max_length=100)
    assistant_name: str = Field(default="Assistant", min_length=1, max_length=100)
    consolidate: StrictBool = True
    idempotency_key: str | None = Field(default=None, pattern=IDEMPOTENCY_KEY_PATTERN)


class ConsolidateIn(_In):
    flush: StrictBool = False  #: close every open window (session, day, week, month), not only the due ones


class RecallIn(_In):
    query: str
    question_time: IsoTime | None = None  #: default: the user's latest event
    complexity: Literal["simple", "hybrid", "complex"] | None = None
    gate: Literal["score", "off", "llm"] | None = None
    planner: Literal["llm", "centroid"] | None = None  #: default: the service's configured planner
    persist: StrictBool = True  #: false: the trace is returned but not stored (a comparison run)
    #: per-request recall settings (default: the service's): semantic weight, leaf top k, token budget, and
    #: level quotas per complexity (``{"simple": {"1": 20, "2": 4}, ...}``)
    recall_lambda: float | None = Field(default=None, ge=0.0, le=1.0)
    recall_top_k: int | None = Field(default=None, ge=1, le=500)
    token_budget: int | None = Field(default=None, ge=1, le=100_000)
    quotas: dict[Literal["simple", "hybrid", "complex"], dict[int, int]] | None = None

    def overrides(self) -> dict[str, Any]:
        """The recall settings given in the request (plain setting names for ``Config.with_overrides``)."""
        return {k: v for k, v in self.model_dump(include={"recall_lambda", "recall_top_k", "token_budget",
                                                          "quotas"}).items() if v is not None}

    def options(self, config: Config) -> RecallOptions:
        """The request's :class:`RecallOptions`, with ``config`` (the service's settings) changed by the recall
        settings given (:meth:`overrides`; none given: the service's own settings are used as they are)."""
        overrides = self.overrides()
        return RecallOptions(complexity=self.complexity, gate=self.gate, planner=self.planner, persist=self.persist,
                             config=config.with_overrides(**overrides) if overrides else None)


class ChatIn(_In):
    """One chat turn answered by the service (``POST /v1/users/{user}/chat``): the message is stored, recalled
    for and answered (by the service's LLM, or without one a short note and the recalled context in the trace),
    then the reply is stored and what closed is consolidated (unless ``consolidate`` is false)."""

    session_id: str = Field(pattern=ID_PATTERN)
    event_time: EventTime
    message: str
    #: the person's name on their turns and facts; default: the user id (as the studio names them)
    user_name: str | None = Field(default=None, min_length=1, max_length=100)
    assistant_name: str = Field(default="Assistant", min_length=1, max_length=100)
    consolidate: StrictBool = True
    #: a "forget that ..." message forgets only with this; without it the reply and ``forgotten`` preview what
    #: would go (a fact said in the same message goes too), and nothing is forgotten
    confirm_forget: StrictBool = False


class PinIn(_In):
    pinned: StrictBool = True  #: false unpins


class EditIn(_In):
    content: str


class RestoreIn(_In):
    #: the forgotten (soft-deleted) memories to restore, e.g. the ``segments`` a confirmed forget listed; every id is
    #: checked before any is restored (a repeated id counts once)
    ids: list[Annotated[str, Field(max_length=64)]] = Field(min_length=1, max_length=500)


class ForgetIn(_In):
    #: what to forget, e.g. "I work at Blue Harbor" (a "forget that ..." prefix is allowed); or give ``item_ids``
    text: str = ""
    #: memory items to forget with the L1 segments they were read from (instead of ``text``)
    item_ids: list[str] = Field(default_factory=list, max_length=500)
    confirm: StrictBool = False  #: false: only say what would go; true: soft-delete it
