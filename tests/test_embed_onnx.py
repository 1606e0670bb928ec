"""MiniLM through ONNX Runtime (the default backend): the vectors of sentence-transformers' ``encode`` within float
noise, one export per cache folder, and clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import locomo_dev_texts

from timem.embed import minilm_onnx
from timem.embed.minilm import MiniLMEmbedder
from timem.errors import EmbeddingError


@pytest.fixture(scope="module")
def torch_embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder(backend="torch")


@pytest.mark.parametrize("n", [1, 2, 64, 150])
def test_onnx_vectors_match_encode_within_float_noise(tmp_path, torch_embedder, n):
    texts = locomo_dev_texts()
    rng = np.random.default_rng(n)
    extra = ["  Hello there!  ", "学习了大学的课程", "x " * 400, ""]
    batch = (extra + [texts[i] for i in rng.choice(len(texts), n, replace=False)])[:n]
    got = MiniLMEmbedder(backend="onnx", cache_dir=tmp_path).embed(batch)
    ref = torch_embedder._model.encode(batch, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                       show_progress_bar=False)
    assert got.dtype == np.float32 and got.shape == (n, 384)
    assert np.abs(got - ref).max() < 1e-6
    assert (got * ref).sum(axis=1).min() > 0.999999
    # a different text is a different vector (the comparison above is not vacuous)
    assert n < 2 or np.abs(got[0] - got[1]).max() > 1e-2


def test_the_export_goes_to_the_cache_folder_once(tmp_path, monkeypatch):
    monkeypatch.setattr(minilm_onnx, "_LOADED", {})  # as in a new process
    MiniLMEmbedder(backend="onnx", cache_dir=tmp_path / "a").embed(["one sentence"])
    path = minilm_onnx.onnx_path(tmp_path / "a")
    assert path.exists() and path.stat().st_size > 50_000_000
    assert not list(path.parent.glob("*.part"))
    # another folder in the same process reuses the session: nothing is written there
    MiniLMEmbedder(backend="onnx", cache_dir=tmp_path / "b").embed(["another"])
    assert not (tmp_path / "b").exists()


def test_a_failed_export_leaves_no_file_and_says_what_to_do(tmp_path, monkeypatch):
    import torch

    def broken(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(torch.onnx, "export", broken)
    target = tmp_path / "embedder" / "m.onnx"
    with pytest.raises(EmbeddingError, match="embed_backend = \"torch\""):
        minilm_onnx.export(target, MiniLMEmbedder(backend="torch")._model)
    assert not target.exists() and not list(target.parent.glob("*"))


def test_a_cache_folder_that_cannot_be_written_says_what_to_do(tmp_path, monkeypatch):
    """A cache folder that cannot be created (a read-only home, a path through a file) was a bare OSError, a
    traceback from the CLI (new-user trial: ``TIMEM_CACHE_DIR=/etc/hostname/x timem ask …``: NotADirectoryError)."""
    monkeypatch.setattr(minilm_onnx, "_LOADED", {})  # as in a new process
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(EmbeddingError, match="TIMEM_CACHE_DIR") as err:
        MiniLMEmbedder(backend="onnx", cache_dir=blocker / "cache").embed(["one sentence"])
    assert "embed_backend" in str(err.value)


def test_unknown_backend_and_onnx_on_a_gpu_are_refused():
    with pytest.raises(EmbeddingError, match="unknown embedder backend"):
        MiniLMEmbedder(backend="tensorflow")  # type: ignore[arg-type]
    with pytest.raises(EmbeddingError, match="CPU only"):
        MiniLMEmbedder(backend="onnx", device="cuda")


def test_the_default_is_onnx_in_config_and_embedder():
    from timem.config import Config

    assert Config().embedding.embed_backend == "onnx"
    assert MiniLMEmbedder().backend == "onnx"


def test_the_session_threads_sleep_after_a_call(tmp_path):
    """Spinning threads after each call took a core from the recall's next stages (+7-15 ms in the leaf search at
    100k L1 nodes); the session is made with spinning off."""
    emb = MiniLMEmbedder(backend="onnx", cache_dir=tmp_path)
    emb.embed(["warm"])
    session = minilm_onnx.load(tmp_path, emb._model).session
    assert session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_two_threads_loading_at_once_load_the_model_once(monkeypatch):
    """The studio's warm-up thread and a first chat message could both load MiniLM (a new-user trial): one waits."""
    import threading
    import time

    import sentence_transformers

    from timem.embed import minilm

    made: list[str] = []

    class Slow:
        def __init__(self, *args, **kwargs):
            time.sleep(0.3)
            made.append("one")

        def eval(self):
            return self

    minilm._load_once.cache_clear()
    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", Slow)
    try:
        threads = [threading.Thread(target=minilm._load, args=("cpu",)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert made == ["one"]
    finally:
        minilm._load_once.cache_clear()  # the next test loads the real model again
