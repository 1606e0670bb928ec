"""Store round trips of the live path (issue 26): DuckDB statements and commits per chat write and per recall.

Counts, not times (they do not depend on the machine's load): each operation runs under :mod:`cProfile`, and the
calls of DuckDB's ``execute`` / ``executemany`` are counted, with the outermost store transactions (each ends in one
commit, which syncs DuckDB's write-ahead log to disk: ~2-6 ms on this project's machines, holding the store's one
writer). On LoCoMo conv-26 ingested with the default settings (no LLM); five rounds of:

* ``write, consolidated in it`` -- :meth:`MemoryEngine.add_exchange` without a queue worker (the studio's and the
  CLI's path): the turns, the L1 segment, the memory items, every window that closed, the segment tree;
* ``write, queued`` -- the same with the queue on and its worker held off (the service's acknowledgement);
* ``recall right after a queued write`` -- :meth:`MemoryEngine.recall` with its trace persisted (read-your-writes
  writes the L1 segment and reads its items first);
* ``recall`` -- the same with nothing queued.

Run with the code to count on ``PYTHONPATH`` (a ``git worktree`` of another commit for the one before)::

    PYTHONPATH=. .venv/bin/python bench/live_path_counts.py            # prints a markdown table
"""

from __future__ import annotations

import cProfile
import pstats
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _count(store: Any, run: Callable[..., Any], *args: Any) -> tuple[int, int]:
    """(DuckDB statements, outermost transactions) of ``run(*args)``."""
    begun = [0]
    cls = type(store)
    transaction = cls.transaction

    def counted(self: Any) -> Any:
        if not self.cursors.state().in_tx:
            begun[0] += 1
        return transaction(self)

    cls.transaction = counted  # type: ignore[method-assign]
    prof = cProfile.Profile()
    try:
        prof.runcall(run, *args)
    finally:
        cls.transaction = transaction  # type: ignore[method-assign]
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    calls = sum(v[1] for k, v in stats.items() if k[2] in ("<built-in method _duckdb.execute>",
                                                             "<built-in method _duckdb.executemany>"))
    return calls, begun[0]


def main() -> None:
    from timem.config import Config
    from timem.datasets.locomo import load_locomo
    from timem.embed.minilm import MiniLMEmbedder
    from timem.engine import MemoryEngine
    from timem.store import Store

    emb = MiniLMEmbedder()
    rows: dict[str, list[tuple[int, int]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Config().with_overrides(db_path=str(Path(tmp) / "c.duckdb"), online_queue=True)
        store = Store(cfg.store.db_path, emb.model_id, emb.dim)
        engine = MemoryEngine(cfg, store, emb, None)
        user = [u for u in load_locomo(REPO / "tests" / "data" / "locomo-dev.json", None, cfg.time.tz)
                if u.user_id == "conv-26"][0]
        engine.ingest([user])
        start = max(t.event_time for t in user.turns).astimezone(UTC) + timedelta(days=1)
        engine.recall(user.user_id, "What did Caroline research?", start)  # warm: embedder, copies
        for i in range(5):  # no worker: the write consolidates itself
            at = start + timedelta(days=i)
            rows.setdefault("write, consolidated in it", []).append(_count(
                store, engine.add_exchange, user.user_id, f"sync-{i}", f"I saw Lisbon{i} with Ann.", "Nice!", at))
        lock = threading.RLock()
        lock.acquire()  # held here: the worker never runs, the jobs stay queued
        worker = engine.start_queue_worker(lock)
        for i in range(5):
            at = start + timedelta(days=10 + i)
            rows.setdefault("write, queued", []).append(_count(
                store, engine.add_exchange, user.user_id, f"queued-{i}", f"I saw Porto{i} with Ann.", "Nice!", at))
            rows.setdefault("recall right after a queued write", []).append(_count(
                store, engine.recall, user.user_id, "Where did I go with Ann?", at + timedelta(minutes=5)))
            rows.setdefault("recall", []).append(_count(
                store, engine.recall, user.user_id, "What did Caroline research?", at + timedelta(minutes=6)))
        worker.stop(timeout=0)
        lock.release()
        worker.stop()
        store.close()
    import timem

    commit = subprocess.run(["git", "-C", str(Path(timem.__file__).parent), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    print(f"code at {commit} ({Path(timem.__file__).parent}); per operation, the 5 rounds' median\n")
    print("| operation | DuckDB statements | commits |\n|---|---:|---:|")
    for name, counts in rows.items():
        calls, commits = sorted(c[0] for c in counts)[2], sorted(c[1] for c in counts)[2]
        print(f"| {name} | {calls} | {commits} |")


if __name__ == "__main__":
    sys.exit(main())
