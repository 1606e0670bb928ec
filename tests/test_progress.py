"""timem.progress.terminal_progress: a tqdm bar on a terminal, plain lines when stderr is piped or a file.

A trial piped ``timem ingest`` into a log: tqdm's carriage-return redraws ran into one long line. The CLI run in a
subprocess (stderr a real pipe) is in tests/test_cli.py; these check the two sides of the switch on streams that
say whether they are a terminal (tqdm asks ``isatty``).
"""

from __future__ import annotations

import io
import sys

import timem.progress as progress
from timem.progress import terminal_progress


class _Stream(io.StringIO):
    """A text stream that says whether it is a terminal (tqdm asks ``isatty``)."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_piped_stderr_gets_plain_lines_and_a_final_one_no_carriage_returns(monkeypatch):
    err = _Stream(tty=False)
    monkeypatch.setattr(sys, "stderr", err)
    assert list(terminal_progress(range(5), "L2 session", 5)) == [0, 1, 2, 3, 4]
    assert "\r" not in err.getvalue()
    assert err.getvalue().splitlines() == ["L2 session: 5/5 items, done"]
    assert list(terminal_progress([], "L3 day", 0)) == [] and err.getvalue().count("\n") == 1  # an empty stage: none


def test_piped_stderr_gets_a_line_every_plain_every_seconds(monkeypatch):
    err = _Stream(tty=False)
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(progress, "PLAIN_EVERY_S", 0.0)  # every item is "30 s later"
    assert list(terminal_progress("abc", "ingest", 3)) == ["a", "b", "c"]
    assert err.getvalue().splitlines() == ["ingest: 1/3 items", "ingest: 2/3 items", "ingest: 3/3 items, done"]


def test_a_terminal_still_gets_the_redrawn_bar(monkeypatch):
    err = _Stream(tty=True)
    monkeypatch.setattr(sys, "stderr", err)
    assert list(terminal_progress(range(3), "L2 session", 3)) == [0, 1, 2]
    assert "\r" in err.getvalue() and "L2 session" in err.getvalue() and "items, done" not in err.getvalue()


def test_ingest_shows_each_stage_once(tmp_path, fake_embedder):
    """A new-user trial: `timem ingest` printed "L1 segments: 2/2 items, done" twice (the memory items are read
    between a first pass that writes the L1 segments and a second that writes L2-L5, which went over L1 again)."""
    from memory_scenario import EN, write

    from timem.config import load_config
    from timem.datasets import load_dataset
    from timem.engine import MemoryEngine
    from timem.store import Store

    cfg = load_config(env={}, db_path=tmp_path / "t.duckdb", llm_backend="none", cache_dir=tmp_path / "cache",
                      consolidation_mode="extractive")
    shown: list[str] = []

    def record(items, desc, total):
        shown.append(desc)
        return items

    store = Store(cfg.store.db_path, fake_embedder.model_id, fake_embedder.dim)
    with MemoryEngine(cfg, store, fake_embedder, None) as eng:
        assert eng.config.memory.memory_items  # the two passes
        users = load_dataset(write(tmp_path / "mia.jsonl", "mia", EN[:3]), "jsonl", tz=cfg.time.tz)
        eng.ingest(users, progress=record)
    assert shown == ["L1 segments", "L2 session", "L3 day", "L4 week", "L5 profile"], shown
