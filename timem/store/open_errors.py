"""Why a DuckDB file cannot be opened or worked on, in one line that says what to do: :func:`open_error` (another
process holds it, not a DuckDB file, a folder, no permission, another DuckDB version), :func:`is_duckdb_file` (checked
before DuckDB opens a path) and :func:`out_of_memory_error` (the buffer pool limit). Used by
:class:`timem.store.duckdb_store.Store` (which re-exports them), the CLI and the memory service.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from timem.errors import StoreError

__all__ = ["OUT_OF_MEMORY_ADVICE", "is_duckdb_file", "open_error", "out_of_memory_error"]

_PID = re.compile(r"\(PID (\d+)\)")


def is_duckdb_file(path: str) -> bool:
    """Whether ``path`` can be a DuckDB database: ``":memory:"``, a path with no file yet, an empty file, or a file
    with DuckDB's ``DUCK`` magic at bytes 8–11 of its header (a folder counts as ``True``: DuckDB's own error
    says what it is)."""
    p = Path(path)
    if path == ":memory:" or not p.is_file():
        return True
    try:
        with p.open("rb") as f:
            head = f.read(12)
    except OSError:
        return True  # permission and the like: DuckDB's own error is clearer (open_error)
    return len(head) == 0 or head[8:12] == b"DUCK"


#: what to do when DuckDB runs out of its buffer pool (``duckdb.OutOfMemoryException``), for the CLI and the service
OUT_OF_MEMORY_ADVICE = ("DuckDB ran out of memory: its buffer pool limit (setting duckdb_memory_mb, env "
                        "TIMEM_DUCKDB_MEMORY_MB) is too small for this file or operation; raise it, or unset it for "
                        "DuckDB's default (80 % of the RAM)")


def out_of_memory_error(exc: BaseException) -> StoreError:
    """The :class:`StoreError` for DuckDB's out-of-memory error ``exc``: :data:`OUT_OF_MEMORY_ADVICE` and DuckDB's
    first line (what it could not allocate)."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreError(f"{OUT_OF_MEMORY_ADVICE} ({first})")


def open_error(path: str, exc: BaseException) -> str:
    """One line saying why DuckDB could not open ``path`` and what to do (issue 27 #10: every failure used to
    advise closing other TiMem processes, right only for a lock). Cases: another process holds the file's lock
    (its PID); not a DuckDB file; a folder; no permission or a read-only place; written by a newer DuckDB;
    anything else (DuckDB's first sentence)."""
    msg = " ".join(str(exc).split())
    msg = re.sub(r"^(IO|IOException|Invalid Input|Serialization|Catalog) Error: ", "", msg)
    msg = re.sub(r"\s*See also https?://\S+", "", msg).strip()
    if "Conflicting lock" in msg or "Could not set lock" in msg:
        pid = _PID.search(msg)
        who = f"another process (PID {pid.group(1)})" if pid else "another process"
        return (f"{path} is open in {who}: close the timem command, studio or service using it, then retry, or "
                "use another database file.")
    if isinstance(exc, duckdb.OutOfMemoryException) or msg.startswith("Out of Memory Error"):
        return f"cannot open {path}: {out_of_memory_error(exc)}"
    if "not a valid DuckDB database file" in msg:
        return (f"{path} exists but is not a DuckDB file: give the path of a TiMem .duckdb file, or a new file "
                "name to create one.")
    if "Is a directory" in msg or Path(path).is_dir():
        return f"{path} is a folder, not a DuckDB file: give a file path such as {Path(path) / 'timem.duckdb'}."
    if "Permission denied" in msg or "Read-only file system" in msg:
        return (f"cannot open {path}: permission denied; give a path in a folder you can write to, or fix the "
                "file's permissions.")
    if "version" in msg.lower() and ("newer" in msg.lower() or "storage" in msg.lower()):
        return (f"{path} was written by another DuckDB version ({msg}); open it with the TiMem install that wrote "
                "it, or export and re-import it.")
    return f"cannot open DuckDB file {path}: {msg.rstrip('.!')}; give another database file (a new name creates one)."
