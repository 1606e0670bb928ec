"""timem.progress.terminal_progress: a tqdm bar on a terminal, plain lines when stderr is piped or a file.

A trial piped ``timem ingest`` into a log: tqdm's carriage-return redraws ran into one long line. The CLI run in a
subprocess (stderr a real pipe) is in tests/test_cli.py; these check the two sides of the switch on streams that
say whether they are a terminal (tqdm asks ``isatty``).
"""

from __future__ import annotations

import io
import json
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
    assert err.getvalue().splitlines() == ["L2 session: 5/5, done"]
    assert list(terminal_progress([], "L3 day", 0)) == [] and err.getvalue().count("\n") == 1  # an empty stage: none


def test_piped_stderr_gets_a_line_every_plain_every_seconds(monkeypatch):
    err = _Stream(tty=False)
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(progress, "PLAIN_EVERY_S", 0.0)  # every item is "30 s later"
    assert list(terminal_progress("abc", "ingest", 3)) == ["a", "b", "c"]
    assert err.getvalue().splitlines() == ["ingest: 1/3", "ingest: 2/3", "ingest: 3/3, done"]


def test_a_terminal_still_gets_the_redrawn_bar(monkeypatch):
    err = _Stream(tty=True)
    monkeypatch.setattr(sys, "stderr", err)
    assert list(terminal_progress(range(3), "L2 session", 3)) == [0, 1, 2]
    assert "\r" in err.getvalue() and "L2 session" in err.getvalue() and ", done" not in err.getvalue()


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
    # each stage says what it counts, and names its user (ingest_shows_whose_stages_with_several_users)
    assert shown == ["mia · L1 segments, by session", "mia · L2 session", "mia · L3 day", "mia · L4 week",
                     "mia · L5 profile"], shown


def test_ingest_of_several_users_names_whose_stage_it_is_and_counts_what_it_says(tmp_path, fake_embedder, monkeypatch):
    """Found by trying `timem ingest locomo-dev.json`: two users' stages ran one after the other, unnamed ("L1
    segments: 19/19 items" twice), and the L1 count was of sessions while 419 segments were written; "items" read as
    memory items. Each stage now names its user and its place in the run, the L1 stage says it counts sessions, and no
    unit is appended."""
    from memory_scenario import EN

    from timem.config import load_config
    from timem.datasets import load_jsonl
    from timem.engine import MemoryEngine
    from timem.store import Store

    cfg = load_config(env={}, db_path=tmp_path / "t.duckdb", llm_backend="none", cache_dir=tmp_path / "cache",
                      consolidation_mode="extractive")
    src = tmp_path / "two.jsonl"
    rows = [{"user_id": u, "session_id": f"s{i}", "role": "user", "text": text, "timestamp": f"2024-04-0{i + 1}T09:00"}
            for u in ("ana", "ben") for i, (_, _, text, _) in enumerate(EN[:2])]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    seen: list[tuple[str, int, int]] = []

    def record(items, desc, total):
        got = list(items)
        seen.append((desc, len(got), total))
        return got

    store = Store(cfg.store.db_path, fake_embedder.model_id, fake_embedder.dim)
    with MemoryEngine(cfg, store, fake_embedder, None) as eng:
        eng.ingest(load_jsonl(src, cfg.time.tz), progress=record)
        assert len(eng.store.nodes("ana", 1)) == 2
    l1 = [s for s in seen if "L1" in s[0]]
    assert l1 == [("ana (1/2) · L1 segments, by session", 2, 2), ("ben (2/2) · L1 segments, by session", 2, 2)], seen
    assert [d for d, _, _ in seen if "L2" in d] == ["ana (1/2) · L2 session", "ben (2/2) · L2 session"], seen
    assert all(n == total for _, n, total in seen), seen  # each count is of what its stage goes over

    err = _Stream(tty=False)
    monkeypatch.setattr(sys, "stderr", err)
    list(terminal_progress(range(2), "ana (1/2) · L2 session", 2))
    assert err.getvalue() == "ana (1/2) · L2 session: 2/2, done\n"  # no "items"
