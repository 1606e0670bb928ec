"""Benchmark runs spread over a Ray cluster: one task per LoCoMo conversation or LongMemEval instance.

Each task runs :func:`timem.bench.runner.run_benchmark` on its one conversation with its own cache
folder, hence its own DuckDB file (ingest, LLM cache, recall traces) in a temporary folder of the
worker, and returns its question rows, timings and manifest by value (no shared file system needed).
The driver merges them in the order a local run visits the questions (conversations in file order,
questions in order) and writes the run folder with the runner's own writer, so ``questions.jsonl`` holds
the bytes a local run writes for the same LLM answers: recall of one conversation does not depend on
the others in its database (BM25 statistics are per user, :mod:`timem.store.search`).

Addresses (``--ray``): see :mod:`timem.cluster`. Workers must be able to import ``timem`` and read the data
file at the same path; the MiniLM embedder and, for end-to-end runs, the configured LLM are built on the worker.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from timem.bench.manifest import config_record
from timem.bench.runner import BenchError, RunResult, RunSpec, _write, resolve_config, select_questions
from timem.cluster import connect
from timem.config import Config
from timem.datasets import load_dataset


def run_conversation(spec: RunSpec, base_config: Config) -> dict[str, Any]:
    """One task: ``spec`` (one conversation) run with its own cache folder (DuckDB file) in a temporary folder.

    Returns ``{"rows": [...], "timings": [...], "manifest": {...}}`` (the rows of ``questions.jsonl``, of
    ``timing.jsonl`` and the manifest). Raises what :func:`run_benchmark` raises.
    """
    from timem.bench.runner import run_benchmark

    work = Path(tempfile.mkdtemp(prefix="timem-ray-task-"))
    try:
        res = run_benchmark(replace(spec, out_dir=work / "run"), base_config.with_overrides(cache_dir=work / "cache"),
                            progress=False)
        timings = [json.loads(line) for line in (res.out_dir / "timing.jsonl").read_text(encoding="utf-8").splitlines()]
        return {"rows": res.rows, "timings": timings, "manifest": res.manifest}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_on_ray(spec: RunSpec, base_config: Config, address: str, *, progress: bool = True) -> RunResult:
    """Run ``spec`` as one Ray task per LoCoMo conversation or LongMemEval instance (each a user) and write
    the merged run folder.

    Args:
        spec: as for :func:`run_benchmark`; ``spec.db`` must be None (each task builds its own database).
        base_config: as for :func:`run_benchmark`; each task gets its own ``cache_dir``.
        address: ``local``, ``auto`` or a cluster address (see the module docstring).

    Raises:
        BenchError: not LoCoMo or LongMemEval, ``--db`` given, or no question selected.
        ClusterError: Ray is missing or unreachable.
        TimemError: whatever a task raised (the first failing task's error, re-raised by ``ray.get``).
    """
    if spec.dataset not in ("locomo", "longmemeval"):
        raise BenchError(f"--ray runs LoCoMo conversations or LongMemEval instances as tasks, not {spec.dataset}")
    if spec.db is not None:
        raise BenchError("--ray builds one database per conversation (one per task); leave --db out")
    cfg, _ = resolve_config(base_config, spec.recipe, spec.retrieval_only)
    lme = spec.dataset == "longmemeval"
    users = load_dataset(spec.data_file, spec.dataset, sample_ids=spec.samples, limit=spec.limit if lme else None,
                         tz=cfg.time.tz)
    items = select_questions(users, spec)
    if not items:
        raise BenchError("no questions selected; check --sample / --limit / --include-adversarial")
    per_user = Counter(u.user_id for u, _ in items)  # max_questions cuts the global order: a prefix per user
    order = list(per_user)
    tasks = [replace(spec, samples=[uid], limit=None, max_questions=per_user[uid] if spec.max_questions else None,
                     notes=[]) for uid in order]

    started = connect(address)  # first: without Ray it raises ClusterError naming pip install 'timem[cluster]'
    import ray

    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(run_conversation)
        refs = [remote.remote(t, base_config) for t in tasks]
        pending = list(refs)
        with tqdm(total=len(refs), desc=f"{spec.recipe.name} on ray", unit="task", file=sys.stderr,
                  disable=not progress) as bar:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                bar.update(len(done))
        results = ray.get(refs)
    finally:
        if started:
            ray.shutdown()
    return merge(spec, cfg, results, address)


def merge(spec: RunSpec, cfg: Config, results: list[dict[str, Any]], address: str) -> RunResult:
    """Write the run folder from the tasks' ``results`` (in question order) like a local run: the rows as
    ``questions.jsonl`` (one ``json.dumps(row, ensure_ascii=False)`` line each, as the runner writes them),
    then summary, manifest, plots and timing files with the runner's writer."""
    rows = [r for res in results for r in res["rows"]]
    timings = [t for res in results for t in res["timings"]]
    manifest = dict(results[0]["manifest"])
    manifest.update(
        selection={**manifest["selection"], "samples": spec.samples, "limit": spec.limit,
                   "max_questions": spec.max_questions},
        n_questions=len(rows), config=config_record(cfg),
        db=f"one DuckDB file per task (conversation or instance), in its temporary folder ({len(results)} tasks)",
        models={**manifest["models"], "memory_nodes": sorted({m for res in results
                                                               for m in res["manifest"]["models"]["memory_nodes"]})},
        notes=[*spec.notes, *manifest["notes"],
               f"ran on Ray ({address}): one task per conversation or instance, each with its own DuckDB file and "
               "LLM cache"])
    spec.out_dir.mkdir(parents=True, exist_ok=True)
    with (spec.out_dir / "questions.jsonl").open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    table = _write(spec, rows, timings, manifest)
    return RunResult(spec.out_dir, table, manifest, rows)
