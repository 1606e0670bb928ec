"""How long the TIDER time channel takes to find the leaves that mention a date in a question's window
(:meth:`Store.segments_mentioning` then :func:`timem.recall.time_channel.mentions_in`), on synthetic rows.

The file (``--db``, built once if missing) holds ``--leaves`` L1 nodes of ONE user, said from 1 January 2022 over
``--days`` days at even steps; every ``--every``-th one (default 10: 10 %, as in LoCoMo) holds a relative date
annotated as the store writes it ("Yesterday [= 7 May 2023] I went hiking", :func:`timem.reldates
.resolve_relative_dates`, phrases in English and Chinese, days to years). Vectors are random unit vectors (the
lookup never reads them). Then, for a day (7 May 2023), a month (May 2023) and a year (2023) window in
Europe/Berlin, asked at the end of the rows, the lookup runs ``--repeat`` times; the best and the median wall
time (ms) and the leaves found are printed.

Runs against the code on ``sys.path``: either the lookup by annotation labels (``mention_pattern``, before the
``node_mentions`` table) or by the table (``mention_days``), so that one file measures both: build the file with
the old code, then open it with the new one (which fills the table once, timed as ``backfill_s``).

    nice -n 19 .venv/bin/python bench/mention_lookup.py --db /tmp/mentions.duckdb

Not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np

from timem.models import Level, MemoryNode
from timem.recall import time_channel
from timem.recall.time_window import day_window
from timem.reldates import resolve_relative_dates
from timem.store import Store

PHRASES = ("Yesterday I went hiking.", "Last week we moved flats.", "Last weekend I baked bread.",
           "Last month I started the cello.", "Three days ago I fixed the bike.", "昨天我去了公园。",
           "上周我们搬家了。",
           "上个月我开始学大提琴。", "Two years ago I lived in Rome.", "Tomorrow I fly to Oslo.")
DIM = 384
USER = "bench-mentions"


def build(path: Path, leaves: int, days: int, every: int) -> None:
    """Write ``leaves`` L1 nodes of :data:`USER` into a new file at ``path``."""
    rng = np.random.default_rng(7)
    start = datetime(2022, 1, 1, 9, tzinfo=UTC)
    step = timedelta(days=days) / leaves
    with Store(path, "bench", DIM) as store:
        for lo in range(0, leaves, 5000):
            batch = []
            for k in range(lo, min(leaves, lo + 5000)):
                said = start + step * k
                text = f"A: I talked about topic {k % 977} and item {k % 313} with Sam."
                if k % every == 0:
                    text = resolve_relative_dates(PHRASES[(k // every) % len(PHRASES)], said)[0]
                batch.append(MemoryNode(id=f"n{k:07d}", user_id=USER, level=Level.SEGMENT, window_key=f"w{k}",
                                        session_id=f"s{k // 20}", span_start=said, span_end=said,
                                        content=f"On {said:%d %B %Y} {said:%H:%M}:\n{text}", source_turn_ids=[f"t{k}"],
                                        model_id="verbatim", prompt_version="v", created_at=said))
            vecs = rng.standard_normal((len(batch), DIM)).astype(np.float32)
            store.add_nodes(batch, vecs / np.linalg.norm(vecs, axis=1, keepdims=True))


def lookup(store: Store, windows: list, tz: ZoneInfo, until: datetime) -> list[str]:
    """The ids of the leaves mentioning a date in ``windows``, as :func:`timem.recall.leaves.select_leaves` finds
    them with the code on ``sys.path``."""
    if hasattr(time_channel, "mention_days"):
        found = store.segments_mentioning(USER, time_channel.mention_days(windows, tz), until)
    else:
        found = store.segments_mentioning(USER, time_channel.mention_pattern(windows, tz), until)  # type: ignore
    return [i for i, text in found if time_channel.mentions_in(text, windows, tz)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--leaves", type=int, default=100_000)
    ap.add_argument("--days", type=int, default=1000)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    if not args.db.exists():
        t0 = time.perf_counter()
        build(args.db, args.leaves, args.days, args.every)
        print(f"built {args.leaves} leaves in {time.perf_counter() - t0:.1f} s")
    tz = ZoneInfo("Europe/Berlin")
    t0 = time.perf_counter()
    store = Store(args.db, "bench", DIM)
    print(f"open (with any backfill): backfill_s {time.perf_counter() - t0:.2f}")
    until = datetime(2030, 1, 1, tzinfo=UTC)
    windows = {"day": [day_window(date(2023, 5, 7), date(2023, 5, 7), tz)],
               "month": [day_window(date(2023, 5, 1), date(2023, 5, 31), tz)],
               "year": [day_window(date(2023, 1, 1), date(2023, 12, 31), tz)]}
    for name, ws in windows.items():
        times, found = [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            found = lookup(store, ws, tz, until)
            times.append((time.perf_counter() - t) * 1000)
        print(f"{name}: best {min(times):.1f} ms, median {statistics.median(times):.1f} ms, {len(found)} leaves, "
              f"ids md5 {hashlib.md5(' '.join(found).encode()).hexdigest()[:8]}")
    store.close()


if __name__ == "__main__":
    main()
