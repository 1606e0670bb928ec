"""`timem model` always joined (and hashed) the embedded LLM's GGUF, also for a user who only wants the embedder
(an OpenAI-compatible endpoint as the LLM). `--what embedder|llm|all` picks. Nothing is downloaded: the embedder is
exported from its installed package into the test's own cache folder, and the LLM is a file of the test's own
(TIMEM_LOCAL_MODEL_PATH, which is checked to exist, not hashed), so no 1 GB GGUF is joined."""

from __future__ import annotations

from test_cli import cli_env, run  # noqa: F401  (fixtures)


def test_what_embedder_prepares_minilm_and_never_touches_the_llm(cli_env, monkeypatch, embedder):  # noqa: F811
    # the LLM would fail here (no such file): --what embedder must not look at it
    monkeypatch.setenv("TIMEM_LOCAL_MODEL_PATH", str(cli_env / "missing.gguf"))
    # this process already holds an ONNX session loaded from another folder (as after other tests, or in a program
    # that embeds before preparing): the command still writes the file it prints (CI found it printing a path that
    # was not there)
    embedder.embed(["a session loaded from the shared cache folder"])
    code, out = run("model", "--what", "embedder")
    assert code == 0, out
    (onnx,) = (cli_env / "cache" / "embedder").glob("*.onnx")
    assert f"MiniLM (ONNX): {onnx}" in out and "gguf" not in out, out
    assert not (cli_env / "cache" / "models").exists()
    code, out = run("model")  # all, the default: the LLM too, so the missing file is an error
    assert code == 1 and "TIMEM_LOCAL_MODEL_PATH" in out, out


def test_what_llm_prepares_the_gguf_only(cli_env, monkeypatch):  # noqa: F811
    gguf = cli_env / "mine.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setenv("TIMEM_LOCAL_MODEL_PATH", str(gguf))
    code, out = run("model", "--what", "llm")
    assert code == 0 and f"{gguf} (your file, not hashed)" in out and "MiniLM" not in out, out
    assert not (cli_env / "cache" / "embedder").exists()


def test_what_takes_only_its_choices(cli_env):  # noqa: F811
    code, out = run("model", "--what", "gguf")
    assert code == 2 and "embedder" in out, out


def test_the_torch_embedder_has_nothing_to_prepare(cli_env, monkeypatch):  # noqa: F811
    monkeypatch.setenv("TIMEM_EMBED_BACKEND", "torch")
    code, out = run("model", "--what", "embedder")
    assert code == 0 and "nothing to prepare" in out, out
    assert not (cli_env / "cache").exists() or not any((cli_env / "cache").iterdir())
