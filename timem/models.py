"""Core records of the Temporal Memory Tree (TiMem, arXiv 2601.02845, §3).

Time rule: every ``datetime`` here is timezone-aware UTC. Naive input is interpreted in the
configured user time zone (``Config.time.timezone``) by :func:`timem.tree.windows.to_utc` at the edges
(importers, CLI, studio) and never reaches these models.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone, tzinfo
from enum import IntEnum, StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Level(IntEnum):
    """Levels of the Temporal Memory Tree."""

    SEGMENT = 1  #: L1: one turn (``l1_unit = "turn"``, the default) or one exchange, times ``l1_segment_exchanges``
    SESSION = 2  #: L2: one conversation session
    DAY = 3  #: L3: one calendar day in the user's zone
    WEEK = 4  #: L4: ISO week (Mon–Sun) cut at month boundaries
    PROFILE = 5  #: L5: one calendar month; profiles the participants

    @property
    def label(self) -> str:
        return f"L{int(self)} {self.name.lower()}"


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    OTHER = "other"


class NodeStatus(StrEnum):
    ACTIVE = "active"
    DELETED = "deleted"  #: soft-deleted (undo possible, audit record kept)
    SUPERSEDED = "superseded"  #: replaced by a re-consolidated version


def _utc(v: datetime) -> datetime:
    if v.tzinfo is None or v.utcoffset() is None:
        raise ValueError("datetime must be timezone-aware (convert naive input at the edge with to_utc)")
    return v.astimezone(UTC)


#: How a consolidated (L2-L5) memory is written: selected utterances (no LLM), the same plus an LLM title,
#: or an LLM summary (:mod:`timem.consolidation.consolidator`).
ConsolidationMode = Literal["extractive", "hybrid", "abstractive"]
CONSOLIDATION_MODES: tuple[str, ...] = ("extractive", "hybrid", "abstractive")
#: ``MemoryNode.mode``: the L1 modes (``verbatim`` text or ``llm`` facts) and the consolidation modes.
NodeMode = Literal["verbatim", "llm", "extractive", "hybrid", "abstractive"]


def default_mode(level: int, model_id: str) -> str:
    """The mode of a node written before modes were recorded (the ``_v2`` migration's rule):
    ``verbatim`` for L1 with model id ``verbatim``, ``llm`` for other L1, ``abstractive`` for L2-L5."""
    if int(level) == 1:
        return "verbatim" if model_id == "verbatim" else "llm"
    return "abstractive"


class TimeSpan(BaseModel):
    """A closed interval ``[start, end]`` of event time, UTC-aware."""

    model_config = ConfigDict(frozen=True)
    start: datetime
    end: datetime

    _v = field_validator("start", "end")(lambda cls, v: _utc(v))

    def model_post_init(self, __context: object) -> None:
        if self.end < self.start:
            raise ValueError(f"span end {self.end.isoformat()} is before start {self.start.isoformat()}")

    def contains(self, other: TimeSpan) -> bool:
        """Temporal containment: ``self.start <= other.start`` and ``other.end <= self.end``."""
        return self.start <= other.start and other.end <= self.end



#: separates the parts of a turn id (``user:session:seq``, :func:`timem.datasets.base.turn_id`); refused inside
#: user and session ids, so that no two turns can share an id (``a:b`` + session ``c`` and ``a`` + session ``b:c``
#: would)
ID_SEPARATOR = ":"


#: the event-time years (UTC) a turn may have: the L3-L5 windows around it (a week, a month) must be representable
MIN_YEAR, MAX_YEAR = 2, 9998
#: how far past the clock an imported or served turn's event time may lie (``timem ingest``, the memory service, MCP,
#: the OpenAI proxy): event time is when it was said, so it is not in the future; a day of slack for clocks and zones
#: (a naive time read in the wrong zone is at most 14 hours off). The studio's simulated clock and the Python
#: library take any time within :data:`MIN_YEAR`-:data:`MAX_YEAR` (a study may run ahead of today on purpose).
MAX_AHEAD = timedelta(days=1)


class Turn(BaseModel):
    """One utterance. ``event_time`` is when it was said (UTC); ``ingested_at`` is when we stored it.

    ``utc_offset_minutes`` is the speaker's UTC offset at that moment: the offset written in the
    input's timestamp if not UTC, else the offset of the user's zone (``Config.time.user_timezones`` /
    ``Config.time.timezone``) at that instant, recorded at import; ``None`` for turns stored before it
    was kept. Relative dates in the text ("yesterday") are resolved in that local time
    (:meth:`local_time`).
    """

    model_config = ConfigDict(frozen=True)
    id: str
    user_id: str
    session_id: str
    seq: int  #: position within the session, from 0
    speaker: str
    role: Role
    text: str
    event_time: datetime
    source_ref: str | None = None  #: e.g. LoCoMo dia_id "D1:3"
    image_caption: str | None = None
    ingested_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    utc_offset_minutes: int | None = Field(default=None, ge=-24 * 60, le=24 * 60)

    _v = field_validator("event_time", "ingested_at")(lambda cls, v: _utc(v))

    def local_time(self, tz: tzinfo) -> datetime:
        """``event_time`` as the speaker's local time: at ``utc_offset_minutes`` if known, else in ``tz``."""
        if self.utc_offset_minutes is None:
            return self.event_time.astimezone(tz)
        return self.event_time.astimezone(timezone(timedelta(minutes=self.utc_offset_minutes)))


#: A session lasts at most this long from its first turn: its L2 memory sits under the L3 day it started in, so a
#: later turn would stretch the session's (and that day's, week's, month's) span past the calendar window. Chat
#: turns past it are refused (:mod:`timem.engine_chat`), and so is a JSONL session that runs longer
#: (:mod:`timem.datasets.jsonl`).
MAX_SESSION = timedelta(days=1)


class SessionInfo(BaseModel):
    """One session of a user as stored: when its first and latest turns were said (UTC-aware event
    times) and whether it was ended explicitly (``timem`` ``end_session``; a session also closes in event
    time, see :func:`timem.tree.windows.closed_sessions`)."""

    model_config = ConfigDict(frozen=True)
    session_id: str
    started_at: datetime
    last_event_at: datetime
    ended: bool = False

    _v = field_validator("started_at", "last_event_at")(lambda cls, v: _utc(v))


class MemoryNode(BaseModel):
    """A node of the Temporal Memory Tree.

    ``window_key`` names the time window the node consolidates, e.g. ``session:S3``,
    ``day:2023-05-08``, ``week:2023-05-08..2023-05-14``, ``month:2023-05``; L1 uses
    ``segment:<first turn id>``. At most one *active* node exists per (user, level, window_key).
    """

    model_config = ConfigDict(frozen=True)
    id: str
    user_id: str
    level: Level
    window_key: str
    span_start: datetime
    span_end: datetime
    content: str
    child_ids: list[str] = Field(default_factory=list)
    history_ids: list[str] = Field(default_factory=list)  #: same-level nodes the prompt saw
    source_turn_ids: list[str] = Field(default_factory=list)  #: L1 only
    session_id: str | None = None  #: L1 and L2: the session they belong to
    model_id: str  #: "verbatim" for L1 text, "extractive" for selected utterances, else the LLM's id
    prompt_version: str
    #: how the node was written (see :data:`NodeMode`); re-consolidation keeps it. Omitted: derived
    #: from level and model id by :func:`default_mode`.
    mode: NodeMode = "abstractive"
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    status: NodeStatus = NodeStatus.ACTIVE
    stale: bool = False  #: a descendant changed; re-consolidation pending

    _v = field_validator("span_start", "span_end", "created_at")(lambda cls, v: _utc(v))

    @model_validator(mode="before")
    @classmethod
    def _fill_mode(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("mode") is None and "level" in data and "model_id" in data:
            data = {**data, "mode": default_mode(data["level"], data["model_id"])}
        return data

    @property
    def span(self) -> TimeSpan:
        return TimeSpan(start=self.span_start, end=self.span_end)


class WriteRequest(BaseModel):
    """A client's idempotency key for one write and a fingerprint of what it sent (SHA-256 hex of the
    canonical request body). Stored with the turns in one transaction (table ``write_requests``), so a
    retry with the same key is answered once and stored once, across restarts."""

    model_config = ConfigDict(frozen=True)

    key: str = Field(min_length=1, max_length=255)
    fingerprint: str


#: kinds of memory items (:mod:`timem.memory`): facts and preferences supersede each other on the same
#: subject and attribute; events and plans accumulate
ItemKind = Literal["fact", "preference", "event", "plan"]
ITEM_KINDS: tuple[str, ...] = ("fact", "preference", "event", "plan")


class MemoryItem(BaseModel):
    """A semantic memory above the tree: "``subject``'s ``attribute`` is ``value``" (e.g. Mia / home city /
    Porto), linked to the L1 segment(s) it was read from (``source_ids``).

    Times are UTC-aware. ``event_time`` is when it was said; the item holds over ``[valid_from, valid_to)``,
    ``valid_to`` ``None`` while it is open. A newer item on the same subject and attribute closes it
    (supersession: ``valid_to`` = the newer item's event time, ``superseded_by`` = its id); it is kept as
    history. ``source`` is ``stated`` (said by the subject) or ``inferred`` (an LLM's reading);
    ``status`` ``deleted`` = forgotten (soft delete, undoable). ``last_access`` / ``access_count`` feed the
    decay score (:func:`timem.recall.items.decay_weight`).
    """

    id: str
    user_id: str
    kind: ItemKind
    subject: str
    attribute: str
    value: str
    event_time: datetime
    valid_from: datetime
    valid_to: datetime | None = None
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)
    source: Literal["stated", "inferred"] = "stated"
    source_ids: list[str] = Field(default_factory=list)
    superseded_by: str | None = None
    status: Literal["active", "deleted"] = "active"
    pinned: bool = False
    last_access: datetime | None = None
    access_count: int = 0
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    _v = field_validator("event_time", "valid_from", "created_at")(lambda cls, v: _utc(v))

    @property
    def is_open(self) -> bool:
        return self.valid_to is None

    def valid_at(self, t: datetime) -> bool:
        """Whether the item held at ``t`` (UTC-aware): ``valid_from <= t < valid_to``."""
        return self.valid_from <= t and (self.valid_to is None or t < self.valid_to)

    def label(self) -> str:
        """``"Mia's home city: Porto"``."""
        return f"{self.subject}'s {self.attribute}: {self.value}"
