"""A deterministic sample of extractive L2/L3 lines (or abstractive sentences) with their source turns, for labelling.

Every line of every active extractive L2 and L3 node is listed, ordered by the SHA-1 of
``node id + line`` (no randomness), and the first ``--n`` are written with the turn(s) of the same
user whose rendered text contains the line's sentence(s) -- the reader then checks the speaker and
fills ``correct_speaker`` (yes/no). Usage::

    python bench/speaker_label_sample.py --db /tmp/wtb.duckdb --n 40 > sample.csv
    python bench/speaker_label_sample.py --db abstractive.duckdb --mode abstractive --n 40 > sample.csv

``--mode abstractive``: the sentences (:func:`timem.prompts.common.split_sentences`) of every active
abstractive L2/L3 node, ordered by the SHA-1 of ``node id + sentence``; written with the people the sentence
names and, as a reading aid, the three turns of the node's span sharing most words with it. The reader checks
every statement about a person against the session and fills ``correct_speaker`` (yes/no).

``--mode hybrid-titles``: the LLM-written first line (the title) of every active hybrid L2/L3 node, ordered by
the SHA-1 of ``node id + title``, with the node's extractive lines below it.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import sys
from zoneinfo import ZoneInfo

from timem.consolidation.segments import turn_line
from timem.embed.minilm import MODEL_ID
from timem.prompts.common import split_sentences
from timem.store import open_store
from timem.store.ports import MemoryStore


def _words(text: str) -> set[str]:
    return {w.strip(".,!?'\"():;").lower() for w in text.split() if len(w) > 3}


def hybrid_title_sample(store: MemoryStore, n: int) -> None:
    """Write the hybrid title sample (see the module docstring) as CSV to stdout."""
    rows = []
    for user in store.users():
        for lv in (2, 3):
            for node in store.nodes(user, lv):
                if node.mode == "hybrid":
                    lines = node.content.splitlines()
                    rows.append((hashlib.sha1(f"{node.id}\n{lines[0]}".encode()).hexdigest(), user, node, lines))
    rows.sort(key=lambda r: r[0])
    out = csv.writer(sys.stdout)
    out.writerow(["user", "level", "node_id", "title", "extractive_body", "correct_speaker", "note"])
    for _, user, node, lines in rows[:n]:
        out.writerow([user, f"L{int(node.level)}", node.id, lines[0], " | ".join(lines[2:]), "", ""])


def abstractive_sample(store: MemoryStore, n: int) -> None:
    """Write the abstractive sample (see the module docstring) as CSV to stdout."""
    rows = []
    for user in store.users():
        turns = store.turns(user)
        speakers = sorted({t.speaker for t in turns})
        for lv in (2, 3):
            for node in store.nodes(user, lv):
                if node.mode != "abstractive":
                    continue
                for sent in split_sentences(node.content.replace("\n", " ")):
                    rows.append((hashlib.sha1(f"{node.id}\n{sent}".encode()).hexdigest(), user, node, sent, speakers,
                                 [t for t in turns if node.span_start <= t.event_time <= node.span_end]))
    rows.sort(key=lambda r: r[0])
    out = csv.writer(sys.stdout)
    out.writerow(["user", "level", "node_id", "sentence", "names", "closest_turns", "correct_speaker", "note"])
    for _, user, node, sent, speakers, span_turns in rows[:n]:
        names = [s for s in speakers if s.split()[0] in sent]
        best = sorted(span_turns, key=lambda t: (-len(_words(sent) & _words(t.text)), t.seq))[:3]
        out.writerow([user, f"L{int(node.level)}", node.id, sent, ";".join(names),
                      " || ".join(f"[{t.source_ref}] {t.speaker}: {t.text}" for t in best), "", ""])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--mode", choices=["extractive", "abstractive", "hybrid-titles"], default="extractive")
    args = ap.parse_args()
    store = open_store(args.db, MODEL_ID, 384)
    tz = ZoneInfo("UTC")
    if args.mode != "extractive":
        try:
            (abstractive_sample if args.mode == "abstractive" else hybrid_title_sample)(store, args.n)
        finally:
            store.close()
        return
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
