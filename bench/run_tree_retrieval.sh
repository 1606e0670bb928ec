#!/usr/bin/env bash
# Tree-aware recall (issue 10) on the two LoCoMo dev conversations, retrieval only, no LLM anywhere
# (verbatim turn leaves, extractive L2-L5): the default, each ablation and the flat baselines at 500 and
# 1,000 tokens, then the summaries published under bench/results/locomo-dev-recall-tree/b500 and b1000.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
DATA=${DATA:-tests/data/locomo-dev.json}
BENCH="$PY -m timem.bench.cli"
for b in 500 1000; do
  $BENCH suite locomo "$DATA" --suite tree --retrieval-only --llm none --set token_budget=$b --out-root bench/runs/b$b
done
for b in 500 1000; do
  $BENCH publish bench/runs/b$b/locomo-*-retrieval --to bench/results/locomo-dev-recall-tree/b$b \
    --title "LoCoMo dev (conv-26, conv-30), tree-aware recall, retrieval only, $b-token budget" \
    --metrics full_coverage,evidence_recall,answer_in_context,date_in_context
done
