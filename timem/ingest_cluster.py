"""Bulk ingest on a Ray cluster (``timem ingest FILE --ray ADDRESS``): one task per user (a LoCoMo
conversation, a LongMemEval instance, a JSONL user).

The driver reads and checks the whole file first (a malformed value anywhere: nothing is written, as for
a local ingest) and refuses users the target database already holds. Each task opens a fresh DuckDB file
in a temporary folder of its worker, ingests its one user there exactly as a local ingest does (L1, L2–L5
in the configured mode with the configured LLM, memory items, segment tree; its own LLM cache) and
returns the file's bytes. The driver copies every task's rows into the target database in one
transaction per task (:func:`timem.store.merge.merge_file`) and rebuilds the BM25 index once. Memories
do not depend on other users, so the result holds what a local ingest writes (recall traces and LLM
call times aside).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from timem.cluster import connect
from timem.config import Config
from timem.datasets import load_dataset
from timem.engine import IngestReport, MemoryEngine
from timem.errors import InputError
from timem.progress import terminal_progress


def ingest_task(file: str, fmt: str, user_id: str, config: Config, sample_ids: list[str] | None,
                limit: int | None, upper_levels: bool, with_llm: bool) -> dict[str, Any]:
    """One task: ingest ``user_id`` of ``file`` into a new DuckDB file; returns its bytes and the report counts.

    Raises: what :meth:`MemoryEngine.ingest` raises (e.g. ``ConsolidationIncomplete``), from the worker.
    """
    work = Path(tempfile.mkdtemp(prefix="timem-ray-ingest-"))
    try:
        cfg = config.with_overrides(db_path=work / "task.duckdb")
        users = load_dataset(file, fmt, sample_ids=sample_ids, limit=limit, tz=cfg.time.tz,  # type: ignore[arg-type]
                             user_tz=cfg.time.user_tz)
        engine = MemoryEngine.open(cfg, with_llm=with_llm)
        try:
            report = engine.ingest([u for u in users if u.user_id == user_id], upper_levels=upper_levels)
            engine.store.checkpoint()
        finally:
            engine.close()
        return {"db": (work / "task.duckdb").read_bytes(), "turns_added": report.turns_added,
                "nodes_added": dict(report.nodes_added)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def ingest_on_ray(engine: MemoryEngine, file: Path, fmt: str, address: str, *, sample_ids: list[str] | None = None,
                  limit: int | None = None, upper_levels: bool = True, progress: bool = True) -> IngestReport:
    """Ingest ``file`` into ``engine``'s database with one Ray task per user (see the module doc).

    Raises:
        InputError: malformed input, or a user the database already holds (nothing is written).
        ClusterError: Ray is missing or unreachable.
        StoreError: a task's file cannot be merged (the tasks merged before it stay).
        TimemError: whatever a task raised (the first failing task's error, re-raised by ``ray.get``).
    """
    cfg = engine.config
    users = load_dataset(file, fmt, sample_ids=sample_ids, limit=limit, tz=cfg.time.tz,  # type: ignore[arg-type]
                         user_tz=cfg.time.user_tz, max_turn_chars=cfg.store.max_turn_chars)
    known = sorted({u.user_id for u in users} & set(engine.users()))
    if known:
        raise InputError(f"the database already holds user(s) {known[:5]}; --ray ingests new users only (each "
                         "task builds its own file); ingest the new turns of existing users without --ray",
                         field="user_id")
    started = connect(address)  # first: without Ray it raises ClusterError naming pip install 'timem[cluster]'
    import ray

    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(ingest_task)
        refs = [remote.remote(str(file), fmt, u.user_id, cfg, sample_ids, limit, upper_levels, engine.has_llm)
                for u in users]
        report = IngestReport()
        work = Path(tempfile.mkdtemp(prefix="timem-ray-merge-"))
        try:
            pairs = list(zip(users, refs, strict=True))
            for u, ref in terminal_progress(pairs, "ingest on ray", len(pairs)) if progress else pairs:
                out = ray.get(ref)  # merged in file order
                part = work / f"{len(report.users)}.duckdb"
                part.write_bytes(out["db"])
                engine.store.merge_file(part)
                part.unlink()
                report.users.append(u.user_id)
                report.turns_added += out["turns_added"]
                for level, n in out["nodes_added"].items():
                    report.nodes_added[level] = report.nodes_added.get(level, 0) + n
        finally:
            shutil.rmtree(work, ignore_errors=True)
    finally:
        if started:
            ray.shutdown()
    engine.store.refresh_fts(force=True)
    return report
