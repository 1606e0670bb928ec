"""Micro-batching of concurrent one-text embedder calls (issue 26 §4).

A recall embeds its query, a chat write its turns: one text per call, ~20 ms of MiniLM each. Under concurrent
requests, :class:`BatchingEmbedder` embeds the single texts of calls that arrive together in one call of the
wrapped embedder:

* a one-text call that finds the wrapped embedder idle runs at once (no added latency for a lone caller);
* one that finds it busy joins the batch being gathered; the batch's first caller waits at most ``wait_seconds``
  (``EmbeddingSettings.embed_batch_wait_ms``) or until ``max_batch`` texts, then embeds them all;
* calls of several texts (ingest, consolidation) go straight to the wrapped embedder, unchanged.

**Vectors.** A transformer batch pads its texts to the longest, and the batch's shape changes the matrix kernels'
rounding: a batched text's vector differs from a lone call's in the last float bits (up to ~2e-7 per component,
measured; grouping texts of equal token count, so that none is padded, did not make them bit-equal and left batches
of one). So a batched query's scores can differ in the last bits, and the setting is off by default
(``embed_batch_wait_ms = 0``); ``tests/test_embed_batching.py`` bounds the difference.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from timem.embed.protocol import Embedder


@dataclass
class _Ask:
    text: str
    done: threading.Event = field(default_factory=threading.Event)
    vec: np.ndarray | None = None
    error: BaseException | None = None


class BatchingEmbedder:
    """An :class:`~timem.embed.protocol.Embedder` that batches concurrent one-text calls of ``inner``.

    Args:
        inner: the embedder doing the work (thread-safe for concurrent calls, as MiniLM is).
        wait_seconds: the longest a batch's first caller waits for more texts (seconds; ``0`` batches nothing).
        max_batch: texts per batch at most.

    ``embed(texts)`` returns ``(len(texts), dim)`` float32, as ``inner`` does; errors of ``inner`` (e.g.
    :class:`~timem.errors.EmbeddingError`) reach every caller of the batch. :attr:`calls` and :attr:`texts` count
    the wrapped embedder's calls and texts made for one-text callers (their ratio is the mean batch size).
    """

    def __init__(self, inner: Embedder, wait_seconds: float, max_batch: int = 64) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.wait_seconds = wait_seconds
        self.max_batch = max(1, max_batch)
        self.calls = 0
        self.texts = 0
        self._cond = threading.Condition()
        self._pending: list[_Ask] = []
        self._gathering = False
        self._running = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) != 1 or self.wait_seconds <= 0:
            return self.inner.embed(texts)
        ask = _Ask(texts[0])
        with self._cond:
            if not self._running and not self._gathering:  # idle: run alone, now
                self._running += 1
                batch = [ask]
            else:
                self._pending.append(ask)
                if self._gathering:
                    if len(self._pending) >= self.max_batch:
                        self._cond.notify_all()
                    batch = []
                else:
                    self._gathering = True
                    deadline = time.monotonic() + self.wait_seconds
                    while len(self._pending) < self.max_batch and (left := deadline - time.monotonic()) > 0:
                        self._cond.wait(left)
                    batch, self._pending = self._pending, []
                    self._gathering = False
                    self._running += 1
        if batch:
            try:
                self._run(batch)
            finally:
                with self._cond:
                    self._running -= 1
        ask.done.wait()
        if ask.error is not None:
            raise ask.error
        assert ask.vec is not None
        return ask.vec[None, :]

    def _run(self, batch: list[_Ask]) -> None:
        try:
            vecs = self.inner.embed([a.text for a in batch])
            with self._cond:
                self.calls += 1
                self.texts += len(batch)
            for a, v in zip(batch, vecs, strict=True):
                a.vec = np.array(v, dtype=np.float32)
        except BaseException as exc:  # noqa: BLE001 -- not swallowed: re-raised in every caller's own thread
            for a in batch:
                a.error = exc
        finally:
            for a in batch:
                a.done.set()
