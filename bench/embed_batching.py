"""Micro-batching of MiniLM one-text calls (issue 26 §4): throughput of concurrent single-text embeddings.

``--threads`` threads each embed ``--texts`` LoCoMo questions one at a time, first straight through MiniLM, then
through :class:`timem.embed.batching.BatchingEmbedder` with ``--wait-ms``. Reports texts per second, the wrapped
model's calls and mean batch size, and the largest difference of a batched vector from the lone call's.

Usage (prints a markdown table; writes nothing under bench/results)::

    python bench/embed_batching.py --threads 8 --texts 40 --wait-ms 3
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path

import numpy as np

from timem.embed.batching import BatchingEmbedder
from timem.embed.minilm import MiniLMEmbedder
from timem.embed.protocol import Embedder

DEV = Path(__file__).resolve().parents[1] / "tests" / "data" / "locomo-dev.json"


def _questions(n: int) -> list[str]:
    data = json.loads(DEV.read_text())
    qs = [q["question"] for conv in data for q in conv["qa"]]
    return (qs * (n // len(qs) + 1))[:n]


def _run(emb: Embedder, texts: list[str], threads: int) -> tuple[float, dict[int, np.ndarray]]:
    out: dict[int, np.ndarray] = {}
    parts = [list(range(k, len(texts), threads)) for k in range(threads)]

    def work(idx: list[int]) -> None:
        for i in idx:
            out[i] = emb.embed([texts[i]])[0]

    ts = [threading.Thread(target=work, args=(p,)) for p in parts]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--texts", type=int, default=40, help="texts per thread")
    ap.add_argument("--wait-ms", type=float, default=3.0)
    args = ap.parse_args()
    model = MiniLMEmbedder()
    texts = _questions(args.threads * args.texts)
    model.embed(texts[:4])  # warm
    plain_s, plain = _run(model, texts, args.threads)
    batching = BatchingEmbedder(model, args.wait_ms / 1000)
    batched_s, batched = _run(batching, texts, args.threads)
    diff = max(float(np.abs(plain[i] - batched[i]).max()) for i in plain)
    n = len(texts)
    print(f"{args.threads} threads x {args.texts} one-text calls, wait {args.wait_ms} ms\n")
    print("| embedder | texts/s | model calls | mean batch | max abs diff vs lone call |")
    print("|---|---:|---:|---:|---:|")
    print(f"| MiniLM, one text per call | {n / plain_s:.1f} | {n} | 1.0 | 0 |")
    print(f"| BatchingEmbedder | {n / batched_s:.1f} | {batching.calls} + lone | "
          f"{batching.texts / max(batching.calls, 1):.1f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
