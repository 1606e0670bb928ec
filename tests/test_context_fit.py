"""fit_context (no re-render per trial) makes exactly fit_budget's choices over render_context."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from timem.models import Level, MemoryNode
from timem.recall.context import fit_budget, min_line_cost, render_context
from timem.recall.context_fit import fit_context

WORDS = ("Caroline went to the support group yesterday and it was great , really ! 2023 12 pottery "
         "camping Melanie's kids 我们 去 了 ... ?").split()


def _node(rng: random.Random, i: int, base: datetime) -> MemoryNode:
    level = rng.choice([1, 1, 1, 1, 2, 3, 4, 5])
    session = f"S{rng.randint(0, 3)}"
    when = base + timedelta(hours=rng.choice([0, 0, 1, 5, 30, 200]))  # equal times are common
    seq = rng.randint(0, 40)
    lines = [f"{rng.choice(['Caro', 'Mel'])}: " + " ".join(rng.choices(WORDS, k=rng.randint(1, 30)))
             for _ in range(rng.randint(1, 3))]
    if level == 1:
        head = "On 8 May 2023 (Monday) 13:56:\n" if rng.random() < 0.7 else ""
        return MemoryNode(id=f"n{i:03d}", user_id="u", level=Level(1), window_key=f"segment:u:{session}:{seq}",
                          session_id=session if rng.random() < 0.9 else None, span_start=when,
                          span_end=when + timedelta(minutes=rng.choice([0, 5])),
                          source_turn_ids=[f"u:{session}:{seq}"] if rng.random() < 0.9 else [],
                          content=head + "\n".join(lines), model_id="verbatim", prompt_version="v")
    key = {2: f"session:{session}", 3: f"day:{when:%Y-%m-%d}", 4: "week:2023-05-08..2023-05-14",
           5: f"month:{when:%Y-%m}"}[level]
    return MemoryNode(id=f"n{i:03d}", user_id="u", level=Level(level), window_key=key, session_id=None,
                      span_start=when, span_end=when + timedelta(hours=2), content=" ".join(lines),
                      model_id="extractive", prompt_version="v")


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("layout", ["grouped", "grouped-day", "grouped-date", "lines"])
def test_fit_context_makes_fit_budgets_choices(seed: int, layout: str) -> None:
    rng = random.Random(seed)
    tz = ZoneInfo(rng.choice(["UTC", "America/New_York"]))
    base = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    nodes = [_node(rng, i, base) for i in range(rng.randint(1, 45))]
    if rng.random() < 0.2:
        nodes.append(nodes[0])  # the same memory twice
    rng.shuffle(nodes)
    for budget in (0, 10, 60, 150, 400, 2000):
        want = fit_budget(nodes, lambda ns: render_context(ns, tz, layout), budget,  # type: ignore[arg-type]
                          lambda n: min_line_cost(n, tz, layout))  # type: ignore[arg-type]
        got = fit_context(nodes, tz, layout, budget)  # type: ignore[arg-type]
        assert [n.id for n in got[0]] == [n.id for n in want[0]]
        assert got[1:] == want[1:]


def test_fit_context_falls_back_on_a_memory_without_lines() -> None:
    tz = ZoneInfo("UTC")
    t = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    empty = MemoryNode(id="e", user_id="u", level=Level(1), window_key="segment:u:S:1", session_id="S",
                       span_start=t, span_end=t, source_turn_ids=["u:S:1"], content="On 8 May 2023 (Monday) 13:56:\n",
                       model_id="verbatim", prompt_version="v")
    full = empty.model_copy(update={"id": "f", "content": "Mel: hello there"})
    want = fit_budget([full, empty], lambda ns: render_context(ns, tz), 50, lambda n: min_line_cost(n, tz))
    assert fit_context([full, empty], tz, "grouped", 50) == want
    assert [n.id for n in want[0]] == ["f", "e"]


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("layout", ["grouped", "grouped-day", "grouped-date", "lines"])
def test_the_running_count_is_the_rendered_count(seed: int, layout: str) -> None:
    from timem.recall.context import count_context_tokens
    from timem.recall.context_fit import _Context, _piece

    rng = random.Random(1000 + seed)
    tz = ZoneInfo("Europe/Berlin")
    nodes = [_node(rng, i, datetime(2023, 5, 8, 13, 56, tzinfo=UTC)) for i in range(30)]
    ctx, chosen = _Context(layout), []  # type: ignore[arg-type]
    for node in nodes:
        p = _piece(node, tz, layout)  # type: ignore[arg-type]
        assert p is not None
        assert ctx.tokens_with(p) == count_context_tokens(render_context([*chosen, node], tz, layout))  # type: ignore[arg-type]
        if rng.random() < 0.6:
            ctx.add(p)
            chosen.append(node)
            assert ctx.tokens() == count_context_tokens(render_context(chosen, tz, layout))  # type: ignore[arg-type]
