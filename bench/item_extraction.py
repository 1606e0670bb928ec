"""Memory-item extraction on the labelled set: precision and recall of items per extractor.

    PYTHONPATH=. .venv/bin/python bench/item_extraction.py            # rules only (seconds)
    PYTHONPATH=. .venv/bin/python bench/item_extraction.py --llm      # + the embedded model (minutes)

The set (``bench/data/memory_items_labelled.jsonl``) holds single-turn statements by one speaker, each labelled
with the items it states (``[kind, attribute, value]``; ``attribute`` null for a bare correction) and the values
it ends (``[attribute, value]``, e.g. "I stopped running"). Moves, trips, job changes, hobbies, preferences,
diets, third parties and corrections, in English and Chinese.

An extracted item matches a labelled one when the attribute is the same (``drink`` = ``morning drink``; a
labelled null attribute matches any) and one value names the other (:func:`timem.item_values.mentions`, so
"double espresso" matches "espresso"). Several extracted items matching one labelled item count once (the writer
merges them); an extracted item matching none is a false item. Ends are scored the same way, beside the items.

Extractors: ``rules`` (:mod:`timem.memory.rules`) and ``llm`` (the prompt :mod:`timem.prompts.memory`, one call
per statement, the speaker ``Mia``), each with and without the grounding filter
(:mod:`timem.memory.grounding`). The LLM's raw answers are kept in ``--llm-cache`` (JSONL, keyed by prompt
version and statement id), so a re-run rescores without the model. Writes ``--out`` (markdown).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from timem.item_values import mentions
from timem.memory.grounding import canonical_attribute, check_statement
from timem.memory.rules import extract_statements

HERE = Path(__file__).resolve().parent
SET = HERE / "data" / "memory_items_labelled.jsonl"
FAMILY = {"morning drink": "drink"}

#: one extracted statement: (attribute or None, value, ends, source text for grounding)
Extracted = tuple[str | None, str, bool, str, str | None]


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    false_items: list[str] | None = None

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def _same(attr: str | None, value: str, gold_attr: str | None, gold_value: str) -> bool:
    if gold_attr is not None and FAMILY.get(attr or "", attr) != FAMILY.get(gold_attr, gold_attr):
        return False
    return mentions(value, gold_value) or mentions(gold_value, value)


def score_one(extracted: list[Extracted], row: dict, score: Score) -> None:
    """Add one statement's matches to ``score`` (see the module doc)."""
    gold = [(a, v, False) for _, a, v in row["items"]] + [(a, v, True) for a, v in row["ends"]]
    hit = [False] * len(gold)
    for attr, value, ends, _, _ in extracted:
        found = [k for k, (ga, gv, ge) in enumerate(gold) if ge == ends and _same(attr, value, ga, gv)]
        if not found:
            score.fp += 1
            assert score.false_items is not None
            score.false_items.append(f"{row['id']}: {'ends ' if ends else ''}{attr}: {value}")
        for k in found[:1]:
            hit[k] = True
    score.tp += sum(hit)
    score.fn += hit.count(False)


def rules(row: dict) -> list[Extracted]:
    out: list[Extracted] = []
    for s in extract_statements(row["text"]):
        out.append((s.attribute, s.value, s.ends_only, s.text, s.replaces))
        if s.replaces and not s.ends_only:  # "switched from coffee to tea" also ends coffee
            out.append((s.attribute, s.replaces, True, s.text, s.replaces))
    return out


def interleaved(rows: list[dict]) -> list[dict]:
    """``rows`` taken round-robin over their categories, so that any first N statements cover every category."""
    by_cat: dict[str, list[dict]] = {}
    for r in rows:
        by_cat.setdefault(r["category"], []).append(r)
    out: list[dict] = []
    while any(by_cat.values()):
        for c in sorted(by_cat):
            if by_cat[c]:
                out.append(by_cat[c].pop(0))
    return out


def llm_answers(rows: list[dict], cache: Path, per_call: int = 1) -> dict[str, dict]:
    """The embedded model's raw answers from ``cache`` or the model: the statements go ``per_call`` at a time as
    the numbered turns of one session (the writer sends a closed session; one statement a call by default: seven
    a call made the 1.5B model run to its token cap)."""
    from timem.config import load_config
    from timem.llm.factory import make_llm
    from timem.prompts import memory as memory_prompt

    key = memory_prompt.PROMPT_VERSION
    known: dict[str, dict] = {}
    if cache.exists():
        for line in cache.read_text().splitlines():
            r = json.loads(line)
            if r["prompt_version"] == key:
                known[r["id"]] = r
    todo = [r for r in rows if r["id"] not in known]
    if todo:
        llm = make_llm(load_config(llm_backend="local"), None)
        assert llm is not None
        with cache.open("a") as f:
            for k in range(0, len(todo), per_call):
                chunk = todo[k:k + per_call]
                t0 = time.perf_counter()
                try:
                    res = llm.complete_json(memory_prompt.build_messages([("Mia", r["text"]) for r in chunk]),
                                            memory_prompt.ExtractedItems, purpose="memory-items",
                                            max_tokens=memory_prompt.MAX_TOKENS)
                    answer, error = [i.model_dump() for i in res.items], None
                except Exception as exc:  # noqa: BLE001 - a failed answer is a result of the bench, recorded
                    answer, error = [], f"{type(exc).__name__}: {exc}"
                took = round(time.perf_counter() - t0, 2)
                for n, r in enumerate(chunk, start=1):
                    rec = {"id": r["id"], "prompt_version": key, "items": [i for i in answer if i["turn"] == n],
                           "error": error, "seconds": round(took / len(chunk), 2)}
                    f.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    known[r["id"]] = rec
                f.flush()
                print(f"{chunk[0]['id']}..{chunk[-1]['id']}: {took} s, {len(answer)} items"
                      + (f" ERROR {error}" if error else ""))
    return known


def llm(row: dict, answer: dict) -> list[Extracted]:
    out: list[Extracted] = []
    for it in answer["items"]:
        if it["subject"] != "Mia":
            continue
        attr = canonical_attribute(it["attribute"]) or it["attribute"]
        rep = it.get("replaces") or None
        ends = bool(rep) and rep.strip().lower() == it["value"].strip().lower()
        out.append((attr, it["value"], ends, row["text"], rep))
        if rep and not ends:
            out.append((attr, rep, True, row["text"], rep))
    return out


def grounded(extracted: Iterable[Extracted]) -> list[Extracted]:
    """What the writer keeps: vocabulary attribute, and :func:`check_statement` passes."""
    keep = []
    for attr, value, ends, text, rep in extracted:
        canon = canonical_attribute(attr) if attr is not None else None
        if attr is not None and canon is None:
            continue
        if check_statement(canon, value, text, ends=rep) is None:
            keep.append((canon, value, ends, text, rep))
    return keep


def table(title: str, rows: list[dict], runs: dict[str, list[list[Extracted]]]) -> list[str]:
    """Markdown: one row per extractor (precision, recall, F1, false items, F1 per category), then its false items."""
    cats = sorted({r["category"] for r in rows})
    lines = [f"## {title}", "", f"{len(rows)} statements ({sum(r['lang'] == 'zh' for r in rows)} in Chinese), "
             f"{sum(len(r['items']) + len(r['ends']) for r in rows)} labelled items and ends.", "",
             "| extractor | precision | recall | F1 | false items | " + " | ".join(f"F1 {c}" for c in cats) + " |",
             "|---|---:|---:|---:|---:|" + "---:|" * len(cats)]
    details = []
    for name, extracted in runs.items():
        total = Score(false_items=[])
        per = {c: Score(false_items=[]) for c in cats}
        for row, ex in zip(rows, extracted, strict=True):
            score_one(ex, row, total)
            score_one(ex, row, per[row["category"]])
        lines.append(f"| {name} | {total.precision:.2f} | {total.recall:.2f} | {total.f1:.2f} | {total.fp} | "
                     + " | ".join(f"{per[c].f1:.2f}" for c in cats) + " |")
        details.append(f"- **{name}**: " + ("; ".join(total.false_items or []) or "none"))
    return [*lines, "", "False items:", "", *details, ""]


def rule_runs(rows: list[dict]) -> dict[str, list[list[Extracted]]]:
    runs = {"rules, no grounding": [rules(r) for r in rows]}
    runs["rules + grounding (default)"] = [grounded(x) for x in runs["rules, no grounding"]]
    return runs


#: the heading of the hand-written notes at the end of ``--out``, kept across re-runs
NOTES_HEADING = "## What the tables do not show"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llm", action="store_true", help="also score the embedded model (minutes)")
    ap.add_argument("--llm-limit", type=int, default=None, help="ask the model about the first N statements only")
    ap.add_argument("--llm-cache", type=Path, default=HERE / "results" / "item-extraction-llm.jsonl")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "item-extraction.md")
    args = ap.parse_args()
    rows = [json.loads(line) for line in SET.read_text().splitlines() if line.strip()]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = ["# Memory-item extraction on the labelled set", "",
             f"`bench/data/memory_items_labelled.jsonl`. Made by `PYTHONPATH=. .venv/bin/python "
             f"bench/item_extraction.py` at commit {commit} (the rules and grounding as committed; the embedded "
             "model's answers come from `item-extraction-llm.jsonl` beside this file, written by `--llm`).", "",
             *table("Every statement: the rules", rows, rule_runs(rows))]
    if args.llm or args.llm_cache.exists():
        answers = llm_answers(interleaved(rows)[:args.llm_limit], args.llm_cache) if args.llm else {
            json.loads(x)["id"]: json.loads(x) for x in args.llm_cache.read_text().splitlines()}
        asked = [r for r in rows if r["id"] in answers]
        runs = rule_runs(asked)
        runs["llm (1.5B), no grounding"] = [llm(r, answers[r["id"]]) for r in asked]
        runs["llm (1.5B) + grounding"] = [grounded(x) for x in runs["llm (1.5B), no grounding"]]
        seconds = sum(answers[r["id"]]["seconds"] for r in asked)
        lines += table(f"The statements the embedded model was asked ({len(asked)} of {len(rows)})", asked, runs)
        lines += [f"The embedded model took {seconds:.0f} s for these {len(asked)} statements, one statement a call "
                  "(a one-turn session; each call's seconds are in the cache file, and the machine's load when "
                  "they were taken is in the notes below).", ""]
    notes = NOTES_HEADING in args.out.read_text(encoding="utf-8") if args.out.exists() else False
    if notes:  # the hand-written notes after the tables are kept (a re-run rewrote them away)
        lines += [NOTES_HEADING + args.out.read_text(encoding="utf-8").split(NOTES_HEADING, 1)[1].rstrip("\n")]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
