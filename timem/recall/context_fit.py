"""The token-budget fill of recall's context without re-rendering it for each trial.

:func:`timem.recall.context.fit_budget` renders and counts the whole growing context for every memory it tries
(over a thousand renders per recall at 100k nodes). :func:`fit_context` makes the same decisions from each
memory's lines, rendered once: :func:`timem.recall.context.count_context_tokens` of a rendered context is a sum
over its lines (``tokens(line + "\\n")`` for every line but the last, ``tokens(line)`` for the last), so the count
of the context with one memory added is the count without it plus that memory's lines, plus or minus the session
headers its place in the conversation order adds or splits, and a different last line. Only the final context is
rendered, and it is counted with :func:`timem.tokens.count_tokens` as before.

A memory none of whose lines fits that rule (no line, or a line that is empty or starts with whitespace; never
true of what :func:`timem.recall.context.render_context` renders today) sends the whole fill back to
:func:`~timem.recall.context.fit_budget`. ``tests/test_context_fit.py`` checks the two agree.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from functools import lru_cache

from timem.models import MemoryNode
from timem.recall.context import (
    GROUPED,
    HEADERS,
    L1_GROUPED_HEADER,
    Layout,
    _fit_exact,
    count_context_tokens,
    fit_budget,
    group_header,
    l1_lines,
    memory_line,
    min_line_cost,
    render_context,
    turn_order,
)
from timem.tokens import count_tokens


@dataclass(frozen=True)
class _Piece:
    """One memory as the context renders it: its level, place in the order, session group and token counts."""

    level: int
    order: tuple[datetime, str, int, str]
    group: tuple[str, str] | None  #: the session group of a grouped L1 line (``None``: no group headers)
    group_tokens: int  #: ``tokens(header + "\\n")`` of that group's header line
    body: int  #: ``Σ tokens(line + "\\n")`` over its own lines
    last_nl: int  #: ``tokens(last line + "\\n")``
    last: int  #: ``tokens(last line)``
    min_cost: int  #: :func:`timem.recall.context.min_line_cost`


#: how many pieces :func:`_cached_piece` keeps (a recall measures ~60 memories, most of them again in later recalls)
_PIECES_MAX = 16384


def _piece_key(node: MemoryNode, tz: tzinfo, layout: Layout) -> tuple[object, ...]:
    """Everything :func:`_make_piece` reads of ``node`` (its lines, date label, session group and turn order)."""
    return (node.id, node.content, int(node.level), node.span_start, node.span_end, node.window_key, node.session_id,
            node.source_turn_ids[0] if node.source_turn_ids else "", str(tz), layout)


class _Keyed:
    """A node with its :func:`_piece_key`, equal and hashed by that key alone: the argument :func:`_cached_piece` is
    cached by. ``node`` is dropped once its piece is made (:func:`_piece`), so that the cache keeps keys, not nodes."""

    __slots__ = ("key", "node", "tz", "layout")

    def __init__(self, node: MemoryNode, tz: tzinfo, layout: Layout) -> None:
        self.key = _piece_key(node, tz, layout)
        self.node: MemoryNode | None = node
        self.tz, self.layout = tz, layout

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Keyed) and self.key == other.key


@lru_cache(maxsize=_PIECES_MAX)
def _cached_piece(keyed: _Keyed) -> _Piece | None:
    """:func:`_make_piece` of ``keyed``'s node, by its key (least recently used dropped past :data:`_PIECES_MAX`)."""
    assert keyed.node is not None  # only a key already stored has lost its node, and a stored key is a hit
    return _make_piece(keyed.node, keyed.tz, keyed.layout)


def _piece(node: MemoryNode, tz: tzinfo, layout: Layout) -> _Piece | None:
    """The piece of ``node``, or ``None`` when its lines break the line-sum rule (see the module docstring);
    cached by :func:`_piece_key` (:func:`_cached_piece`)."""
    keyed = _Keyed(node, tz, layout)
    try:
        return _cached_piece(keyed)
    finally:
        keyed.node = None  # on a miss the cache keeps ``keyed`` as its key: the key, not the node


def _make_piece(node: MemoryNode, tz: tzinfo, layout: Layout) -> _Piece | None:
    level = int(node.level)
    group, group_tokens = None, 0
    if level == 1 and layout in GROUPED:
        lines = l1_lines(node)
        header = group_header(node, tz, layout)
        group, group_tokens = (node.session_id or node.id, header), count_tokens(header + "\n")
    else:
        lines = [memory_line(node, tz)]
    if not lines or any(not ln or ln[0].isspace() or "\n" in ln for ln in lines):
        return None
    return _Piece(level, turn_order(node), group, group_tokens, sum(count_tokens(ln + "\n") for ln in lines),
                  count_tokens(lines[-1] + "\n"), count_tokens(lines[-1]), min_line_cost(node, tz, layout))


class _Context:
    """The chosen memories' token count, kept up to date as memories are added (the line-sum rule)."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.levels: dict[int, list[tuple[tuple[datetime, str, int, str], int, _Piece]]] = {}
        self.lines = 0  #: Σ tokens(line + "\n") over every line
        self.tail: _Piece | None = None  #: the memory whose last line ends the context
        self.seq = 0

    def _header(self, level: int) -> str:
        return L1_GROUPED_HEADER if level == 1 and self.layout in GROUPED else HEADERS.get(level, f"L{level}:")

    def _place(self, p: _Piece) -> tuple[int, int, bool]:
        """``(position in its level, Σ tokens(line + "\\n") it adds, whether its last line ends the context)``."""
        group = self.levels.get(p.level)
        top = max(self.levels, default=0)
        if group is None:
            added = count_tokens(self._header(p.level) + "\n") + p.body + (p.group_tokens if p.group else 0)
            return 0, added, p.level > top
        pos = bisect_right(group, (p.order, self.seq))  # after equal orders: the order a stable sort gives
        added = p.body
        if p.group is not None:
            prev = group[pos - 1][2].group if pos > 0 else None
            nxt = group[pos][2] if pos < len(group) else None
            if pos == 0 or prev != p.group:
                added += p.group_tokens
            if nxt is not None:
                had = pos == 0 or nxt.group != prev
                added += (nxt.group != p.group) * nxt.group_tokens - had * nxt.group_tokens
        return pos, added, p.level == top and pos == len(group)

    def tokens_with(self, p: _Piece) -> int:
        """The count of the context with ``p`` added (nothing is added)."""
        _, added, ends = self._place(p)
        tail = p if ends else self.tail
        assert tail is not None
        return self.lines + added - tail.last_nl + tail.last

    def tokens(self) -> int:
        """The count of the context as it stands (0 when empty)."""
        return 0 if self.tail is None else self.lines - self.tail.last_nl + self.tail.last

    def add(self, p: _Piece) -> None:
        """Add ``p``."""
        pos, added, ends = self._place(p)
        self.levels.setdefault(p.level, []).insert(pos, (p.order, self.seq, p))
        self.seq += 1
        self.lines += added
        if ends:
            self.tail = p


def fit_context(nodes: Sequence[MemoryNode], tz: tzinfo, layout: Layout, budget: int
                ) -> tuple[list[MemoryNode], str, int]:
    """``fit_budget(nodes, lambda ns: render_context(ns, tz, layout), budget, lambda n: min_line_cost(n, tz,
    layout))`` with the same result (see the module docstring): ``(kept nodes, rendered context, its tokens)``."""
    pieces = [_piece(n, tz, layout) for n in nodes]

    def render(ns: list[MemoryNode]) -> str:
        return render_context(ns, tz, layout)

    if any(p is None for p in pieces):
        return fit_budget(nodes, render, budget, lambda n: min_line_cost(n, tz, layout))
    chosen: list[MemoryNode] = []
    ctx = _Context(layout)
    estimate, exact = 0, None
    for node, p in zip(nodes, pieces, strict=True):
        assert p is not None
        if exact is None:
            alone = _Context(layout).tokens_with(p) + 2
            if estimate + alone <= budget:
                chosen.append(node)
                ctx.add(p)
                estimate += alone
                continue
            exact = ctx.tokens()
        if exact + p.min_cost > budget:
            continue
        n = ctx.tokens_with(p)
        if n > budget:
            continue
        chosen.append(node)
        ctx.add(p)
        exact = n
    text = render(chosen) if chosen else ""
    tokens = count_context_tokens(text)  # = count_tokens(text), line by line from the cache
    if tokens > budget:
        return _fit_exact(nodes, render, budget)
    return chosen, text, tokens
