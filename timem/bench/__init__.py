"""Benchmark harness: LoCoMo and LongMemEval runs with the paper's metrics, ablation recipes and baselines.

Entry points: :func:`timem.bench.runner.run_benchmark` (one recipe, one run folder) and the
``timem bench`` command group in :mod:`timem.bench.cli`. Recipes: :mod:`timem.bench.recipes`;
metrics: :mod:`timem.bench.metrics`; judge: :mod:`timem.bench.judge` with prompts in
:mod:`timem.prompts.judge`; provenance: :mod:`timem.bench.manifest`; tables and plots:
:mod:`timem.bench.report`.
"""
