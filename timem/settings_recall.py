"""The ``[recall]`` section of :class:`timem.config.Config`: how memories are found and laid out.

One of the sections listed in :data:`timem.settings.SECTIONS` (the others are in :mod:`timem.settings`; this one,
the largest, has a module of its own). Its doc comments (``#:``) are the "meaning" column of
docs/configuration.md (:mod:`timem.settings_doc`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from timem.settings_defaults import DEFAULT_QUOTAS

__all__ = ["RecallSettings"]


class RecallSettings(BaseModel):
    """How memories are found and laid out: planner, leaf selection, propagation, gate, budget.

    Recorded whole in every recall trace (:meth:`timem.config.Config.trace_settings`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")  # as every section of :mod:`timem.settings`

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
