"""The embedder boundary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors.

    ``embed(texts)`` returns an array of shape ``(len(texts), dim)``; ``model_id`` and ``dim`` are
    recorded in the store, which refuses vectors from another embedder.
    """

    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...
