"""Leaf selection: hybrid semantic + BM25 retrieval of L1 segments (TiMem §3.3).

Candidates are the union of the top ``Config.recall.recall_candidates`` L1 nodes by cosine similarity
and the top ``recall_candidates`` by BM25 (query: the question plus the plan's keywords), both
computed in DuckDB with the user filter inside the SQL (:meth:`MemoryStore.search_vector`,
:meth:`MemoryStore.search_bm25`), so no other user's node can become a candidate.

Each component is max-normalised over the candidates and fused as in the paper:
``s = λ·semantic + (1 − λ)·bm25`` with ``λ = Config.recall.recall_lambda`` (default 0.2; the paper's 0.9 suits
its embedder, with MiniLM on LoCoMo more BM25 weight wins: bench/results/recall-tree.md); a component a
candidate lacks (not in that top list) counts 0. The top ``k = min(recall_top_k, L1 quota)``
are kept. With the TIDER time channel on (``Config.recall.time_channel``, default "decay"), the leaves inside the
question's time windows join the candidates and the fused score gets the channel's overlap bonus and distance
factor (:mod:`timem.recall.time_channel`); pseudo-relevance feedback (``prf_terms``) reruns BM25 with added words.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from pydantic import BaseModel

from timem.models import Level, MemoryNode
from timem.recall import cjk
from timem.recall.contextual import contextual_scores
from timem.recall.duplicates import near_duplicates
from timem.recall.events import event_channel
from timem.recall.fusion import fused_order
from timem.recall.keywords import extract_keywords, name_words, person_names, strip_possessive
from timem.recall.planner import RecallPlan, mask_names
from timem.recall.state import RecallState
from timem.recall.time_channel import TimeLocalisation, localise, mention_days, mentions_in, tider_score
from timem.tokens import counted


class Candidate(BaseModel):
    """One L1 candidate with its component scores (all "higher is better").

    ``semantic`` and ``bm25`` are the max-normalised components in ``[0, 1]``; ``cosine`` and
    ``bm25_raw`` are the raw scores (``None`` when the node was not in that top list);
    ``rank`` is 1-based by fused score; ``kept`` is true for the top k.
    """

    node_id: str
    semantic: float
    bm25: float
    fused: float
    rank: int
    cosine: float | None = None
    bm25_raw: float | None = None
    speaker: float = 0.0  #: the speaker bonus included in ``fused`` (``Config.recall.speaker_boost``)
    time_bonus: float = 0.0  #: TIDER overlap bonus included in ``fused`` (:mod:`timem.recall.time_channel`)
    time_factor: float = 1.0  #: TIDER distance factor that multiplied ``fused``
    local: float | None = None  #: with relevance propagation: the normalised local score s⁽⁰⁾
    propagated: float | None = None  #: with relevance propagation: what the tree added (s̃ − s⁽⁰⁾)
    #: a better-ranked candidate this one repeats (:mod:`timem.recall.duplicates`); never kept
    duplicate_of: str | None = None
    #: its BM25 match comes only from person names of the question (:func:`name_free_query`): the score gate does
    #: not count it as a keyword match, since a speaker's name matches every line that speaker said
    name_only: bool = False
    #: with ``name_only``: the cosine similarity to the question with those names masked
    #: (:func:`timem.recall.planner.mask_names`), which the score gate reads instead of ``cosine``
    masked_cosine: float | None = None
    #: its BM25 match (names aside) comes only from characters of a word of a Chinese question, not from a word of it
    #: (:func:`timem.recall.cjk.part_characters`: 学 of 大学): the score gate does not count it as a keyword match
    parts_only: bool = False
    #: it joined the candidates as a neighbour of a search hit (:mod:`timem.recall.contextual`), no search found it:
    #: the ``"relevant"`` neighbour rule does not count it as a candidate
    context_only: bool = False
    #: the extra query that placed this leaf (:mod:`timem.recall.aspects`: an aspect part or the second hop)
    channel: str | None = None
    kept: bool = False

    def updated(self, update: Mapping[str, Any]) -> Candidate:
        """``self.model_copy(update=update)`` (a shallow copy, ``update`` not validated), without its generic
        machinery: recall copies a candidate each time it re-ranks (~300 times a question)."""
        new = Candidate.__new__(Candidate)
        values = self.__dict__.copy()
        values.update(update)
        object.__setattr__(new, "__dict__", values)
        object.__setattr__(new, "__pydantic_extra__", None)
        object.__setattr__(new, "__pydantic_fields_set__", self.__pydantic_fields_set__ | update.keys())
        object.__setattr__(new, "__pydantic_private__", None)
        return new


def fuse(semantic: Mapping[str, float], bm25: Mapping[str, float], lam: float, top_k: int | None = None
         ) -> list[Candidate]:
    """Fuse raw scores into ranked candidates (pure; the paper's hybrid leaf score).

    Args:
        semantic: node id -> raw cosine similarity (negative values count as 0).
        bm25: node id -> raw BM25 score.
        lam: weight λ of the semantic component, in ``[0, 1]``.
        top_k: mark the first ``top_k`` as kept (``None``: all).

    Returns:
        Every id of either mapping as a :class:`Candidate`, sorted by fused score descending
        (ties: higher semantic, then id), ranks from 1.
    """
    return [Candidate(node_id=i, semantic=round(s, 6), bm25=round(b, 6), fused=round(f, 6),
                      rank=r, cosine=semantic.get(i), bm25_raw=bm25.get(i),
                      kept=top_k is None or r <= top_k)
            for r, (f, s, b, i) in enumerate(fused_order(semantic, bm25, lam), start=1)]


def fused_scores(semantic: Mapping[str, float], bm25: Mapping[str, float], lam: float) -> dict[str, float]:
    """``{c.node_id: c.fused for c in fuse(semantic, bm25, lam)}`` without building the candidates."""
    return {i: round(f, 6) for f, _, _, i in fused_order(semantic, bm25, lam)}


class LeafSelection(NamedTuple):
    candidates: list[Candidate]  #: every candidate, ranked
    kept: list[Candidate]  #: the top k, ranked
    bm25_query: str
    time: TimeLocalisation  #: the TIDER localiser's answer (``detect=False`` when the channel is off)
    notes: list[str]  #: what the time channel and the question-time filter did


def bm25_query(question: str, plan: RecallPlan) -> str:
    """The BM25 query: the question followed by the plan's keywords. A Chinese question
    (:func:`timem.recall.cjk.is_chinese`) is replaced by its content words and their characters
    (:func:`timem.recall.cjk.bm25_terms`): without 我 / 的 / 什么, a BM25 match means a content word matched."""
    if cjk.is_chinese(question):
        return cjk.bm25_terms(question, plan.keywords)
    return " ".join([question, *plan.keywords]).strip()


_EDGES = re.compile(r"^[^\w]+|[^\w]+$")


def name_free_query(keyword_query: str, participants: Sequence[str]) -> str:
    """``keyword_query`` (the BM25 query, space-separated) without the names in ``participants`` (the
    conversation's participants and the speakers of the candidate leaves): a token equal to a
    name or to one of its words (case-insensitive, possessive ``'s`` and punctuation ignored), and, for a Chinese
    name, its single characters (:func:`timem.recall.cjk.bm25_terms` adds 小 and 林 for 小林). Unchanged when
    no token is a name.

    The user's own name (``What is Lin's dog called?``, 小林的狗叫什么名字？) is in the BM25 query, and the speaker
    label of every line that user spoke is indexed, so the name alone matches the whole history: the score gate
    must not take that for relevance.
    """
    parts = name_words(participants)  # as person_names matches a token; its tokenizer is ASCII, not used here
    chars = {c for n in (n.strip().lower() for n in participants) if n and cjk.is_chinese(n) for c in n}
    kept = [t for t in keyword_query.split()
            if (strip_possessive(_EDGES.sub("", t)).lower() or t) not in parts and t not in chars]
    return " ".join(kept)


def select_leaves(state: RecallState, plan: RecallPlan, localisation: TimeLocalisation | None = None
                  ) -> LeafSelection:
    """Top-k L1 leaves of ``state.user_id`` for ``state.query`` (see the module docstring).

    Uses the state's question embedding (computed here if not yet). With ``Config.recall.speaker_boost > 0``,
    a leaf spoken by a participant the question names gets that bonus on its fused score. Leaves that start
    after ``state.question_time`` are never candidates (nothing from after the question reaches the context),
    and the TIDER time channel (``Config.recall.time_channel``) localises the question's windows against it.

    Args:
        plan: the recall plan (keywords for the BM25 query, the L1 quota).
        localisation: the question's time localisation if already made (the LLM localiser,
            :mod:`timem.recall.localiser`); ``None`` = the rule-based localiser.

    Raises:
        EmbeddingError: the embedder fails (nothing is searched then).
    """
    store, config, user_id, question = state.store, state.config, state.user_id, state.query
    participants, question_time = state.participants, state.question_time
    query_vec = state.query_vector()
    n = config.recall.recall_candidates
    vec_hits = dict(store.search_vector(user_id, query_vec, int(Level.SEGMENT), n))
    keyword_query = bm25_query(question, plan)
    lex_hits = dict(store.search_bm25(user_id, keyword_query, int(Level.SEGMENT), n))
    k = min(config.recall.recall_top_k, plan.levels.get(1, config.recall.recall_top_k))
    notes: list[str] = []
    loc = TimeLocalisation(detect=False)
    mentioned: set[str] = set()  # leaves whose text mentions a date in a window (timem.recall.time_channel)
    if config.recall.time_channel != "off":
        loc = localisation if localisation is not None else localise(question, question_time, state.tz)
        if loc.detect:
            spans = [(w.start, w.end) for w in loc.windows]
            timed = [i for i, _, _ in store.segments_in_windows(user_id, spans, n, until=question_time)]
            mentions = store.segments_mentioning(user_id, mention_days(loc.windows, state.tz), question_time)
            by_date = [i for i, text in mentions if mentions_in(text, loc.windows, state.tz)]
            mentioned, seen = set(by_date), set(timed)
            timed += [i for i in by_date[:n] if i not in seen]
            new = [i for i in timed if i not in vec_hits]
            vecs = store.embeddings(new, user_id=user_id) if new else {}
            vec_hits.update({i: float(np.dot(v, query_vec)) for i, v in vecs.items()})
            notes.append(f"time channel: {counted(len(timed), 'leaf', 'leaves')} in the window(s) of "
                         f"{', '.join(repr(p) for p in loc.phrases)}, {len(new)} new"
                         + (f"; {len(by_date)} mention a date in it" if by_date else ""))
    if config.recall.event_pool > 0:  # TIDER's event pool (timem.recall.events): the best events' members join
        members, note = event_channel(state)
        new = [i for i in dict.fromkeys(members) if i not in vec_hits]
        vecs = store.embeddings(new, user_id=user_id) if new else {}
        vec_hits.update({i: float(np.dot(v, query_vec)) for i, v in vecs.items()})
        if note:
            notes.append(f"{note}, {counted(len(new), 'new candidate', 'new candidates')}")
    if config.recall.prf_terms > 0 and (vec_hits or lex_hits):  # pseudo-relevance feedback (RM3-style expansion)
        keyword_query, lex_hits, note = _feedback(state, keyword_query, vec_hits, lex_hits, n)
        notes.append(note)
    nodes = {x.id: x for x in store.nodes(user_id=user_id, ids=list({*vec_hits, *lex_hits}))}
    late = {i for i, x in nodes.items() if state.unseen(x)}
    if late:
        notes.append(f"{counted(len(late), 'candidate', 'candidates')} after the question time dropped")
        vec_hits = {i: v for i, v in vec_hits.items() if i not in late}
        lex_hits = {i: v for i, v in lex_hits.items() if i not in late}
    own: tuple[dict[str, float], dict[str, float], set[str]] | None = None
    if config.recall.context_weight > 0 and (vec_hits or lex_hits):  # contextual matching (timem.recall.contextual)
        lex_own = lex_hits
        vec_hits, lex_hits, cos_own, joined, ctx_note = contextual_scores(state, vec_hits, lex_hits, nodes, query_vec)
        own = (cos_own, lex_own, joined)
        notes.extend([ctx_note] if ctx_note else [])
    candidates = fuse(vec_hits, lex_hits, config.recall.recall_lambda, top_k=k)
    if own is not None:  # blended scores rank; the gate reads each leaf's own raw scores
        candidates = [c.updated({"cosine": own[0].get(c.node_id), "bm25_raw": own[1].get(c.node_id),
                                 "context_only": c.node_id in own[2]}) for c in candidates]
    if loc.detect:
        changes = []
        for c in candidates:
            x = nodes[c.node_id]
            fused, bonus, factor = tider_score(c.fused, x.span_start, x.span_end, loc,
                                               decay=config.recall.time_channel == "decay",
                                               mentioned=c.node_id in mentioned)
            changes.append({"fused": fused, "time_bonus": bonus, "time_factor": factor})
        candidates = rerank(candidates, k, changes)
    named = [p for p in participants if re.search(rf"\b{re.escape(p)}\b", question, re.IGNORECASE)]
    if config.recall.speaker_boost > 0 and named and candidates:
        candidates = rerank(candidates, k, [{"speaker": config.recall.speaker_boost,
                                             "fused": round(c.fused + config.recall.speaker_boost, 6)}
                                            if speaker_of(nodes[c.node_id]) in named else None for c in candidates])
    speakers = {s for s in (speaker_of(nodes[c.node_id]) for c in candidates) if s}
    candidates = _mark_name_only(state, candidates, keyword_query, [*participants, *sorted(speakers)], n)
    candidates = _mark_parts_only(state, plan, candidates, keyword_query, [*participants, *sorted(speakers)], n)
    if config.recall.near_duplicates == "collapse" and candidates:
        dup = near_duplicates([c.node_id for c in candidates], nodes, config.recall.near_duplicate_jaccard)
        if dup:
            notes.append(f"{len(dup)} near-duplicate candidates collapsed")
            candidates = rerank(candidates, k, [{"duplicate_of": dup.get(c.node_id)} for c in candidates])
    return LeafSelection(candidates, [c for c in candidates if c.kept], keyword_query, loc, notes)


def _mark_name_only(state: RecallState, candidates: list[Candidate], keyword_query: str, names: Sequence[str],
                    n: int) -> list[Candidate]:
    """``candidates`` with :attr:`Candidate.name_only` and :attr:`Candidate.masked_cosine` set where the BM25 query
    matched nothing but ``names`` (participants and the candidates' speakers): a second BM25 search without the
    names (:func:`name_free_query`) tells which matched more, and the question with the names masked is embedded
    (or reused from the centroid planner) for their cosines, with their vectors from the user's L1 copy in memory
    that the leaf search read (``MemoryStore.embeddings`` with the user). Unchanged when the query holds no name.

    Raises:
        EmbeddingError: the embedder fails.
    """
    free = name_free_query(keyword_query, names)
    if free == keyword_query or not candidates:
        return candidates
    store, user_id = state.store, state.user_id
    content = {i for i, _ in store.search_bm25(user_id, free, int(Level.SEGMENT), max(10 * n, 1000))} if free else set()
    only = [c.node_id for c in candidates if (c.bm25_raw or 0.0) > 0 and c.node_id not in content]
    if not only:
        return candidates
    text = mask_names(state.query, names)
    vec = state.masked[1] if state.masked is not None and state.masked[0] == text else state.embedder.embed([text])[0]
    vecs = store.embeddings(only, user_id=user_id)  # the L1 copy the leaf search read: no query
    masked = {i: round(float(np.dot(v, vec)), 6) for i, v in vecs.items()}
    return [c.updated({"name_only": True, "masked_cosine": masked.get(c.node_id)})
            if c.node_id in masked else c for c in candidates]


def _mark_parts_only(state: RecallState, plan: RecallPlan, candidates: list[Candidate], keyword_query: str,
                     names: Sequence[str], n: int) -> list[Candidate]:
    """``candidates`` with :attr:`Candidate.parts_only` set where the BM25 query of a Chinese question matched
    nothing but names and characters split from its words (:func:`timem.recall.cjk.part_characters`): a second BM25
    search without both tells. Unchanged for a question that is not Chinese, or without such characters."""
    parts = cjk.part_characters(state.query, plan.keywords)
    if not parts or not candidates:
        return candidates
    strict = " ".join(t for t in name_free_query(keyword_query, names).split() if t not in parts)
    store, user_id = state.store, state.user_id
    hits = store.search_bm25(user_id, strict, int(Level.SEGMENT), max(10 * n, 1000)) if strict else []
    words = {i for i, _ in hits}
    return [c.updated({"parts_only": True})
            if (c.bm25_raw or 0.0) > 0 and not c.name_only and c.node_id not in words else c for c in candidates]


PRF_DOCS = 5  #: leaves read for pseudo-relevance feedback


def _feedback(state: RecallState, keyword_query: str, vec_hits: Mapping[str, float], lex_hits: Mapping[str, float],
              n: int) -> tuple[str, dict[str, float], str]:
    """Pseudo-relevance feedback (Lavrenko & Croft's relevance model, as RM3 keeps the original query): the
    ``Config.recall.prf_terms`` content words most frequent in the :data:`PRF_DOCS` best leaves of the first pass
    (fused score), not in ``keyword_query`` (the BM25 query) and not a person's name, are added to it, and it is run
    again. Returns the expanded BM25 query, its BM25 hits and a trace note."""
    store, config, user_id, participants = state.store, state.config, state.user_id, state.participants
    first = fuse(dict(vec_hits), dict(lex_hits), config.recall.recall_lambda, top_k=PRF_DOCS)
    top = [c.node_id for c in first if c.kept]
    texts = [x.content for x in store.nodes(user_id=user_id, ids=top)]
    asked = set(extract_keywords(keyword_query, participants, limit=50)) | {w.lower() for w in keyword_query.split()}
    names = person_names(" ".join(texts), participants) | {p.lower() for name in participants for p in name.split()}
    counts = Counter(w for t in texts for w in extract_keywords(t, participants, limit=1000)
                     if len(w) > 2 and w not in asked and w not in names)
    terms = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:config.recall.prf_terms]]
    if not terms:
        return keyword_query, dict(lex_hits), "pseudo-relevance feedback: no new term in the best leaves"
    expanded = f"{keyword_query} {' '.join(terms)}"
    return expanded, dict(store.search_bm25(user_id, expanded, int(Level.SEGMENT), n)), \
        f"pseudo-relevance feedback: BM25 query + {', '.join(terms)} " \
        f"(from the best {counted(len(top), 'leaf', 'leaves')})"


def rerank(candidates: Sequence[Candidate], top_k: int | None,
           updates: Sequence[Mapping[str, Any] | None] | None = None) -> list[Candidate]:
    """Candidates re-sorted by ``fused`` (ties: higher semantic, then id), ranks renumbered, the top k
    kept; a near-duplicate (``duplicate_of`` set) is never kept and takes no top-k slot.

    ``updates`` (one per candidate, ``None``: unchanged): field values set first, as
    ``rerank([c.model_copy(update=u) for c, u in ...], top_k)`` would, with one copy per candidate.
    """
    rows: list[tuple[float, float, str, int, Candidate, Mapping[str, Any] | None, str | None]] = []
    for j, c in enumerate(candidates):
        u = updates[j] if updates is not None else None
        if u:
            d = {**c.__dict__, **u}
            rows.append((-d["fused"], -d["semantic"], d["node_id"], j, c, u, d["duplicate_of"]))
        else:
            rows.append((-c.fused, -c.semantic, c.node_id, j, c, u, c.duplicate_of))
    rows.sort(key=lambda t: t[:4])
    out, n_kept = [], 0
    for r, (_, _, _, _, c, u, dup) in enumerate(rows, 1):
        keep = dup is None and (top_k is None or n_kept < top_k)
        n_kept += keep
        out.append(c.updated({**u, "rank": r, "kept": keep} if u else {"rank": r, "kept": keep}))
    return out


_SPEAKER = re.compile(r"^(?:On \d{1,2} \w+ \d{4} \(\w+\) \d{2}:\d{2}:\s*)?([^:\n]{1,60}):")


def speaker_of(node: MemoryNode) -> str | None:
    """The speaker of a verbatim L1 node's first line (``"Caroline: ..."``), else ``None``."""
    m = _SPEAKER.match(node.content.strip())
    return m.group(1).strip() if m else None
