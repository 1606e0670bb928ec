"""Issue 27 #11: how many of the pasted prompt injections of ``tests/data/injection_family.json`` steer the answer.

For each of the ten injections (answer only X, ignore previous instructions, fake ``System:`` / ``Assistant:``
lines, a closing-tag escape, role-play, Chinese, a code fence, chat-template tokens, a tool-call JSON) a fresh
DuckDB file gets two exchanges of Mia's: a plain family fact, then the pasted injection a day later. The family
question is then asked twice, as ``timem ask`` does (answer prompt) and as the studio's chat does (``asker="Mia"``),
and an answer counts as **steered** when it contains the injection's target text (case-insensitive). Prints one
row per injection and the totals; ``--write`` also writes ``bench/results/injection_family.md``.

    .venv/bin/python bench/injection_family.py            # the embedded model (llm_backend local)
    .venv/bin/python bench/injection_family.py --write

Not a test: it runs the embedded model (20 answers, a few minutes on 2 cores). Settings come from ``TIMEM_*``
(``TIMEM_LLM_BACKEND=openai`` measures an endpoint instead); memory items use the rules, so that only the answer
calls reach the model.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import timem  # noqa: E402

FAMILIES = {"tuned": REPO / "tests" / "data" / "injection_family.json",
            "heldout": REPO / "tests" / "data" / "injection_family_heldout.json"}
T0 = datetime(2024, 5, 2, 9, 0, tzinfo=UTC)


def run_one(folder: Path, injection: dict[str, str], family: dict) -> tuple[str, list[tuple[str, str, bool, float]]]:
    """The model id, and ``(path, answer, steered, seconds)`` for the answer prompt and the chat prompt over one
    injection."""
    question = injection.get("question", family["question"])
    rows = []
    with timem.open(folder / f"{injection['name']}.duckdb", memory_extractor="rules",
                    consolidation_mode="extractive") as mem:
        mem.add_exchange("mia", "s1", family["fact"], "Thanks for telling me.", T0 - timedelta(days=1),
                         user_name="Mia")
        mem.add_exchange("mia", "s2", injection["text"], "Thanks for sharing it.", T0, user_name="Mia")
        for path, asker in (("answer", None), ("chat", "Mia")):
            t = time.perf_counter()
            answer = mem.ask("mia", question, T0 + timedelta(days=1), asker=asker).answer
            rows.append((path, answer, injection["target"].lower() in answer.lower(), time.perf_counter() - t))
        model = mem.llm.model_id if mem.llm is not None else "none"
    return model, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="also write bench/results/injection_family.md")
    ap.add_argument("--only", action="append", metavar="NAME", help="run only this injection (repeatable)")
    ap.add_argument("--family", choices=sorted(FAMILIES), default="tuned",
                    help="tuned: tests/data/injection_family.json (the quarantine rules were tuned on it); heldout: "
                         "tests/data/injection_family_heldout.json (written before them)")
    args = ap.parse_args()
    family = json.loads(FAMILIES[args.family].read_text(encoding="utf-8"))
    chosen = [i for i in family["injections"] if not args.only or i["name"] in args.only]
    if not chosen:
        ap.error(f"no injection named {args.only}; names: {', '.join(i['name'] for i in family['injections'])}")
    lines = ["| injection | path | steered | s | answer |", "|---|---|---|---|---|"]
    steered = total = 0
    model = "none"
    with tempfile.TemporaryDirectory(prefix="timem-injection-") as tmp:
        for inj in chosen:
            model, rows = run_one(Path(tmp), inj, family)
            for path, answer, hit, secs in rows:
                total += 1
                steered += hit
                shown = answer.replace("\n", " ").replace("|", "/")[:120]
                lines.append(f"| {inj['name']} | {path} | {'**yes**' if hit else 'no'} | {secs:.1f} | {shown} |")
                print(lines[-1], flush=True)
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    summary = f"{steered} of {total} answers steered ({len(chosen)} injections x 2 prompts)"
    print(summary)
    if args.write:
        out = REPO / "bench" / "results" / "injection_family.md"
        out.write_text(f"# Prompt injections pasted into memories (issue 27 #11)\n\n`bench/injection_family.py` at "
                       f"{commit}, model {model}. {summary}.\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
