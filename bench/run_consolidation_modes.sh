#!/usr/bin/env bash
# Consolidation modes on the embedded models (issue 11): one ingest per (model, mode) into a fresh
# DuckDB file, conversation by conversation (one heavy job at a time), then fact density and recall
# at 500 / 1,000 tokens on the tree each mode built. Memory items use the rule extractor so that
# the rows time consolidation alone (LLM item extraction is measured in its own row).
# Usage: bash bench/run_consolidation_modes.sh OUT_DIR "1.5b:hybrid 1.5b:abstractive 0.5b:hybrid ..."
# CONVS="conv-30" runs only those conversations (the file names then carry the conversation ids).
set -euo pipefail
OUT=${1:?out dir}; RUNS=${2:-"1.5b:hybrid 1.5b:abstractive 0.5b:hybrid 0.5b:abstractive"}
DATA=${DATA:-tests/data/locomo-dev.json}
PY=${PY:-.venv/bin/python}
CONVS=${CONVS:-"conv-26 conv-30"}; TAG=""; [ "$CONVS" = "conv-26 conv-30" ] || TAG="-${CONVS// /-}"
SAMPLES="--sample ${CONVS// /,}"
mkdir -p "$OUT"
for run in $RUNS; do
  model=${run%%:*}; mode=${run##*:}; db="$OUT/$model-$mode$TAG.duckdb"; rm -f "$db" "$db.wal"
  for conv in $CONVS; do
    $PY bench/ingest_bench.py "$DATA" --sample $conv --llm local --local-model qwen2.5-coder-$model --mode $mode \
      --set memory_extractor=rules --db "$db" --note "issue 11 mode table: $model $mode" | tee -a "$OUT/$model-$mode$TAG.txt"
  done
  $PY bench/consolidation_density.py --db "$db" --data "$DATA" --json > "$OUT/$model-$mode$TAG.density.json"
  for budget in 500 1000; do
    for recipe in timem-index timem-context; do
      $PY -m timem.bench.cli locomo "$DATA" --recipe $recipe $SAMPLES --retrieval-only --llm none --db "$db" \
        --set token_budget=$budget --set consolidation_mode=$mode --out "$OUT/recall-$model-$mode$TAG-$recipe-$budget" \
        > "$OUT/recall-$model-$mode$TAG-$recipe-$budget.log" 2>&1
    done
  done
done
echo ALL DONE
