"""The memory-layer test conversation (issue 14; written for it, not LoCoMo): a person changes home city,
job and a morning drink across three months (January to April), then corrects the city in June. English
(Mia) and Chinese (小美), as JSONL rows for ``timem ingest --format jsonl``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: (session, speaker, text, local time); each person turn gets an assistant reply one minute later
EN = [
    ("s01", "Mia", "I live in Lisbon now, in a small flat near the river.", "2024-01-10T09:00:00"),
    ("s01", "Mia", "I work at Acme Studio as a graphic designer.", "2024-01-10T09:05:00"),
    ("s02", "Mia", "I drink black coffee every morning before work.", "2024-01-12T08:00:00"),
    ("s03", "Mia", "The weather has been rainy all week, I stayed in and read a novel.", "2024-02-14T19:00:00"),
    ("s04", "Mia", "I started a new job at Blue Harbor as a data analyst.", "2024-03-05T18:00:00"),
    ("s05", "Mia", "I switched from coffee to green tea, my sleep is much better.", "2024-04-21T08:00:00"),
    ("s06", "Mia", "We moved to Porto last weekend, the boxes are everywhere!", "2024-04-28T20:00:00"),
    ("s07", "Mia", "I drink green tea every morning now, it is calmer than coffee.", "2024-05-15T08:00:00"),
    ("s08", "Mia", "Actually, I moved to Braga, not Porto. I mixed them up.", "2024-06-02T10:00:00"),
    ("s09", "Mia", "No coffee for two months now, only tea.", "2024-06-18T08:00:00"),
]
ZH = [
    ("s01", "小美", "我住在上海，房子离地铁很近。", "2024-01-10T09:00:00"),
    ("s01", "小美", "我现在在腾讯工作。", "2024-01-10T09:05:00"),
    ("s02", "小美", "我每天早上喝黑咖啡。", "2024-01-12T08:00:00"),
    ("s03", "小美", "这周一直下雨，我在家看了一本小说。", "2024-02-14T19:00:00"),
    ("s04", "小美", "我现在在字节跳动工作，做数据分析。", "2024-03-05T18:00:00"),
    ("s05", "小美", "我不喝咖啡了，只喝绿茶。", "2024-04-21T08:00:00"),
    ("s06", "小美", "我搬到了北京，到处都是箱子。", "2024-04-28T20:00:00"),
    ("s07", "小美", "我每天早上喝绿茶。", "2024-05-15T08:00:00"),
    ("s08", "小美", "不对，我住在杭州，不是北京。", "2024-06-02T10:00:00"),
]


def extractive_engine(tmp_path: Path, store: Any, embedder: Any) -> Any:
    """A :class:`~timem.engine.MemoryEngine` without LLM (extractive consolidation) on the ``store`` fixture."""
    from timem.config import load_config
    from timem.engine import MemoryEngine

    cfg = load_config(env={}, db_path=store.path, llm_backend="none", cache_dir=tmp_path / "cache",
                      consolidation_mode="extractive")
    return MemoryEngine(cfg, store, embedder, None)


def write(path: Path, user_id: str, rows: list[tuple[str, str, str, str]]) -> Path:
    """The rows as JSONL (person turn + assistant reply); returns ``path``."""
    with path.open("w", encoding="utf-8") as f:
        for session, speaker, text, ts in rows:
            f.write(json.dumps({"user_id": user_id, "session_id": session, "role": "user", "speaker": speaker,
                                "text": text, "timestamp": ts}, ensure_ascii=False) + "\n")
            reply_ts = ts[:-2] + "30"
            f.write(json.dumps({"user_id": user_id, "session_id": session, "role": "assistant", "speaker": "Assistant",
                                "text": "Thanks for telling me." if user_id != "xiaomei" else "好的，我记住了。",
                                "timestamp": reply_ts}, ensure_ascii=False) + "\n")
    return path
