"""A new-user trial: `DELETE /v1/users/ana` reported ``bytes_before: 12288, bytes_after: 7352320``: the size before
an erase's file rewrite left out what was still in the ``.wal`` file, so the erase looked as if it grew the file.
The sizes now count the file once its WAL is checkpointed into it (and any WAL left)."""

from __future__ import annotations

from pathlib import Path

from trial_support import engine, fixtures, say_lines

embedder, eng = fixtures()


def test_an_erase_reports_the_size_with_what_was_in_the_wal(eng):
    say_lines(eng, [f"I planted {k} tulips in the garden on the north side of the house." for k in range(12)])
    path = Path(eng.store.path)
    wal = Path(str(path) + ".wal")
    assert wal.exists() and wal.stat().st_size > 0  # the rows written are in the WAL, not yet in the file
    counts = eng.erase_user("mia", actor="test")
    assert counts["file_bytes_before"] >= counts["file_bytes_after"] > 0, counts
    assert counts["file_bytes_before"] > 12288, counts  # more than an empty file's header


def test_compact_of_an_unchanged_file_does_not_shrink_or_grow_it_much(tmp_path, store, embedder):
    e = engine(tmp_path, store, embedder)
    say_lines(e, ["I keep bees on the roof."])
    cost = e.compact()
    assert cost["bytes_before"] >= cost["bytes_after"] > 0, cost
