#!/usr/bin/env bash
# Coverage against token budget on LoCoMo dev, retrieval only, no LLM (issue 23): the default, its L1-only
# ablation and the three flat baselines at 250 / 500 / 1,000 / 2,000 / 4,000 cl100k tokens.
#
#   DB=/tmp/curve.duckdb bench/run_budget_curve.sh      # DB: an ingested dev database to reuse (or a new path)
#   PYTHONPATH=. .venv/bin/python bench/budget_curve.py bench/runs/curve --out bench/results/budget-curve
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
DATA=${DATA:-tests/data/locomo-dev.json}
DB=${DB:-bench/runs/curve/dev.duckdb}
OUT=${OUT:-bench/runs/curve}
RECIPES=${RECIPES:-"timem timem-l1 bm25-turns dense-turns hybrid-turns"}
BUDGETS=${BUDGETS:-"250 500 1000 2000 4000"}
mkdir -p "$OUT"
for b in $BUDGETS; do
  for r in $RECIPES; do
    $PY -m timem.bench.cli locomo "$DATA" --recipe "$r" --retrieval-only --llm none --set "token_budget=$b" \
      --db "$DB" --out "$OUT/b$b/locomo-$r-retrieval"
  done
done
