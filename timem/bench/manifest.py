"""The run manifest: everything needed to reproduce a benchmark run, and nothing that changes on a re-run.

``manifest.json`` holds the git commit (and whether tracked files differ from it), the recipe, the
resolved config (secrets masked), model ids (embedder, answering LLM, judge, the models that wrote
the memory nodes), every prompt version, the data file's SHA-256 and the package versions. Wall
times live in ``timing.jsonl`` / ``latency.csv`` instead, so that a re-run from the LLM cache
writes a byte-identical manifest.
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from timem.config import Config

HARNESS_VERSION = "bench-v1"
_PACKAGES = ("timem", "duckdb", "sentence-transformers", "torch", "rouge-score", "nltk", "rank-bm25", "tiktoken",
             "llama-cpp-python", "openai")


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def git_info() -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of the repository holding this package."""
    repo = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "timem"], cwd=repo,
                                capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": bool(status.strip())}


def prompt_versions() -> dict[str, str]:
    from timem.prompts import answer, day, gate, judge, planner, profile, segment, session, week

    return {m.__name__.rsplit(".", 1)[-1]: m.PROMPT_VERSION
            for m in (segment, session, day, week, profile, planner, gate, answer, judge)}


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def config_record(config: Config) -> dict[str, Any]:
    """The resolved config as JSON-ready data, one table per section (as in a TOML file), the API key masked."""
    data = config.model_dump(mode="json")
    if data["llm"].get("openai_api_key"):
        data["llm"]["openai_api_key"] = "***"
    return data


def build_manifest(**fields: Any) -> dict[str, Any]:
    """The manifest dict: harness version, git, python, packages, prompts, then ``fields`` in order."""
    return {"harness_version": HARNESS_VERSION, "git": git_info(), "python": platform.python_version(),
            "packages": package_versions(), "prompt_versions": prompt_versions(), **fields}
