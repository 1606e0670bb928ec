"""Text rendering of a user's Temporal Memory Tree (``timem tree``)."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from timem.models import Level, MemoryNode
from timem.store.ports import MemoryStore
from timem.tree.order import conversation_key


def _span(n: MemoryNode, tz: ZoneInfo) -> str:
    a, b = n.span_start.astimezone(tz), n.span_end.astimezone(tz)
    return f"{a:%Y-%m-%d %H:%M} .. {b:%Y-%m-%d %H:%M}"


def render_tree(store: MemoryStore, user_id: str, tz: ZoneInfo, *, level: int | None = None, width: int = 100) -> str:
    """Indented tree, L5 roots first, children in conversation order (time, then turn sequence at equal
    times: :func:`timem.tree.order.conversation_key`); each line: level, span, model (and mode unless it is
    the model id, e.g. ``extractive``), content.

    With ``level`` set, a flat list of that level's nodes. Orphans (open windows) are listed last.
    """
    nodes = {n.id: n for n in store.nodes(user_id)}
    if not nodes:
        return f"no memories for user {user_id!r} (users here: {', '.join(store.users()) or 'none'})"

    def line(n: MemoryNode, depth: int) -> str:
        text = " ".join(n.content.split())
        text = text if len(text) <= width else text[: width - 1] + "…"
        mode = "" if n.mode == n.model_id else f", {n.mode}"
        return f"{'  ' * depth}L{int(n.level)} [{_span(n, tz)}] ({n.model_id}{mode}) {text}  [{n.id}]"

    if level is not None:
        return "\n".join(line(n, 0) for n in sorted(nodes.values(), key=conversation_key) if n.level == level)
    out: list[str] = []
    seen: set[str] = set()

    def walk(n: MemoryNode, depth: int) -> None:
        seen.add(n.id)
        out.append(line(n, depth))
        kids = sorted((nodes[c] for c in n.child_ids if c in nodes), key=conversation_key)
        for k in kids:
            walk(k, depth + 1)

    for top in sorted((n for n in nodes.values() if n.level == Level.PROFILE), key=conversation_key):
        walk(top, 0)
    rest = sorted((n for n in nodes.values() if n.id not in seen), key=lambda k: (-int(k.level), conversation_key(k)))
    if rest:
        out.append("-- not yet under a profile (open windows) --")
    for n in rest:
        if n.id not in seen:
            walk(n, 0)
    counts = {f"L{lv}": sum(1 for n in nodes.values() if n.level == lv) for lv in range(1, 6)}
    return f"user {user_id}: {counts}\n" + "\n".join(out)
