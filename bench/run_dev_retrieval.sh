#!/usr/bin/env bash
# Retrieval-only results on the two LoCoMo dev conversations (conv-26, conv-30): every ablation and
# baseline, then their summaries published under bench/results/. No LLM is called at recall time.
#
#   bench/run_dev_retrieval.sh                    # the recipes that need no LLM at all (verbatim L1)
#   TREE_DB=/path/tree.duckdb bench/run_dev_retrieval.sh   # also the hierarchical ones, on a database
#                                                  # already ingested with an LLM (L2-L5 present)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
DATA=${DATA:-tests/data/locomo-dev.json}
BENCH="$PY -m timem.bench.cli"

$BENCH suite locomo "$DATA" --suite no-llm --retrieval-only --out-root bench/runs
runs=(bench/runs/locomo-{l1-flat,l1-hier,lambda-{0.5,0.6,0.7,0.8,0.9,1.0}-l1,gran-{1,2,4,8}-l1,bm25-turns,dense-turns,hybrid-turns,full-context}-retrieval)

if [[ -n "${TREE_DB:-}" ]]; then
  # work on a copy (runs write recall traces); --llm none: fail rather than consolidate missing levels
  mkdir -p bench/runs && cp "$TREE_DB" bench/runs/tree-copy.duckdb
  $BENCH suite locomo "$DATA" --suite hierarchical --retrieval-only --llm none --db bench/runs/tree-copy.duckdb \
    --out-root bench/runs
  runs+=(bench/runs/locomo-{timem,planner-centroid,fixed-simple,fixed-hybrid,fixed-complex,gate-score,gate-off,l2l5-hier,l1l5-flat,l1l5-hier,lambda-{0.5,0.6,0.7,0.8,0.9,1.0}}-retrieval)
fi

$BENCH publish "${runs[@]}" --to bench/results/locomo-dev-retrieval \
  --title "LoCoMo dev (conv-26, conv-30), retrieval only" \
  --metrics evidence_recall,full_coverage,tree_evidence_recall,answer_in_context
