"""Issue 27 #4: which llama.cpp CPU build is fastest *and* correct on this machine.

Runs 20 fixed answer prompts (the bundled demo's turns as the recall context, the chat's answer prompt,
greedy decoding as the studio does) through whatever ``llama_cpp`` is importable, and writes one JSON
record per prompt: the answer text, its tokens, and llama.cpp's own counters (prompt tokens evaluated,
prompt-evaluation and generation time in ms). The KV cache is reset before each prompt, so every prompt is
evaluated in full and builds are compared on equal work.

    .venv/bin/python bench/llama_builds.py --out /tmp/avx2.json
    PYTHONPATH=/tmp/variants/avx512 .venv/bin/python bench/llama_builds.py --out /tmp/avx512.json
    .venv/bin/python bench/llama_builds.py --compare /tmp/avx2.json /tmp/avx512.json

``--compare`` prints, for each build, prompt and generation speed (tokens/s, medians over the 20 prompts)
and how many of the 20 answers are token-for-token equal to the first file's. Not a test: it needs the
embedded model and a few minutes of CPU per build; run it on an idle machine, one build at a time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = [
    "What do I usually drink in the morning these days?", "Where do I work now?",
    "What did I say about my sister last month?", "Which city do I live in now?",
    "What is my cat called?", "What race was I training for?", "What is my target time for the 10k?",
    "Where did I travel in May?", "What language am I learning?", "Why did I stop drinking coffee?",
    "What do you know about my family?", "Which university did I study at?", "What is my job?",
    "How often do I run?", "What did I do last weekend?", "Do I like my new job?",
    "我早上通常喝什么？", "我住在哪个城市？", "What should I cook for dinner, given what I like?",
    "Summarise what happened in April.",
]
#: how many demo turns each prompt's context holds: a spread around the chat's 500-token budget
CONTEXT_TURNS = [6, 10, 14, 18, 22]


def _prompts() -> list[list[dict[str, str]]]:
    from timem.prompts.answer import build_messages

    turns = [json.loads(line) for line in (REPO / "timem/data/demo_conversation.jsonl").read_text().splitlines()
             if line.strip()]
    prompts = []
    for i, question in enumerate(QUESTIONS):
        n = CONTEXT_TURNS[i % len(CONTEXT_TURNS)]
        start = (i * 7) % max(1, len(turns) - n)
        lines = [f"[{t['timestamp'][:10]}] {t['speaker']}: {t['text']}" for t in turns[start:start + n]]
        messages = build_messages(question, "\n".join(lines), datetime(2024, 7, 1, 9, 0), asker="Mia")
        prompts.append([m.model_dump() for m in messages])
    return prompts


def run(out: Path, n_threads: int, max_tokens: int, limit: int = 20) -> None:
    """Answer the 20 prompts with the importable llama_cpp and write the records to ``out`` (JSON)."""
    import llama_cpp

    from timem.config import load_config
    from timem.llm.local import REPEAT_PENALTY, SEED, ensure_model_file

    config = load_config()
    path = ensure_model_file(config)
    t = time.perf_counter()
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=4096, n_threads=n_threads, seed=SEED, verbose=False)
    load_s = time.perf_counter() - t
    records: list[dict[str, Any]] = []
    for messages in _prompts()[:limit]:
        llm.reset()
        llama_cpp.llama_perf_context_reset(llm.ctx)
        t = time.perf_counter()
        result: Any = llm.create_chat_completion(messages=messages, temperature=0.0, max_tokens=max_tokens,
                                                 seed=SEED, repeat_penalty=REPEAT_PENALTY)
        wall = time.perf_counter() - t
        perf = llama_cpp.llama_perf_context(llm.ctx)
        records.append({"question": messages[-1]["content"].rsplit("Question: ", 1)[-1].split("\n")[0],
                        "answer": result["choices"][0]["message"]["content"],
                        "prompt_tokens": result["usage"]["prompt_tokens"],
                        "completion_tokens": result["usage"]["completion_tokens"],
                        "n_p_eval": perf.n_p_eval, "t_p_eval_ms": perf.t_p_eval_ms,
                        "n_eval": perf.n_eval, "t_eval_ms": perf.t_eval_ms, "wall_s": wall})
        print(f"{wall:5.1f} s  {records[-1]['prompt_tokens']:4d} tok  {records[-1]['answer'][:90]!r}", flush=True)
    system_info = llama_cpp.llama_print_system_info().decode()
    out.write_text(json.dumps({"system_info": system_info, "load_s": load_s, "n_threads": n_threads,
                               "llama_cpp": str(Path(llama_cpp.__file__).parent), "records": records}, indent=1))
    print(f"wrote {out}; {system_info}")


def compare(files: list[Path]) -> None:
    """Print speed and answer equality of each run against the first."""
    base = json.loads(files[0].read_text())["records"]
    print("| build | prompt tok/s (median) | gen tok/s (median) | mean wall s | answers equal to first |")
    print("|---|---:|---:|---:|---:|")
    for f in files:
        run_ = json.loads(f.read_text())
        recs = run_["records"]
        pp = statistics.median(r["n_p_eval"] / r["t_p_eval_ms"] * 1000 for r in recs)
        tg = statistics.median(r["n_eval"] / r["t_eval_ms"] * 1000 for r in recs if r["n_eval"])
        wall = statistics.mean(r["wall_s"] for r in recs)
        same = sum(a["answer"] == b["answer"] for a, b in zip(recs, base, strict=True))
        print(f"| {f.stem} | {pp:.1f} | {tg:.1f} | {wall:.2f} | {same} / {len(recs)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--limit", type=int, default=20, help="answer only the first N prompts")
    parser.add_argument("--compare", nargs="+", type=Path)
    args = parser.parse_args()
    if args.compare:
        compare(args.compare)
    elif args.out:
        run(args.out, args.threads, args.max_tokens, args.limit)
    else:
        parser.error("give --out FILE or --compare FILE...")


if __name__ == "__main__":
    main()
