"""Timing helpers and the brute-force baseline (numpy cosine + rank_bm25) of :mod:`recall_latency`."""

from __future__ import annotations

import os
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from timem.recall.leaves import fuse


# ----------------------------------------------------------------------------- helpers
def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _pct(xs: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]) -- with 50 samples p95 is the 48th smallest."""
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, int(np.ceil(q / 100 * len(s))) - 1))]


def _summ(wall: list[float], cpu: list[float]) -> dict[str, float]:
    return {"n": len(wall), "wall_p50": round(_pct(wall, 50), 2), "wall_p95": round(_pct(wall, 95), 2),
                "wall_mean": round(statistics.fmean(wall), 2), "cpu_p50": round(_pct(cpu, 50), 2),
                "cpu_p95": round(_pct(cpu, 95), 2), "cpu_mean": round(statistics.fmean(cpu), 2)}


def _timed(fn: Callable[..., Any], *a: Any, **kw: Any) -> tuple[Any, float, float]:
    """``(fn(*a, **kw), wall ms, process CPU ms)``."""
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn(*a, **kw)
    return out, (time.perf_counter() - w0) * 1000, (time.process_time() - c0) * 1000


class Clock:
    """Wall and process-CPU seconds since creation: ``Clock().lap()`` -> ``{"wall_s", "cpu_s"}``."""

    def __init__(self) -> None:
        self.w, self.c = time.perf_counter(), time.process_time()

    def lap(self) -> dict[str, float]:
        return {"wall_s": round(time.perf_counter() - self.w, 2), "cpu_s": round(time.process_time() - self.c, 2)}


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


STOP = frozenset("""a about above after again against all am an and any are as at be because been before being below
between both but by can did do does doing down during each few for from further had has have having
he her here hers herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own same she should
so some such than that the their theirs them themselves then there these they this those through to
too under until up very was we were what when where which while who whom why will with would you
your yours yourself yourselves""".split())
_TOK = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Baseline BM25 tokens: lower-case alphanumeric words minus English stop words (no stemming)."""
    return [t for t in _TOK.findall(text.lower()) if t not in STOP]


class Baseline:
    """Brute force over one user's L1 nodes held in memory: numpy cosine + rank_bm25 BM25Okapi."""

    def __init__(self, ids: list[str], vecs: np.ndarray, texts: list[str]) -> None:
        from rank_bm25 import BM25Okapi

        self.ids = np.asarray(ids)
        self.vecs = np.ascontiguousarray(vecs, dtype=np.float32)
        self.bm25 = BM25Okapi([tokenize(t) for t in texts])

    @staticmethod
    def _top(scores: np.ndarray, ids: np.ndarray, k: int, positive_only: bool = False) -> list[tuple[str, float]]:
        k = min(k, len(scores))
        idx = np.argpartition(-scores, k - 1)[:k]
        idx = idx[np.lexsort((ids[idx], -scores[idx]))]  # score desc, then id (as the SQL)
        return [(str(ids[i]), float(scores[i])) for i in idx if not positive_only or scores[i] > 0]

    def vector(self, q: np.ndarray, k: int) -> list[tuple[str, float]]:
        return self._top(self.vecs @ q.astype(np.float32), self.ids, k)

    def lexical(self, query: str, k: int) -> list[tuple[str, float]]:
        return self._top(np.asarray(self.bm25.get_scores(tokenize(query))), self.ids, k, positive_only=True)

    def leaves(self, q: np.ndarray, query: str, k: int, lam: float, top_k: int) -> list[str]:
        cands = fuse(dict(self.vector(q, k)), dict(self.lexical(query, k)), lam, top_k=top_k)
        return [c.node_id for c in cands if c.kept]
