"""Chat turns: validation and construction of the turns an online chat writes (user message, assistant reply).

Used by :class:`timem.engine.MemoryEngine`; event time is UTC-aware, the speaker's UTC offset is kept
per turn so that dates render in the speaker's zone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from timem.datasets.base import ID_SEPARATOR, check_id, check_length, check_name, check_text, is_blank, turn_id
from timem.datasets.base import check_user_id as check_local_user_id
from timem.errors import InputError, TextTooLongError
from timem.models import MAX_YEAR, MIN_YEAR, MemoryNode, Role, Turn
from timem.recall.trace import RecallTrace
from timem.tree.windows import offset_minutes


@dataclass
class ChatTurn:
    """One answered chat exchange (:meth:`MemoryEngine.chat_turn`)."""

    session_id: str
    #: the recall trace of the answer (persisted; its ``answer`` is set when an LLM answered)
    trace: RecallTrace
    #: the assistant's reply as stored; without an LLM :func:`reply_without_llm`, shown but not stored
    reply: str
    #: memories written after the reply (its L1 segment and any window the exchange closed)
    written: list[MemoryNode]
    #: set when the exchange is stored but some closed window could not be consolidated
    warning: str | None = None
    #: a "forget that …" message: what was forgotten (:mod:`timem.memory.forget`); such a message and its
    #: reply are not stored as turns (the message would state the forgotten fact again)
    forgotten: Any = None


def reply_without_llm(n_memories: int, tokens: int) -> str:
    """The assistant's text when no LLM is configured: a short note, never the recalled text itself. It is shown,
    not stored as a turn (:meth:`timem.engine.MemoryEngine.chat_turn`): stored, it was recalled as a memory."""
    if n_memories == 0:
        return "(No LLM is configured, and no memory matches yet.)"
    found = f"{n_memories} memory" if n_memories == 1 else f"{n_memories} memories"
    return (f"(No LLM is configured, so I cannot answer. Recall found {found}, "
            f"{tokens} tokens: open the recall trace below.)")


def check_user_id(user_id: str) -> str:
    """``user_id`` if a user of a local file may have it (ingest, the studio, ``timem mcp``): not blank, no
    ``/``, which the memory service reserves for its tenants (``tenant/user``), and no ``:``, which separates the
    parts of a turn id (:func:`timem.datasets.base.check_id`).

    Raises:
        InputError: blank, or holds ``/`` or ``:``.
    """
    if is_blank(user_id):
        raise InputError("the user id is empty; give one, e.g. alice", field="user_id")
    return check_local_user_id(user_id)


def check_turn(turn: Turn, max_chars: int | None = None) -> None:
    """Refuse a turn that cannot be stored or would be an invisible memory (:class:`InputError` naming
    the turn id and the field): see :func:`timem.datasets.base.check_text`; text may be empty only
    when the turn carries an image caption; text and caption are at most ``max_chars`` characters
    (``Config.store.max_turn_chars``; a :class:`~timem.errors.TextTooLongError`)."""
    record = "turn " + turn.id.encode("utf-8", "backslashreplace").decode("utf-8")  # printable even if the id is bad
    check_length(turn.text, max_chars, record=record, field="text")  # first: the character checks take seconds on MB
    check_length(turn.image_caption, max_chars, record=record, field="image_caption")
    for name in ("user_id", "session_id", "speaker", "text", "image_caption", "source_ref"):
        value = getattr(turn, name)
        if value is not None:
            check_text(value, file=None, record=record, field=name)
    check_id(turn.user_id, record=record, field="user_id")
    check_id(turn.session_id, record=record, field="session_id")
    check_name(turn.speaker, record=record, field="speaker")
    if turn.id != ID_SEPARATOR.join((turn.user_id, turn.session_id, str(turn.seq))):  # API-built turns too
        raise InputError(f"the turn id is not user:session:seq ({turn.user_id}:{turn.session_id}:{turn.seq}); build "
                         "it with timem.datasets.base.turn_id", record=record, field="id")
    if is_blank(turn.text) and (turn.image_caption is None or is_blank(turn.image_caption)):
        raise InputError("empty text (only whitespace or invisible characters); drop the turn or give it text",
                         record=record, field="text")
    check_time(turn.event_time, "timestamp", record=record)  # its day, week and month windows must exist


def check_names(**names: str) -> None:
    """Refuse a chat name (``user_name=...``, ``assistant_name=...``) that is empty or not one line of text
    (:func:`timem.datasets.base.check_name`); the error names the keyword as the field."""
    for field, name in names.items():
        if is_blank(name):
            raise InputError(f"the {field.replace('_', ' ')} is empty; give a name, e.g. Mia", field=field)
        check_name(name, field=field)


def check_time(at: datetime, field: str, *, record: str | None = None, tz: tzinfo | None = None) -> datetime:
    """``at`` converted to UTC, if that instant lies within the years :data:`~timem.models.MIN_YEAR` -
    :data:`~timem.models.MAX_YEAR` (its day, week and month windows must exist); a naive ``at`` is wall-clock time
    in ``tz`` (refused without ``tz``).

    Raises:
        InputError: naive without ``tz``, or outside those years in UTC (``9999-12-31T23:00-05:00`` runs past
            9999; the conversion would overflow); names ``field``.
    """
    if at.tzinfo is None or at.utcoffset() is None:
        if tz is None:
            raise InputError(f"{field} must be timezone-aware: give it its zone, e.g. datetime(2024, 5, 2, 9, 0, "
                             "tzinfo=ZoneInfo('Europe/Berlin')) or tzinfo=timezone.utc", record=record, field=field)
        at = at.replace(tzinfo=tz)
    try:
        utc: datetime | None = at.astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is None or not MIN_YEAR <= utc.year <= MAX_YEAR:
        raise InputError(f"{field} {at.isoformat()} lies outside the years {MIN_YEAR}-{MAX_YEAR} (in UTC) that "
                         "calendar windows can hold; fix the time", record=record, field=field)
    return utc


def check_question(query: str, question_time: datetime | None, tz: tzinfo, max_chars: int | None = None) -> None:
    """Refuse a recall question that shows nothing (only whitespace or invisible characters such as zero-width
    spaces), is longer than ``max_chars`` characters (``max_turn_chars``, the limit of any text; ``None``: no
    limit), holds a lone surrogate or a control character (:func:`timem.datasets.base.check_text`), or a
    ``question_time`` outside the calendar's years (:func:`check_time`; naive = wall-clock time in ``tz``).

    Raises:
        TextTooLongError: the question is too long; nothing is recalled or stored.
        InputError: naming the field (``query`` or ``question_time``); nothing is recalled or stored.
    """
    if is_blank(query):
        what = "" if not query.strip() else " (only invisible characters such as zero-width spaces)"
        raise InputError(f"the question is empty{what}; ask something", field="query")
    if max_chars is not None and len(query) > max_chars:
        raise TextTooLongError(f"the question has {len(query):,} characters, more than max_turn_chars = "
                               f"{max_chars:,}; ask a shorter question (recall embeds only its first ~256 word "
                               "pieces anyway) or raise the limit", field="query")
    check_text(query, file=None, record=None, field="query")
    if question_time is not None:
        check_time(question_time, "question_time", tz=tz)


def check_chat(text: str, event_time: datetime, what: str = "message") -> None:
    """Refuse an empty ``what`` (``message`` or ``reply``; the error names that field), a naive ``event_time`` or
    one outside the calendar's years (:func:`check_time`)."""
    if is_blank(text):
        raise InputError(f"the {what} is empty; type something to say", field=what)
    check_time(event_time, "event_time")


def speaker_offset(at: datetime, zone: ZoneInfo) -> int:
    """The speaker's UTC offset for a chat turn (:func:`timem.tree.windows.offset_minutes`, the rule of every
    path): ``at``'s own offset when it carries one other than UTC (an explicit local time), else the user's
    zone's offset at that instant."""
    return offset_minutes(at, zone)


def next_seq(turns: Sequence[Turn]) -> int:
    """The ``seq`` of a session's next turn: one past the highest stored (not the count: after a hard erase took a
    turn, the count named a stored turn and the new message was dropped, a service test found)."""
    return max((t.seq for t in turns), default=-1) + 1


def make_turn(user_id: str, session_id: str, seq: int, speaker: str, role: Role, text: str, at: datetime,
          offset: int | None = None) -> Turn:
    return Turn(id=turn_id(user_id, session_id, seq), user_id=user_id, session_id=session_id, seq=seq, speaker=speaker,
                role=role, text=text, event_time=at.astimezone(UTC), utc_offset_minutes=offset)
