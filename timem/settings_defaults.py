"""The defaults of :mod:`timem.settings` that need more than a literal: those chosen per LLM backend (the consolidation
mode, the recall gate), the default tables (extractive caps, level quotas, and the TiMem paper's quotas for its
recipe) and the bounds and retention of the store, each with the measurement it was chosen from. The setting
models (:mod:`timem.settings`) use them and re-export them.
"""

from __future__ import annotations

from pathlib import Path

from timem.models import ConsolidationMode


def default_cache_dir() -> Path:
    """``~/.cache/timem``: the default of ``store.cache_dir`` (models, MiniLM's ONNX export, bench databases), and of
    :class:`timem.embed.minilm.MiniLMEmbedder` made without a config."""
    return Path.home() / ".cache" / "timem"


#: The consolidation mode of L2-L5 when none is set, per LLM backend (chosen from
#: bench/results/consolidation.md and recall-tree.md): the embedded model and no LLM get
#: "extractive" (seconds per conversation, grounded by construction; abstractive took 16 min per
#: LoCoMo conversation with the 1.5B model and its summaries cost evidence when they share the
#: budget); an OpenAI-compatible endpoint gets "abstractive".
#: With ``llm_backend = "none"``, levels whose mode needs an LLM (hybrid, abstractive) are not
#: consolidated: only extractive works without one.
DEFAULT_CONSOLIDATION_MODES: dict[str, ConsolidationMode] = {"local": "extractive", "none": "extractive",
                                                             "openai": "abstractive"}
DEFAULT_CONSOLIDATION_MODE: ConsolidationMode = "extractive"
#: The recall gate when none is set, per LLM backend: the embedded 1.5B model's LLM gate took 73 s
#: of a 96 s chat turn (2,313 prompt tokens on 2 cores), so it gets the score gate (fused score and
#: an absolute relevance floor, no LLM call); an OpenAI-compatible endpoint keeps the LLM gate.
DEFAULT_GATES: dict[str, str] = {"local": "score", "none": "score", "openai": "llm"}
#: Token caps (cl100k) of extractive / hybrid memories per level (L2 session .. L5 profile).
DEFAULT_EXTRACTIVE_CAPS: dict[int, int] = {2: 120, 3: 160, 4: 200, 5: 240}

#: Per-complexity level quotas (level -> max nodes) of the TiMem reference implementation: the
#: ``timem-paper`` benchmark recipe uses them.
PAPER_QUOTAS: dict[str, dict[int, int]] = {
    "simple": {1: 20, 2: 4, 5: 1},
    "hybrid": {1: 20, 2: 4, 3: 2, 5: 1},
    "complex": {1: 20, 2: 4, 3: 2, 4: 2, 5: 1},
}
#: Default quotas: L1 leaves only in the context; the upper levels still shape which leaves are chosen
#: (relevance propagation). Measured on LoCoMo dev (bench/results/recall-tree.md): L2-L5 in the
#: context take the budget from evidence (full coverage 73.6 -> 55.8 % at 1,000 tokens).
DEFAULT_QUOTAS: dict[str, dict[int, int]] = {c: {1: 60} for c in ("simple", "hybrid", "complex")}

#: default retention of recall traces: a chat user's last 500 recalls, none older than 30 days
#: (~7 KB stored each on LoCoMo: ~3.5 MB per user, ~5 MB of file; bench/results/trace-size.md)
TRACE_KEEP_PER_USER = 500
TRACE_MAX_AGE_DAYS = 30.0
#: the largest ``duckdb_memory_mb`` taken: 16 TiB (larger values, "inf" or "1e30", are typing slips: DuckDB refuses
#: some and takes others as a limit no machine has)
DUCKDB_MEMORY_MAX_MB = 2**24
