"""Request and response bodies of the memory service (pydantic; they make the OpenAPI schema).

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
from timem.memory.forget import ForgetPreview
from timem.memory.forget_scope import spoken
from timem.models import MemoryItem, MemoryNode, SessionInfo, Turn
from timem.recall.options import RecallOptions

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
    """Only ISO 8601 text is a time here: pydantic would read a number as seconds since 1970 (a client's mistake,
    e.g. milliseconds, would be stored as a date centuries away)."""
    if not isinstance(value, str):
        raise ValueError("give the time as ISO 8601 text with an offset, e.g. 2024-05-02T09:00:00+02:00, "
                         f"not {type(value).__name__}")
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


class ForgetIn(_In):
    #: what to forget, e.g. "I work at Blue Harbor" (a "forget that ..." prefix is allowed); or give ``item_ids``
    text: str = ""
    #: memory items to forget with the L1 segments they were read from (instead of ``text``)
    item_ids: list[str] = Field(default_factory=list, max_length=500)
    confirm: StrictBool = False  #: false: only say what would go; true: soft-delete it


class ItemOut(BaseModel):
    """One memory item (a fact, preference, event or plan above the tree) as a tenant sees it."""

    id: str
    kind: str
    subject: str
    attribute: str
    value: str
    event_time: datetime
    valid_from: datetime
    valid_to: datetime | None  #: None while the item holds
    superseded_by: str | None
    confidence: float
    source: str
    source_ids: list[str]  #: the L1 segments it was read from
    status: str
    pinned: bool

    @classmethod
    def of(cls, i: MemoryItem) -> ItemOut:
        return cls(id=i.id, kind=i.kind, subject=i.subject, attribute=i.attribute, value=i.value,
                   event_time=i.event_time, valid_from=i.valid_from, valid_to=i.valid_to,
                   superseded_by=i.superseded_by, confidence=i.confidence, source=i.source,
                   source_ids=list(i.source_ids), status=i.status, pinned=i.pinned)


class ItemsOut(BaseModel):
    user: str
    items: list[ItemOut]


class ForgetSegmentOut(BaseModel):
    """One L1 segment that a forget request takes, as the CLI's preview shows it: who said it, when, and what."""

    id: str  #: undoable with ``POST …/memories/{id}/restore``
    date: str  #: as the segment writes it, in the service's time zone: "2 May 2024 (Thursday) 09:00"
    span_start: datetime  #: UTC
    speaker: str  #: "Mia"; several speakers of one segment joined with ", "
    #: what was said; a segment of several speakers gives each line as "Speaker: text", one a line
    text: str
    reply: bool = False  #: the assistant's reply to a line that goes (the exchange goes whole)

    @classmethod
    def of(cls, n: MemoryNode, reply: bool = False) -> ForgetSegmentOut:
        date, lines = spoken(n.content)
        speakers = list(dict.fromkeys(who for who, _ in lines if who))
        text = (" ".join(said for _, said in lines) if len(speakers) <= 1
                else "\n".join(f"{who}: {said}" if who else said for who, said in lines))
        return cls(id=n.id, date=date, span_start=n.span_start, speaker=", ".join(speakers), text=text, reply=reply)


class ForgetOut(BaseModel):
    user: str
    text: str
    forgotten: bool  #: true when ``confirm`` was given and something matched
    items: list[ItemOut]  #: the items that go (or would go)
    segments: list[str]  #: the L1 segment ids that go (or would go), undoable with .../restore
    #: the same segments, each with its speaker, date and text (:class:`ForgetSegmentOut`)
    segment_lines: list[ForgetSegmentOut] = Field(default_factory=list)
    #: ids of the items in ``items`` that ``text`` does not name: said only in a message that goes, they go with it
    collateral: list[str] = Field(default_factory=list)
    #: ids of the segments in ``segments`` that are the assistant's reply to a line that goes: the exchange goes
    #: whole (the reply often repeats what was said)
    replies: list[str] = Field(default_factory=list)
    #: older items that hold again once ``items`` go (an item in ``items`` had superseded them)
    reopened: list[ItemOut] = Field(default_factory=list)
    #: when nothing matched: why, what was searched and what to try ("no memory holds 'Hamburg'. Check the spelling
    #: … Searched 3 facts and 12 conversation segments …", and the routes that list them); null when something
    #: matched
    hint: str | None = None

    @classmethod
    def of(cls, plan: ForgetPreview, user: str, text: str, *, forgotten: bool) -> ForgetOut:
        """The answer for the preview ``plan`` of ``user``'s request ``text`` (``forgotten``: it was applied)."""
        hint = None
        if plan.empty:
            hint = (f"{plan.why()} List them with GET /v1/users/{user}/items (facts) and GET "
                    f"/v1/users/{user}/memories?level=1 (conversation segments).")
        return cls(user=user, text=text, forgotten=forgotten and not plan.empty,
                   items=[ItemOut.of(i) for i in plan.items], segments=[n.id for n in plan.segments],
                   segment_lines=[ForgetSegmentOut.of(n, n.id in plan.replies) for n in plan.segments],
                   collateral=sorted(plan.collateral), replies=sorted(plan.replies),
                   reopened=[ItemOut.of(i) for i in plan.reopened], hint=hint)


class MemoryOut(BaseModel):
    """One memory node as a tenant sees it."""

    id: str
    level: int
    window_key: str
    span_start: datetime
    span_end: datetime
    content: str
    status: str
    mode: str
    stale: bool
    session_id: str | None
    child_ids: list[str]
    source_turn_ids: list[str]
    model_id: str = ""  #: who wrote it: "verbatim" (L1 text), "extractive", or the LLM's id
    prompt_version: str = ""
    created_at: datetime | None = None

    @classmethod
    def of(cls, n: MemoryNode, internal: str, user: str) -> MemoryOut:
        """``n`` with the namespaced user id ``internal`` shown as ``user`` in its keys and turn ids."""

        def ext(s: str) -> str:
            return s.replace(internal, user)

        return cls(id=n.id, level=int(n.level), window_key=ext(n.window_key), span_start=n.span_start,
                   span_end=n.span_end, content=n.content, status=n.status.value, mode=n.mode, stale=n.stale,
                   session_id=n.session_id, child_ids=list(n.child_ids),
                   source_turn_ids=[ext(t) for t in n.source_turn_ids], model_id=n.model_id,
                   prompt_version=n.prompt_version, created_at=n.created_at)


class WrittenOut(BaseModel):
    """What a write did: the turns stored (ids), the memories written, and a warning if consolidation of some
    window failed (the turns and every other memory are stored; the window stays due)."""

    user: str
    turn_ids: list[str] = Field(default_factory=list)
    written: list[MemoryOut] = Field(default_factory=list)
    warning: str | None = None
    #: true when this answers a retry: the write with this idempotency key was stored before (``turn_ids``
    #: are its turns; ``written`` holds only memories consolidated now, e.g. when a crash cut the first
    #: attempt short after its turns were stored; the others were reported the first time)
    replayed: bool = False
    #: true when the write's consolidation is queued (``consolidation.online_queue``): ``written`` is empty, the
    #: service's worker writes the memories shortly (``GET /v1/queue``); a recall sees the write at once
    queued: bool = False


class RecallOut(BaseModel):
    user: str
    context: str  #: the recalled context, as the person sees it
    #: ``context`` for an LLM prompt: each memory that gives instructions to an AI assistant (a pasted "ignore all
    #: previous instructions", a fake ``System:`` line) replaced by a withheld marker
    #: (:func:`timem.prompts.injection.withhold_instructions`); equal to ``context`` when there is none
    prompt_context: str
    withheld: list[str]  #: the first line of each memory withheld from ``prompt_context`` (``[]`` when none)
    node_ids: list[str]
    mem_len: int  #: cl100k tokens of the context
    trace: dict[str, Any]  #: the recall trace (:class:`timem.recall.trace.RecallTrace` as JSON)


class AnswerOut(RecallOut):
    answer: str


class MemoriesOut(BaseModel):
    user: str
    memories: list[MemoryOut]


class UsersOut(BaseModel):
    users: list[str]


class ErasedOut(BaseModel):
    user: str
    counts: dict[str, int]  #: rows removed per table
    file: dict[str, float]  #: the file rewrite: seconds, bytes_before, bytes_after


class TenantErasedOut(BaseModel):
    """What ``DELETE /v1/users?confirm=true`` erased: the tenant's users and the rows removed per table."""

    tenant: str
    erased: list[str]  #: the users erased, sorted
    counts: dict[str, int]  #: rows removed per table, summed over the users


class TurnOut(BaseModel):
    """One stored turn as a tenant sees it (``id`` is ``<user>:<session>:<seq>``)."""

    id: str
    session_id: str
    seq: int
    speaker: str
    role: str  #: "user" or "assistant"
    text: str
    event_time: datetime
    utc_offset_minutes: int | None = None  #: the speaker's UTC offset when it was said
    source_ref: str | None = None
    image_caption: str | None = None
    #: the person asked to forget it: its L1 segments are soft-deleted (restorable), so recall no longer finds it;
    #: the text stays here until a restore or an erase (views of the conversation should hide it)
    forgotten: bool = False

    @classmethod
    def of(cls, t: Turn, internal: str, user: str, forgotten: bool = False) -> TurnOut:
        return cls(id=t.id.replace(internal, user), session_id=t.session_id, seq=t.seq, speaker=t.speaker,
                   role=t.role.value, text=t.text, event_time=t.event_time, utc_offset_minutes=t.utc_offset_minutes,
                   source_ref=t.source_ref, image_caption=t.image_caption, forgotten=forgotten)


class TurnsOut(BaseModel):
    user: str
    turns: list[TurnOut]


class SessionsOut(BaseModel):
    user: str
    sessions: list[SessionInfo]


class TracesOut(BaseModel):
    user: str
    traces: list[dict[str, Any]]  #: stored recall traces, newest first (as in ``RecallOut.trace``)


class ChatOut(BaseModel):
    """A chat turn: the reply as stored, its recall trace, the memories written, a consolidation warning, and for a
    "forget that ..." message what was forgotten (then neither the message nor the reply is stored)."""

    user: str
    session_id: str
    reply: str
    trace: dict[str, Any]
    written: list[MemoryOut]
    warning: str | None = None
    forgotten: ForgetOut | None = None


class AboutOut(BaseModel):
    """What a client needs to know about the service (no data of any user, no file path)."""

    tenant: str  #: the tenant of the key used
    has_llm: bool  #: whether ``answer`` and LLM-written memories are available
    llm: str | None  #: the LLM's model id, or None
    consolidation_mode: str  #: how new L2-L5 memories are written
    level_modes: dict[int, str]  #: per-level modes that replace it
    timezone: str  #: the zone of L3 days, L4 weeks and L5 months
    session_idle_timeout_minutes: int  #: an event-time gap that closes a session (a chat opens a new one)
    max_text_chars: int  #: longest text accepted (413 beyond)
    #: the consolidation queue of this tenant's users: jobs per state (pending, running, done, failed)
    queue: dict[str, int] = Field(default_factory=dict)
    online_queue: bool = False  #: whether writes are acknowledged before their consolidation (a worker runs)
    #: DuckDB's buffer pool limit in effect, and where it comes from: "256.0 MiB (duckdb_memory_mb)" or "18.8 GiB
    #: (DuckDB's default: 80 % of the RAM; duckdb_memory_mb sets it)" (:meth:`timem.engine_reads.StoreReads.stats`)
    duckdb_memory_limit: str | None = None


class QueueJobOut(BaseModel):
    """A failed consolidation job: its id, user, how often it ran, its error (UTC time)."""

    id: int
    user: str
    attempts: int
    error: str | None
    enqueued_at: str


class QueueOut(BaseModel):
    """The consolidation queue of the calling tenant's users: jobs per state, the newest failed ones with their
    errors, and how many failed jobs a retry put back to pending."""

    pending: int
    running: int
    done: int
    failed: int
    worker: bool  #: whether a worker drains the queue (else writes consolidate in the request)
    failed_jobs: list[QueueJobOut] = Field(default_factory=list)
    retried: int = 0


class ErrorOut(BaseModel):
    """Every error response: one line saying what is wrong and what to do."""

    error: str
