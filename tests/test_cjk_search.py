"""Keyword (BM25) search over Chinese, Japanese and Korean memories, English scores unchanged."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from timem.config import load_config
from timem.datasets import load_jsonl
from timem.datasets.locomo import load_locomo
from timem.engine import MemoryEngine
from timem.models import Level, MemoryNode
from timem.recall.options import RecallOptions
from timem.recall.pipeline import recall
from timem.store import Store
from timem.store.bm25 import FILE_FTS_OPTIONS
from timem.store.search import BM25_B, BM25_K1
from timem.store.segmenter import search_text

ZH = [  # (session, speaker, text)
    ("s1", "小李", "我的狗叫小白，它最喜欢吃牛肉干。"),
    ("s1", "助手", "小白听起来很可爱！"),
    ("s2", "小李", "下个月我要去成都出差，顺便吃火锅。"),
    ("s2", "助手", "成都的火锅很有名，祝你出差顺利。"),
    ("s3", "小李", "我最近开始学习弹钢琴，每周二上课。"),
    ("s3", "助手", "学钢琴需要耐心，加油！"),
]
JA = [
    ("s1", "ハナ", "私の犬の名前はポチです。毎朝、公園を散歩します。"),
    ("s1", "アシスタント", "ポチは元気そうですね。"),
    ("s2", "ハナ", "来週、京都の美術館に行く予定です。"),
    ("s2", "アシスタント", "京都の美術館は素敵ですよ。"),
    ("s3", "ハナ", "最近、ギターの練習を始めました。"),
    ("s3", "アシスタント", "ギターは楽しいですね。"),
]
KO = [
    ("s1", "민지", "우리 강아지 이름은 바둑이야. 매일 아침 산책해."),
    ("s1", "도우미", "바둑이 정말 귀엽겠다!"),
    ("s2", "민지", "다음 주에 부산으로 여행을 가요."),
    ("s2", "도우미", "부산 여행 즐겁게 다녀오세요."),
]


def _ingest(tmp_path, embedder, user: str, rows) -> MemoryEngine:
    path = tmp_path / f"{user}.jsonl"
    path.write_text("".join(json.dumps({"user_id": user, "session_id": s, "speaker": sp, "text": t,
                                        "timestamp": f"2024-05-0{int(s[1:])}T10:00:0{i % 2}"}, ensure_ascii=False)
                            + "\n" for i, (s, sp, t) in enumerate(rows)), encoding="utf-8")
    cfg = load_config(env={}, db_path=tmp_path / f"{user}.duckdb", llm_backend="none", gate="score")
    eng = MemoryEngine(cfg, Store(cfg.store.db_path, embedder.model_id, embedder.dim), embedder, None)
    eng.ingest(load_jsonl(path, cfg.time.tz), upper_levels=False)
    return eng


def _top(eng: MemoryEngine, user: str, query: str) -> str:
    hits = eng.store.search_bm25(user, query, int(Level.SEGMENT), 5)
    assert hits, f"BM25 found nothing for {query!r}"
    return eng.store.node(hits[0][0]).content


@pytest.mark.parametrize("user, rows, question, expect", [
    ("li", ZH, "我的狗叫什么名字？", "小白"),
    ("li", ZH, "我什么时候去成都出差？", "火锅"),
    ("li", ZH, "我在学什么乐器？钢琴课是哪天？", "钢琴"),
    ("hana", JA, "私の犬の名前は何ですか？", "ポチ"),
    ("hana", JA, "京都で何をする予定ですか", "美術館"),
    ("hana", JA, "ギター", "ギター"),
    ("minji", KO, "강아지 이름이 뭐야?", "바둑이"),
    ("minji", KO, "부산에 언제 가?", "부산"),
])
def test_cjk_question_finds_the_memory_by_keyword(tmp_path, embedder, user, rows, question, expect):
    eng = _ingest(tmp_path, embedder, user, rows)
    try:
        assert expect in _top(eng, user, question)
        res = recall(eng.store, embedder, None, eng.config, user, question, datetime(2024, 5, 9, tzinfo=UTC),
                     options=RecallOptions(gate="score"))
        best = max(res.trace.candidates, key=lambda c: c.bm25)
        assert best.bm25 > 0 and expect in eng.store.node(best.node_id).content
    finally:
        eng.close()


def test_segmenter_rules():
    assert search_text("Caroline: I went to a LGBTQ support group yesterday.") == \
        "Caroline: I went to a LGBTQ support group yesterday."
    zh = search_text("我的狗叫小白，它最喜欢吃牛肉干。").split()
    assert "小白" in zh and "牛肉" in zh and "，" not in zh and "。" not in zh
    ja = search_text("私の犬の名前はポチです").split()
    assert {"名前", "ポチ", "犬"} <= set(ja)  # bigrams plus one-kanji words
    assert {"바둑", "둑이"} <= set(search_text("바둑이야").split())
    assert search_text("Ａｌｉｃｅは１２歳").startswith("Alice")


def test_english_bm25_scores_are_identical_to_the_index_over_content(tmp_path, embedder, locomo_dev):
    """The fts index over ``search_text`` scores English exactly like the old one over ``content``."""
    users = load_locomo(locomo_dev, None, ZoneInfo("UTC"))[:2]
    store = Store(tmp_path / "en.duckdb", embedder.model_id, embedder.dim)
    questions: list[str] = []
    for u in users:
        turns = u.turns[:150]
        nodes = [MemoryNode(id=f"{u.user_id}:L1:{i}", user_id=u.user_id, level=Level.SEGMENT, window_key=t.id,
                            session_id=t.session_id, span_start=t.event_time, span_end=t.event_time,
                            content=f"{t.speaker}: {t.text}", source_turn_ids=[t.id], model_id="verbatim",
                            prompt_version="test") for i, t in enumerate(turns)]
        store.add_nodes(nodes, embedder.embed([n.content for n in nodes]))
        questions += [q.question for q in u.questions[:25]]
    store.refresh_fts()
    # the index as it was before search_text: over content, same options (over each user's rows alone:
    # BM25 statistics are per user)
    compared = 0
    for u in users:
        store.con.execute("CREATE OR REPLACE TABLE old_nodes AS SELECT id, user_id, level, status, content FROM nodes "
                          "WHERE user_id = ?", [u.user_id])
        store.con.execute(f"PRAGMA create_fts_index('old_nodes', 'id', 'content', {FILE_FTS_OPTIONS}, "
                          "overwrite = 1)")
        for q in questions:
            got = store.search_bm25(u.user_id, q, 1, 40)
            old = store.con.execute(
                "SELECT * FROM (SELECT id, fts_main_old_nodes.match_bm25(id, ?) AS s FROM old_nodes "
                "WHERE user_id = ? AND level = 1) WHERE s IS NOT NULL ORDER BY round(s, 9) DESC, id LIMIT 40",
                [q, u.user_id]).fetchall()
            assert [i for i, _ in got] == [i for i, _ in old], q
            assert np.allclose([s for _, s in got], [s for _, s in old], rtol=0, atol=1e-9), q
            compared += len(got)
    assert compared > 500 and (BM25_K1, BM25_B) == (1.2, 0.75)
    store.close()


def test_migration_fills_search_text_of_existing_rows(tmp_path, embedder):
    path = tmp_path / "old.duckdb"
    store = Store(path, embedder.model_id, embedder.dim)
    node = MemoryNode(id="n1", user_id="li", level=Level.SEGMENT, window_key="k",
                      span_start=datetime(2024, 1, 1, tzinfo=UTC), span_end=datetime(2024, 1, 1, tzinfo=UTC),
                      content="我的狗叫小白", model_id="verbatim",
                      prompt_version="t")
    store.add_node(node, embedder.embed([node.content])[0])
    version = store.schema_version
    # as a file written before the column existed: no search_text, schema one step back
    store.con.execute("UPDATE nodes SET search_text = NULL")
    store.con.execute("DELETE FROM schema_version WHERE version >= 4")  # v4 added the column; later ones rerun too
    store.close()
    store = Store(path, embedder.model_id, embedder.dim)
    assert store.schema_version == version
    assert store.con.execute("SELECT search_text FROM nodes").fetchone()[0] == search_text("我的狗叫小白")
    assert store.search_bm25("li", "狗叫什么", 1, 3)[0][0] == "n1"
    store.close()
