"""Equal timestamps keep conversation order (turn sequence) in the tree text, the timeline and the store's
listing (case c11_same_ts in tests/data/cases: every turn at one time, as LoCoMo sessions are)."""

from __future__ import annotations

import re

import pytest
from conftest import CASES
from helpers import EXCHANGE

from timem.config import load_config
from timem.datasets import load_jsonl
from timem.engine import MemoryEngine
from timem.store import Store
from timem.viz.timeline import timeline_frame
from timem.viz.tree_text import render_tree


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    """Logic tests: the deterministic hashing embedder instead of MiniLM (tests/conftest.py)."""
    return fake_embedder

CASE = CASES / "c11_same_ts.jsonl"
LOCKERS = ["12", "7", "47", "Tuesdays", "83"]  # what each exchange says, in spoken order


def _first_marker(text: str) -> str:
    return next(m for m in LOCKERS if re.search(rf"\b{m}\b", text))


@pytest.fixture()
def pia(tmp_path, embedder):
    cfg = load_config(env={}, db_path=tmp_path / "t.duckdb", llm_backend="none", **EXCHANGE)  # a segment per exchange
    eng = MemoryEngine(cfg, Store(cfg.store.db_path, embedder.model_id, embedder.dim), embedder, None)
    eng.ingest(load_jsonl(CASE, cfg.time.tz), upper_levels=False)
    yield eng
    eng.close()


def test_store_lists_equal_time_segments_in_turn_order(pia):
    nodes = pia.store.nodes("pia", 1)
    assert len({n.span_start for n in nodes}) == 1 and len(nodes) == 5
    assert [_first_marker(n.content) for n in nodes] == LOCKERS
    assert [n.id for n in nodes] != sorted(n.id for n in nodes)  # the ids alone would shuffle them


def test_tree_text_keeps_turn_order(pia):
    tz = pia.config.time.tz
    for text in (render_tree(pia.store, "pia", tz), render_tree(pia.store, "pia", tz, level=1)):
        lines = [ln for ln in text.splitlines() if ln.lstrip().startswith("L1 ")]
        assert [_first_marker(ln) for ln in lines] == LOCKERS, text


def test_timeline_frame_keeps_turn_order(pia):
    df = timeline_frame(list(reversed(pia.store.nodes("pia"))), pia.config.time.tz)
    assert [_first_marker(c) for c in df.sort_values(["level", "start", "order"], kind="stable")["content"]] == LOCKERS
    assert list(df["order"]) == list(range(len(df)))
