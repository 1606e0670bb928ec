"""End to end with the real embedded model: the first session of a real LoCoMo conversation -> L1..L5 (one session:
four model calls, L2 to L5, about 2 minutes on the AVX2 build; the whole conversation is in bench/results)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from timem.config import load_config
from timem.datasets.locomo import load_locomo
from timem.engine import MemoryEngine
from timem.models import Level
from timem.tree.check import check_store

pytestmark = pytest.mark.slow


def test_local_model_builds_a_checked_tree_from_real_sessions(tmp_path, locomo_dev):
    cache = Path(os.environ.get("TIMEM_CACHE_DIR", Path.home() / ".cache" / "timem"))
    cfg = load_config(env={}, db_path=str(tmp_path / "e2e.duckdb"), llm_backend="local", cache_dir=str(cache),
                      consolidation_mode="abstractive",  # the model writes L2-L5 (the local default is extractive)
                      memory_extractor="rules")  # LLM item extraction has its own real-model test (CI time)
    user = load_locomo(locomo_dev, ["conv-30"], cfg.tz)[0]
    user = user.model_copy(update={"sessions": user.sessions[:1]})
    engine = MemoryEngine.open(cfg)
    try:
        report = engine.ingest([user])
        nodes = engine.store.nodes(user.user_id)
        by_level = {lv: [n for n in nodes if n.level == lv] for lv in Level}
        assert all(by_level[lv] for lv in Level), {lv: len(v) for lv, v in by_level.items()}
        assert len(by_level[Level.SESSION]) == 1
        n_turns = sum(len(s.turns) for s in user.sessions)
        assert report.turns_added == n_turns
        for n in nodes:
            assert n.content.strip()
            if n.level > Level.SEGMENT:
                assert "qwen2.5-coder-1.5b" in n.model_id
        # the profile names the people who spoke
        speakers = {t.speaker for s in user.sessions for t in s.turns}
        profile_text = " ".join(n.content for n in by_level[Level.PROFILE])
        assert any(name in profile_text for name in speakers), profile_text
        assert check_store(engine.store, cfg, user.user_id) == []
        again = engine.ingest([user])
        assert again.turns_added == 0 and again.nodes_added == {}
    finally:
        engine.close()
