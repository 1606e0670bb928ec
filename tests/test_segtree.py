"""SegTreeMem's segment tree (timem.tree.segtree): online insertion on the right frontier, by hand and by
hypothesis (contiguous ordered spans, bounded fan-out and depth, O(log n) nodes touched)."""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timem.errors import ConfigError, InputError
from timem.tree.segtree import SegTree, depth_bound

T0 = datetime(2024, 1, 1, tzinfo=UTC)
X, Y = np.array([1.0, 0.0], dtype=np.float32), np.array([0.0, 1.0], dtype=np.float32)


def test_insertion_by_hand():
    tree = SegTree("u", threshold=0.5, max_children=3)
    steps = [tree.insert(f"l{i}", e, T0 + timedelta(minutes=i), T0 + timedelta(minutes=i))
             for i, e in enumerate([X, X, Y, Y, X, Y])]
    # l0 makes root A; l1 joins A; l2 (cos 0 with A) makes root R = [A, C]; l3 joins C (cos 1);
    # l4: cos(C) = 0, cos(R) = cos((1,0), (.5,.5)) = .707 -> fresh segment D under R (R now full);
    # l5: cos(D) = 0, R compatible (.555) but full -> new root S = [R, E -> F -> l5]
    assert [(s.attach, s.compatible, s.new_root) for s in steps] == [
        (1, True, True), (1, True, False), (2, False, True), (1, True, False), (2, True, False), (3, False, True)]
    a, r, c, d, s, e, f = (f"seg:u:{i}" for i in range(7))
    kids = tree.children()
    assert kids == {a: ["l0", "l1"], r: [a, c, d], c: ["l2", "l3"], d: ["l4"], s: [r, e], e: [f], f: ["l5"]}
    assert tree.root == s and tree.height == 3 and tree.frontier == [f, e, s]
    assert (tree.nodes[r].first_seq, tree.nodes[r].last_seq, tree.nodes[r].n_leaves) == (0, 4, 5)
    assert tree.nodes[r].centroid == pytest.approx([0.6, 0.4])
    assert tree.nodes[s].span_end == T0 + timedelta(minutes=5) and tree.nodes[e].span_start == T0 + timedelta(minutes=5)
    assert sorted(steps[-1].touched) == sorted(["l5", s, r, e, f])


def test_bad_settings_and_inputs():
    with pytest.raises(ConfigError, match="at least 3"):
        SegTree("u", 0.3, 2)
    with pytest.raises(ConfigError, match="cosine"):
        SegTree("u", 1.5, 4)
    tree = SegTree("u", 0.3, 4)
    tree.insert("a", X, T0, T0)
    with pytest.raises(InputError, match="already"):
        tree.insert("a", X, T0, T0)
    with pytest.raises(InputError, match="embedding"):
        tree.insert("b", np.array([np.nan, 1.0]), T0, T0)


def check_tree(tree: SegTree, vecs: list[np.ndarray], times: list[datetime]) -> None:
    """Every invariant the module docstring promises, over the whole in-memory tree."""
    n = len(vecs)
    kids = tree.children()
    root = tree.nodes[tree.root]
    assert root.parent_id is None and (root.first_seq, root.last_seq, root.n_leaves) == (0, n - 1, n)
    assert tree.height <= depth_bound(n)
    on_frontier = set(tree.frontier)
    for node in tree.nodes.values():
        if node.is_leaf:
            assert node.first_seq == node.last_seq and node.n_children == 0 and node.id not in kids
            assert node.span_start == times[node.first_seq]
            continue
        ch = [tree.nodes[c] for c in kids[node.id]]
        assert len(ch) == node.n_children <= tree.max_children
        assert all(c.height == node.height - 1 for c in ch)  # uniform leaf depth
        assert ch[0].first_seq == node.first_seq and ch[-1].last_seq == node.last_seq
        assert all(b.first_seq == a.last_seq + 1 for a, b in itertools.pairwise(ch))  # children partition, in order
        assert node.n_leaves == node.last_seq - node.first_seq + 1 == sum(c.n_leaves for c in ch)
        assert node.span_start == min(c.span_start for c in ch) and node.span_end == max(c.span_end for c in ch)
        assert node.centroid == pytest.approx(np.mean(vecs[node.first_seq:node.last_seq + 1], axis=0), abs=1e-4)
        if node.id not in on_frontier:  # the weight rule behind the depth bound
            assert node.n_leaves >= 2 ** (node.height - 1)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(1, 3), st.integers(0, 90)),
                min_size=1, max_size=70),
       st.sampled_from([-1.0, 0.0, 0.3, 0.6, 0.9, 1.0]), st.integers(3, 6))
def test_insertion_keeps_spans_contiguous_and_ordered(items, threshold, fanout):
    tree = SegTree("u", threshold, fanout)
    vecs, times, now = [], [], T0
    for i, (a, b, c, gap) in enumerate(items):
        v = np.array([a, b, c], dtype=np.float32)
        now += timedelta(minutes=gap)
        before = tree.height
        step = tree.insert(f"leaf{i}", v, now, now + timedelta(seconds=30))
        vecs.append(v)
        times.append(now)
        assert tree.height in (before, before + 1) and step.new_root == (tree.height == before + 1 or before == 0)
        assert len(step.touched) <= tree.height + 2  # the leaf, the frontier, an old root: O(log n)
        assert tree.height <= depth_bound(i + 1)
    check_tree(tree, vecs, times)


def test_depth_stays_logarithmic_when_nothing_is_compatible():
    tree = SegTree("u", threshold=1.0, max_children=3)  # orthogonal-ish random vectors: no cosine reaches 1
    rng = np.random.default_rng(0)
    for i in range(2000):
        tree.insert(f"l{i}", rng.normal(size=8).astype(np.float32), T0, T0)
    assert tree.height <= math.log2(2000) + 2
