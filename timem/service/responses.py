"""Response bodies of the memory service (pydantic; they make the OpenAPI schema): what a tenant sees of its
memories, items, turns, recalls, chats, forgets and the queue. Times are UTC; ids visible to a tenant are its own user
ids (``user``), never the namespaced store ids. The request bodies are in :mod:`timem.service.models`, which
re-exports these.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from timem.memory.forget import ForgetPreview
from timem.memory.forget_scope import spoken
from timem.models import MemoryItem, MemoryNode, SessionInfo, Turn

__all__ = ["AboutOut", "AnswerOut", "ChatOut", "ErasedOut", "ErrorOut", "ForgetOut", "ForgetSegmentOut", "ItemOut",
           "ItemsOut", "MemoriesOut", "MemoryOut", "QueueJobOut", "QueueOut", "RecallOut", "RestoredMemoryOut",
           "RestoredOut", "SessionsOut", "TenantErasedOut", "TracesOut", "TurnOut", "TurnsOut", "UsersOut",
           "WrittenOut"]


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


class RestoredMemoryOut(BaseModel):
    """One memory a restore brought back (:class:`timem.editing.Restored`): the memory (active again), the memory
    items read from it that came back with it, and those that stay forgotten (forgotten by name, not only with it)."""

    memory: MemoryOut
    items: list[ItemOut]
    still_forgotten: list[ItemOut]


class RestoredOut(BaseModel):
    user: str
    restored: list[RestoredMemoryOut]  #: in the order of the request's ids


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
