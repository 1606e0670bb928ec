"""Micro-batching of concurrent one-text embedder calls (:mod:`timem.embed.batching`) with the real MiniLM."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from timem.embed.batching import BatchingEmbedder
from timem.errors import EmbeddingError

TEXTS = ["I adopted a grey cat called Pixel.", "What did I do last week?", "hello", "What is my cat called?",
         "Caroline went to the LGBTQ support group on 7 May 2023 and felt great", "short one here",
         "Where did I go today?", "When was the last time?", "Who is my best friend?", "How old is Pixel now?"] * 3


class _Slow:
    """Wraps an embedder; every call holds until released, so that concurrent calls pile up into one batch."""

    def __init__(self, inner) -> None:
        self.inner, self.model_id, self.dim = inner, inner.model_id, inner.dim
        self.gate = threading.Event()
        self.sizes: list[int] = []

    def embed(self, texts):
        self.gate.wait()
        self.sizes.append(len(texts))
        return self.inner.embed(texts)


def test_batched_vectors_equal_the_one_by_one_vectors_to_float_rounding(embedder):
    """Not bit-exact yet (the batch dimension changes the kernels' rounding): within 1e-6 per component, which is
    why ``embed_batch_wait_ms`` is off by default."""
    alone = {t: embedder.embed([t])[0] for t in TEXTS}
    slow = _Slow(embedder)
    batching = BatchingEmbedder(slow, wait_seconds=0.5, max_batch=64)
    got: dict[int, np.ndarray] = {}

    def call(i: int) -> None:
        got[i] = batching.embed([TEXTS[i]])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(TEXTS))]
    for t in threads:
        t.start()
    slow.gate.set()
    for t in threads:
        t.join()
    assert len(got) == len(TEXTS)
    for i, t in enumerate(TEXTS):
        assert got[i].shape == (1, embedder.dim) and got[i].dtype == np.float32
        assert np.allclose(got[i][0], alone[t], rtol=0, atol=1e-6), t
    assert max(slow.sizes) > 1  # some texts really went through one call together
    assert batching.texts + 1 >= len(TEXTS)  # every text but the first (run alone, at once) was batched


def test_calls_of_several_texts_pass_through_unchanged(embedder):
    batching = BatchingEmbedder(embedder, wait_seconds=0.01)
    assert np.array_equal(batching.embed(TEXTS[:5]), embedder.embed(TEXTS[:5]))
    assert batching.embed([]).shape == (0, embedder.dim)
    assert (batching.model_id, batching.dim) == (embedder.model_id, embedder.dim)


def test_an_error_of_the_embedder_reaches_every_caller_of_the_batch(embedder):
    class Failing(_Slow):
        def embed(self, texts):
            self.gate.wait()
            raise EmbeddingError("the model is gone")

    failing = Failing(embedder)
    batching = BatchingEmbedder(failing, wait_seconds=0.2)
    errors: list[str] = []

    def call(i: int) -> None:
        with pytest.raises(EmbeddingError) as exc:
            batching.embed([TEXTS[i]])
        errors.append(str(exc.value))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    failing.gate.set()
    for t in threads:
        t.join()
    assert errors == ["the model is gone"] * 6
