"""Conversation order of memories: by event time, and at equal times by position in the conversation.

LoCoMo gives one time per session, so every turn of a session, and every L1 segment made of them,
shares one timestamp; ordering those by node id (a hash) shuffled the conversation. Everything that
lists memories in time order (``timem tree``, the timeline, the store's default order) uses
:func:`conversation_key`: span start, then the session and the turn ``seq`` of the node's first
source turn (turn ids end in ``:<seq>``, :func:`timem.datasets.base.turn_id`), then the id.
Callers that group by level sort by level first themselves. The store lists nodes in the same order in SQL
(:data:`timem.store.rows.SQL_ORDER`).
"""

from __future__ import annotations

from datetime import datetime

from timem.models import MemoryNode


def first_seq(node: MemoryNode) -> int:
    """The ``seq`` of the node's first source turn (L1), or -1 (L2-L5, or an id without a seq)."""
    if not node.source_turn_ids:
        return -1
    tail = node.source_turn_ids[0].rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def conversation_key(node: MemoryNode) -> tuple[datetime, str, int, str]:
    """Sort key: span start, session, first turn's seq, id."""
    return (node.span_start, node.session_id or "", first_seq(node), node.id)
