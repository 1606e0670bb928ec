"""The MiniLM embedder's torch backend: its one-batch path gives exactly the vectors of ``SentenceTransformer.encode``
(the ONNX backend, the default: ``tests/test_embed_onnx.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import locomo_dev_texts


@pytest.fixture(scope="module")
def embedder():
    from timem.embed.minilm import MiniLMEmbedder

    return MiniLMEmbedder(backend="torch")


@pytest.mark.parametrize("n", [1, 2, 5, 64])
def test_one_batch_is_bit_identical_to_encode(embedder, n):
    texts = locomo_dev_texts()
    rng = np.random.default_rng(n)
    extra = ["", "学习了大学的课程", "What did Caroline research after the LGBTQ support group?", "x " * 400]
    for _ in range(2):
        batch = [texts[i] for i in rng.choice(len(texts), n, replace=False)]
        batch = (extra[:n] + batch)[:n]  # lengths of every kind, ties included, when n allows
        fast = embedder.embed(batch)
        ref = embedder._model.encode(batch, batch_size=embedder.batch_size, normalize_embeddings=True,
                                     convert_to_numpy=True, show_progress_bar=False).astype(np.float32)
        assert fast.dtype == np.float32 and fast.shape == (n, 384)
        assert np.array_equal(fast, ref)


def test_more_than_a_batch_goes_through_encode(embedder):
    texts = locomo_dev_texts()[:70]
    got = embedder.embed(texts)
    ref = embedder._model.encode(texts, batch_size=embedder.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False).astype(np.float32)
    assert np.array_equal(got, ref)
    # a batch of one row is the same vector as that row inside a larger batch, within float noise only
    assert np.allclose(embedder.embed(texts[:1])[0], got[0], atol=1e-5)
