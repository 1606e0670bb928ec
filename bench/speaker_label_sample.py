"""A deterministic sample of extractive L2/L3 lines with their source turns, for labelling by hand.

Every line of every active extractive L2 and L3 node is listed, ordered by the SHA-1 of
``node id + line`` (no randomness), and the first ``--n`` are written with the turn(s) of the same
user whose rendered text contains the line's sentence(s) -- the reader then checks the speaker and
fills ``correct_speaker`` (yes/no). Usage::

    python bench/speaker_label_sample.py --db /tmp/wtb.duckdb --n 40 > sample.csv
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import sys
from zoneinfo import ZoneInfo

from timem.consolidation.segments import turn_line
from timem.embed.minilm import MODEL_ID
from timem.store import Store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--n", type=int, default=40)
    args = ap.parse_args()
    store = Store(args.db, MODEL_ID, 384)
    tz = ZoneInfo("UTC")
    try:
        lines = []
        for user in store.users():
            speakers = sorted({t.speaker for t in store.turns(user)}, key=lambda s: (-len(s), s))
            for lv in (2, 3):
                for n in store.nodes(user, lv):
                    if n.mode != "extractive":
                        continue
                    for line in n.content.splitlines():
                        key = hashlib.sha1(f"{n.id}\n{line}".encode()).hexdigest()
                        lines.append((key, user, n, line, speakers))
        lines.sort(key=lambda r: r[0])
        out = csv.writer(sys.stdout)
        out.writerow(["user", "level", "node_id", "claimed_speaker", "line_text", "source_ref", "source_speaker",
                      "source_turn", "correct_speaker"])
        for _, user, n, line, speakers in lines[: args.n]:
            claimed = next((s for s in speakers if line.startswith(f"{s}: ")), "")
            text = line[len(claimed) + 2:] if claimed else line
            turns = [t for t in store.turns(user) if text in turn_line(t, tz)]
            out.writerow([user, f"L{int(n.level)}", n.id, claimed, text, ";".join(t.source_ref or t.id for t in turns),
                          ";".join(t.speaker for t in turns), " || ".join(t.text for t in turns), ""])
    finally:
        store.close()


if __name__ == "__main__":
    main()
