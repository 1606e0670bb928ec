"""The DuckDB extensions TiMem loads (fts, vss), from their PyPI packages: never ``INSTALL`` from the network."""

from __future__ import annotations

from pathlib import Path

import duckdb

from timem.errors import StoreError


def extension_path(name: str) -> Path:
    """Path of the ``.duckdb_extension`` file shipped by the ``duckdb-extension-<name>`` package.

    Raises:
        StoreError: the package is missing or does not match the installed duckdb version.
    """
    import importlib

    try:
        mod = importlib.import_module(f"duckdb_extension_{name}")
    except ImportError as exc:
        raise StoreError(f"DuckDB extension package duckdb-extension-{name} is not installed; "
                         f"pip install duckdb-extension-{name}=={duckdb.__version__}") from exc
    if mod.__file__ is None:
        raise StoreError(f"DuckDB extension package duckdb-extension-{name} has no files (a namespace package?); "
                         f"reinstall it: pip install --force-reinstall duckdb-extension-{name}=={duckdb.__version__}")
    path = Path(mod.__file__).parent / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if not path.exists():
        raise StoreError(f"{path} not found: duckdb-extension-{name} must have the same version as duckdb "
                         f"({duckdb.__version__}); pip install duckdb-extension-{name}=={duckdb.__version__}")
    return path
