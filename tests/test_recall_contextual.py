"""Contextual segment matching (:mod:`timem.recall.contextual`, issue 23): a leaf scored on its neighbouring turns.

Hand-built case ``tests/data/cases/channels/contextual.jsonl`` (real MiniLM, real DuckDB, no LLM): "What does Mia use
her new shoes for?" Leo says "Those new shoes look great on you, Mia." and Mia's reply, the evidence, is "Thanks!
Mostly for trail running every Saturday morning." (no word of the question). Three other sessions talk about shoes
(a wedding, a sale, old shoes), so with few candidates per search the reply is no candidate at all. With contextual
matching it joins as the neighbour of Leo's turn, ranks on the blended score and passes the score gate on its own
cosine (the gate never reads a neighbour's keyword match).
"""

from __future__ import annotations

import pytest
from channel_support import case_engine

from timem.recall.contextual import _best_hits, blend, neighbour_map
from timem.viz.trace_tables import candidate_table

Q = "What does Mia use her new shoes for?"
SETTINGS = {"second_hop": 0, "recall_candidates": 3, "propagation_route": 0, "token_budget": 150}


@pytest.fixture(scope="module")
def folder(tmp_path_factory, embedder):
    path = tmp_path_factory.mktemp("contextual")
    case_engine(path, embedder, "contextual").close()
    return path


def test_neighbour_map_and_blend():
    adj = {"b": ("a", "c")}
    assert neighbour_map(adj, "prev") == {"b": {"a"}, "c": {"b"}}
    assert neighbour_map(adj, "next") == {"b": {"c"}, "a": {"b"}}
    assert neighbour_map(adj, "both") == {"b": {"a", "c"}, "a": {"b"}, "c": {"b"}}
    takes = neighbour_map(adj, "both")
    # own + weight x the best neighbour; a node with nothing of its own or from a neighbour is left out
    assert blend({"b": 2.0, "a": 1.0}, takes, ["a", "b", "c", "d"], 0.5) == {"a": 2.0, "b": 2.5, "c": 1.0}
    assert blend({"b": -0.2}, takes, ["a", "b"], 0.5) == {"b": -0.2}  # a negative neighbour score adds nothing


def test_the_reply_is_found_through_the_turn_before_it(folder, embedder):
    with case_engine(folder, embedder, "contextual", context_weight=0.0, **SETTINGS) as eng:
        before = eng.recall("mia", Q, participants=("Mia", "Leo"), persist=False)
        reply = next(n.id for n in eng.store.nodes(level=1) if "trail running" in n.content)
    with case_engine(folder, embedder, "contextual", context_weight=0.3, context_side="both", **SETTINGS) as eng:
        after = eng.recall("mia", Q, participants=("Mia", "Leo"), persist=False)
    assert reply not in {c.node_id for c in before.trace.candidates}  # no search finds it
    assert "trail running" not in before.context, before.context
    assert "trail running" in after.context, after.context
    got = next(c for c in after.trace.candidates if c.node_id == reply)
    assert got.context_only and got.kept
    # the gate reads its own scores: no keyword match of its own (none lent by the neighbour), its own cosine
    assert got.bm25_raw is None and got.cosine is not None and got.cosine >= 0.25
    assert all(c.bm25_raw is None for c in after.trace.candidates if c.context_only)
    assert any(n.startswith("contextual matching (both, weight 0.3): ") for n in after.trace.notes), after.trace.notes
    assert not any(c.context_only for c in before.trace.candidates)
    assert after.mem_len <= 150
    table = candidate_table(after.trace, {})  # the inspector's candidates: the joined ones are marked
    assert set(table.loc[table["joined"], "node_id"]) == {c.node_id for c in after.trace.candidates if c.context_only}
    assert reply in set(table.loc[table["joined"], "node_id"]) and not table["joined"].all()


def test_best_hits_are_the_fused_order_of_own_scores():
    # λ = 0.5: a = (1 + 0)/2, b = (0.5 + 1)/2 = 0.75, c = (0 + 0.5)/2; ties by the semantic score, then the id
    assert _best_hits({"a": 0.8, "b": 0.4}, {"b": 2.0, "c": 1.0}, 0.5, 1) == {"b"}
    assert _best_hits({"a": 0.8, "b": 0.4}, {"b": 2.0, "c": 1.0}, 0.5, 2) == {"a", "b"}
    assert _best_hits({"x": 0.5, "y": 0.5}, {}, 0.5, 1) == {"x"}


def test_with_context_join_only_the_best_hits_neighbours_join(folder, embedder):
    """``context_join = k``: only the neighbours of the k best hits (fused own scores) join, at most two each with
    ``"both"``. Here the reply is the neighbour of the third best of four hits: ``context_join = 1`` leaves it out."""
    with case_engine(folder, embedder, "contextual", context_weight=0.3, context_side="both", context_join=0,
                     **SETTINGS) as eng:
        every = eng.recall("mia", Q, participants=("Mia", "Leo"), persist=False)
    with case_engine(folder, embedder, "contextual", context_weight=0.3, context_side="both", context_join=1,
                     **SETTINGS) as eng:
        one = eng.recall("mia", Q, participants=("Mia", "Leo"), persist=False)
    joined_all = {c.node_id for c in every.trace.candidates if c.context_only}
    joined_one = {c.node_id for c in one.trace.candidates if c.context_only}
    assert joined_one and len(joined_one) <= 2 and joined_one < joined_all, (joined_one, joined_all)
    assert "trail running" in every.context and "trail running" not in one.context, one.context
