"""A deterministic embedder for logic tests: hashed bag of words, no model to load.

It satisfies :class:`timem.embed.protocol.Embedder` so that tests of storage, editing, consolidation
bookkeeping, the service and the CLI run without MiniLM (loading it costs seconds and a few hundred MB
per process). Similar wording gives similar vectors (shared words share buckets), so lexical ranking
tests behave sensibly; it has no notion of meaning, so tests of semantic recall keep the real model.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from timem.errors import EmbeddingError

#: words: runs of letters or digits (any script; a CJK clause is one word, which is enough for logic tests)
_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Feature hashing of lower-cased words into ``dim`` signed buckets, plus one constant bucket, L2-normalised.

    ``embed(texts) -> (n, dim) float32``, unit length, identical for identical text in every process
    (BLAKE2b of each word, not Python's salted ``hash``). The constant bucket keeps a text without words
    ("???", "") a valid unit vector rather than a zero one. ``model_id`` names the scheme and the
    dimension, so a store built with it refuses MiniLM vectors and vice versa.

    Raises:
        EmbeddingError: ``dim`` < 2 (at construction).
    """

    def __init__(self, dim: int = 64) -> None:
        if dim < 2:
            raise EmbeddingError(f"HashingEmbedder needs dim >= 2, got {dim}")
        self.dim = dim
        self.model_id = f"test-hashing-bow-{dim}"

    def _bucket(self, word: str) -> tuple[int, float]:
        h = int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")
        return 1 + h % (self.dim - 1), (1.0 if (h >> 63) & 1 else -1.0)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i, 0] = 0.5  # the constant bucket
            for word in _WORD.findall(text.lower()):
                k, sign = self._bucket(word)
                out[i, k] += sign
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out
