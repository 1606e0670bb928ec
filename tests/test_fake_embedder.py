"""The hashing embedder of the logic tests (:mod:`timem.embed.fake`): a valid, deterministic Embedder."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from timem.embed.fake import HashingEmbedder
from timem.embed.protocol import Embedder
from timem.errors import EmbeddingError


def test_vectors_are_unit_length_deterministic_and_lexical():
    emb = HashingEmbedder()
    assert isinstance(emb, Embedder) and emb.model_id == "test-hashing-bow-64"
    texts = ["Caroline went to the support group", "caroline went to the SUPPORT group!", "Melanie paints sunsets",
             "???", "", "我昨天去了支持小组"]
    v = emb.embed(texts)
    assert v.shape == (6, 64) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)  # also for "???" and "": never a zero vector
    assert v[0] @ v[1] == pytest.approx(1.0, abs=1e-6)  # case and punctuation do not matter
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3  # shared words, closer vectors
    assert emb.embed([]).shape == (0, 64)
    other = subprocess.run([sys.executable, "-c", "from timem.embed.fake import HashingEmbedder as H; "
                            "print(H().embed(['Caroline went to the support group'])[0].tobytes().hex())"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert other == v[0].tobytes().hex()  # the same bytes in another process (no salted hash)


def test_a_dimension_below_two_is_refused():
    with pytest.raises(EmbeddingError, match="dim >= 2"):
        HashingEmbedder(1)
