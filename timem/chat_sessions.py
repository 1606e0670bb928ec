"""Which session a chat message goes to: the rule the studio's chat and the OpenAI-compatible endpoint share.

A chat keeps writing to the user's open chat session (``chat-…``, not ended) while it is live at the message's
time; after ``session_idle_timeout_minutes`` without a turn, or a day after the session's first turn
(:data:`timem.models.MAX_SESSION`), a new session starts. Times are UTC-aware.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta

from timem.models import MAX_SESSION, SessionInfo, Turn

#: prefix of the sessions a chat opens (the studio's Chat page, ``POST /v1/chat/completions``)
CHAT_PREFIX = "chat-"


def new_session_id(at: datetime) -> str:
    """A fresh session id like ``chat-20240502-1315-a3f9`` (``at`` in the user's zone)."""
    return f"{CHAT_PREFIX}{at:%Y%m%d-%H%M}-{secrets.token_hex(2)}"


def open_chat_session(sessions: Sequence[SessionInfo]) -> str | None:
    """The user's latest session (by last event) if it is a chat session (``chat-…``) that was not ended,
    else ``None``."""
    ordered = sorted(sessions, key=lambda s: (s.last_event_at, s.started_at))
    last = ordered[-1] if ordered else None
    if last and last.session_id.startswith(CHAT_PREFIX) and not last.ended:
        return last.session_id
    return None


def session_is_live(turns: Sequence[Turn], at: datetime, idle: timedelta) -> bool:
    """Whether a message at ``at`` continues the session whose ``turns`` (in order) are given: its last turn is at
    most ``idle`` before ``at`` and its first at most a day before (no turns: live)."""
    return not turns or (at - turns[-1].event_time <= idle and at - turns[0].event_time <= MAX_SESSION)
