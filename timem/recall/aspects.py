"""Extra leaf channels for scattered evidence (issue 23): aspect queries and second-hop retrieval.

Both run after relevance propagation, retrieve L1 leaves for *other* queries than the question, and place their
best leaves into the question's ranking at a fixed slot (:func:`merge_channels`), so the first leaves of the
question's own ranking never move and the inserted ones come right after them. Neither needs an LLM, and the
leaves they bring are verbatim turns with speaker and date like any other.

* **Aspect queries** (``Config.recall.aspect_queries = "rules"``): a conjunctive question is split by rules
  (:func:`aspect_parts`) into one query per part: participants joined by "and" / "or" ("What do Jon and Gina
  both have in common?" -> one query per person, the other name and "both" left out), and coordinated phrases
  ("a national park or a theme park", "friends, family, and mentors": the question once per conjunct). Each
  part is embedded (one batch for all parts) and searched like the question (cosine + BM25, fused with λ).
  With ``aspect_queries = "llm"`` and an LLM configured, a question the planner does not call simple is split by
  the LLM instead (:func:`llm_aspect_queries`, prompt :mod:`timem.prompts.decompose`: TiMem's complex path);
  the rules apply when it gives no split, fails, or no LLM is configured (noted in the trace).
* **Second hop** (``Config.recall.second_hop = N``): the best leaf's sentence that shares the most content
  stems with the question is read for its other content words (not the question's, not a person's name); they
  are the BM25 query of a second search, whose best N leaves from *other sessions* than that leaf join ("Where
  did Caroline move from?" -> "... since I moved from my home country" -> "home country" -> "a gift from my
  grandma in my home country, Sweden").

Cost per recall: LLM aspect queries one LLM call (the only channel that needs one, and off by default); aspect
queries one embedding batch and two index searches per part (at most
:data:`MAX_PARTS`), second hop one BM25 search; plus one node fetch for the new leaves. No scan of the user's
memories in Python.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from timem.errors import LLMError, UnusableAnswerError
from timem.models import Level, MemoryNode
from timem.prompts import decompose
from timem.recall.entities import entity_inserts
from timem.recall.keywords import STOPWORDS, person_names
from timem.recall.leaves import Candidate, LeafSelection, fuse, name_free_query, speaker_of
from timem.recall.state import RecallState
from timem.store.bm25 import NUMBER_STOPWORDS
from timem.tokens import counted, stem

MAX_PARTS = 4  #: aspect queries per question at most
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
#: a word, digits included: a code ("LH1234", "B12") or a number ("214") is a second-hop word as it is a BM25 term
#: (:data:`timem.store.bm25.IGNORE`; was letters only: "LH1234" gave "lh", a term no more)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")
_CONJ = re.compile(r",?\s+\b(and|or)\b\s+", re.IGNORECASE)


def _names_in(question: str, participants: Sequence[str]) -> list[tuple[int, int, str]]:
    """``(start, end, name)`` of each participant's (first) name in ``question``, in order (whole words)."""
    out = []
    for p in dict.fromkeys(w for name in participants for w in [name, name.split()[0]] if w):
        out += [(m.start(), m.end(), p) for m in re.finditer(rf"\b{re.escape(p)}\b(?:['’]s)?", question)]
    out.sort()
    kept: list[tuple[int, int, str]] = []
    for s, e, p in out:  # a full name and its first name overlap: keep the longer, first
        if kept and s < kept[-1][1]:
            continue
        kept.append((s, e, p))
    return kept


def _tidy(text: str) -> str:
    text = re.sub(r"\bboth\b|\bin common\b|\btogether\b", " ", text, flags=re.IGNORECASE)
    return re.sub(r"\s+([?,.!])", r"\1", " ".join(text.split())).strip(" ,")


def _person_parts(question: str, participants: Sequence[str]) -> list[tuple[str, str]]:
    """``(query, person)`` per participant of a "A and B" / "A or B" pair (the other one left out), else none."""
    names = _names_in(question, participants)
    for (s1, e1, p1), (s2, e2, p2) in zip(names, names[1:], strict=False):
        between = question[e1:s2]
        if p1 != p2 and re.fullmatch(r"\s*(,|,?\s*and|,?\s*or|&)\s*", between, re.IGNORECASE):
            return [(_tidy(question[:s1] + question[s1:e1] + question[e2:]), p1),
                    (_tidy(question[:s1] + question[s2:e2] + question[e2:]), p2)]
    return []


def _phrase_parts(question: str, participants: Sequence[str]) -> list[str]:
    """The question once per conjunct of a coordination that ends it ("... a national park or a theme park?",
    "... her friends, family, and mentors?"): the last conjunct is the question's last one to three words, each
    earlier one as many words back (to a comma); none without two conjuncts holding a content word, or when a
    conjunct names a participant ("Melanie and her kids" is one group)."""
    body = question.rstrip(" ?.!")
    tail_punct = question[len(body):]
    matches = list(_CONJ.finditer(body))
    if not matches:
        return []
    m = matches[-1]
    right = body[m.end():].split()
    if not right or len(right) > 3:
        return []
    head = body[:m.start()]
    items: list[list[str]] = [right]
    while True:  # "friends, family, and mentors": the comma-separated conjuncts before the last one
        words = head.split()
        left = words[len(words) - min(len(right), len(words)):]
        cut = [i for i, w in enumerate(left) if w.endswith(",")]
        if cut:
            left = left[cut[-1] + 1:]
        if not left:
            return []
        items.insert(0, left)
        head = " ".join(words[:len(words) - len(left)])
        if not head.endswith(","):
            break
        head = head[:-1]
    names = {w.lower() for name in participants for w in name.split()}
    if any(w.lower().strip(",'’s") in names for x in items for w in x):
        return []
    content = [x for x in items if any(w.lower().strip(",") not in STOPWORDS for w in x)]
    if len(content) < 2:
        return []
    return [_tidy(" ".join([head, " ".join(x).strip(",")]) + tail_punct) for x in items][:MAX_PARTS]


def aspect_queries(question: str, participants: Sequence[str] = ()) -> list[tuple[str, str | None]]:
    """The aspect queries of a conjunctive question (module docstring) as ``(query, person)``: ``person`` is the
    participant a person part is about (its leaves must be spoken by or name them), ``None`` for a phrase part; at
    most :data:`MAX_PARTS`, ``[]`` when it has none (one part is no split). Rules only: the participants' names,
    "and" / "or" and commas."""
    parts: list[tuple[str, str | None]] = [*_person_parts(question, participants)] or [
        (p, None) for p in _phrase_parts(question, participants)]
    parts = [p for p in dict.fromkeys(parts) if p[0] and p[0] != question]
    return parts[:MAX_PARTS] if len(parts) >= 2 else []


def llm_aspect_queries(state: RecallState, complexity: str | None) -> tuple[list[tuple[str, str | None]], bool]:
    """The aspect queries of ``aspect_queries = "llm"`` and whether the LLM made them: its sub-questions of
    ``state.query`` (:mod:`timem.prompts.decompose`) as ``(query, None)``, at most :data:`MAX_PARTS`; else the
    rules' (:func:`aspect_queries`): for a question planned ``"simple"``, without an LLM, when the call fails or
    when it gives fewer than two parts. Each fallback but the first is a note in ``state.notes`` (the trace)."""
    rules = aspect_queries(state.query, state.participants)
    if complexity == "simple":
        return rules, False
    if state.llm is None:
        state.notes.append("aspect queries 'llm' configured but no LLM available; rules used")
        return rules, False
    try:
        out = state.llm.complete_json(decompose.build_messages(state.query, state.participants),
                                      decompose.DecomposeOut, purpose="decompose", user_id=state.user_id,
                                      max_tokens=decompose.MAX_TOKENS)
    except (LLMError, UnusableAnswerError, ValueError) as exc:
        state.notes.append(f"LLM decomposition failed ({exc}); rule aspect queries used")
        return rules, False
    parts = decompose.usable(out.sub_questions, state.query)
    if len(parts) < 2:
        state.notes.append("LLM decomposition gave no split; rule aspect queries used")
        return rules, False
    return [(q, None) for q in parts[:MAX_PARTS]], True


def aspect_parts(question: str, participants: Sequence[str] = ()) -> list[str]:
    """The queries of :func:`aspect_queries` without their person."""
    return [q for q, _ in aspect_queries(question, participants)]


def _about(node: MemoryNode, person: str) -> bool:
    """Whether an L1 leaf is spoken by ``person`` or names them in its text."""
    return speaker_of(node) == person or re.search(rf"\b{re.escape(person)}\b",
                                                   node.content.split(":", 1)[-1]) is not None


def _channel(state: RecallState, text: str, vector: np.ndarray | None, exclude: set[str]) -> list[Candidate]:
    """The fused ranking (cosine with ``vector`` if given, BM25 of ``text``) of L1 leaves for one channel query,
    without ``exclude`` and leaves starting after the question time."""
    store, config, user_id = state.store, state.config, state.user_id
    n = config.recall.recall_candidates
    sem = dict(store.search_vector(user_id, vector, int(Level.SEGMENT), n)) if vector is not None else {}
    lex = dict(store.search_bm25(user_id, text, int(Level.SEGMENT), n)) if text.strip() else {}
    ranked = [c for c in fuse(sem, lex, config.recall.recall_lambda) if c.node_id not in exclude]
    return ranked


#: a relative date's resolution appended by :mod:`timem.reldates` (" [= 7 May 2023]", "[=2023年5月7日]")
_RESOLVED = re.compile(r"\s?\[=[^\]]*\]")


def _stems(text: str, names: set[str]) -> set[str]:
    """Porter stems of ``text``'s words of 3+ characters that are not recall stop words
    (:data:`timem.recall.keywords.STOPWORDS`, which keep "move" and "home", unlike scikit-learn's), ``names`` or
    numbers BM25 leaves out (:data:`timem.store.bm25.NUMBER_STOPWORDS`: years)."""
    words = (w.lower().strip("'’-") for w in _WORD.findall(text))
    return {stem(w) for w in words if len(w) > 2 and w not in STOPWORDS and w not in names
            and w not in NUMBER_STOPWORDS}


def hop_terms(node: MemoryNode, question: str, participants: Sequence[str] = ()) -> list[str]:
    """The second-hop query words of ``node`` for ``question``: the content words (3+ letters, no stop word, no
    person name, lower case, in order) of its sentence sharing the most stems with the question, that the
    question does not have (by stem). ``[]`` when no sentence shares a stem."""
    names = person_names(question, participants) | person_names(node.content, participants) | {
        p.lower() for name in participants for p in name.split()}
    stems = _stems(question, names)
    body = node.content.split("\n", 1)[-1] if node.content.startswith("On ") else node.content
    sents = [s for s in _SENTENCE.split(body) if s.strip()]
    scored = [(len(stems & _stems(s, names)), -i, s) for i, s in enumerate(sents)]
    if not scored or max(scored)[0] == 0:
        return []
    best = _RESOLVED.sub("", max(scored)[2])  # a resolved date ("[= 22 April 2024]") is not what the turn is about
    speaker, sep, text = best.partition(": ")
    best = text if sep and len(speaker) <= 60 else best
    out: list[str] = []
    for w in _WORD.findall(best):
        lw = w.lower().strip("'’-")
        if lw in out or not _stems(lw, names) or _stems(lw, names) & stems:
            continue
        out.append(lw)
    return out


def merge_channels(state: RecallState, selection: LeafSelection, top_k: int,
                   complexity: str | None = None) -> LeafSelection:
    """The selection with the aspect and second-hop leaves placed (module docstring): the first
    ``Config.recall.channel_slot`` kept leaves stay, then each channel's best leaves not already above (aspect
    parts in turn, ``aspect_leaves`` each; then ``second_hop``; then the entity and Rocchio channels of
    :mod:`timem.recall.entities`), then the rest of the ranking; the top ``top_k``
    are kept. A placed leaf takes the fused score of the slot it fills (so scores stay monotone in rank and the
    score gate judges it as it judges that slot) and keeps its own cosine and BM25 from its channel; its
    ``channel`` names the query. Unchanged (one note) when no channel applies. ``complexity``: the recall plan's
    (an LLM decomposes only a question not planned simple, :func:`llm_aspect_queries`)."""
    rc, store, user_id = state.config.recall, state.store, state.user_id
    ranked = sorted(selection.candidates, key=lambda c: c.rank)
    if not ranked:
        return selection
    slot = min(rc.channel_slot, len(ranked))
    head = {c.node_id for c in ranked[:slot]}
    inserts: list[tuple[str, Candidate]] = []
    notes = list(selection.notes)
    if rc.aspect_queries != "off":
        parts, by_llm = (llm_aspect_queries(state, complexity) if rc.aspect_queries == "llm"
                         else (aspect_queries(state.query, state.participants), False))
        if parts:
            vecs = state.embedder.embed([q for q, _ in parts])
            for (part, person), vec in zip(parts, vecs, strict=True):
                # a person's part: BM25 without the name (every turn of theirs has it), then their own turns only
                lexical = part if person is None else re.sub(rf"\b{re.escape(person)}\b(?:['’]s)?", " ", part)
                if by_llm:  # the LLM names the person in every sub-question: no keyword
                    lexical = name_free_query(part, state.participants)
                got = [c for c in _channel(state, lexical, vec, head)
                       if c.bm25_raw or (c.cosine or 0) >= rc.gate_floor]
                if person is not None:
                    texts = {x.id: x for x in store.nodes(user_id=user_id, ids=[c.node_id for c in got[:40]])}
                    got = [c for c in got if c.node_id in texts and _about(texts[c.node_id], person)]
                inserts += [(f"aspect: {part}", c) for c in got[:rc.aspect_leaves]]
            notes.append(f"aspect queries{' (LLM)' if by_llm else ''}: {' | '.join(q for q, _ in parts)}")
    if rc.second_hop > 0:
        first = store.nodes(user_id=user_id, ids=[ranked[0].node_id])
        terms = hop_terms(first[0], state.query, state.participants) if first else []
        if terms:
            query = " ".join(terms)
            session = first[0].session_id
            got = _channel(state, query, None, head)
            got_nodes = {x.id: x for x in store.nodes(user_id=user_id, ids=[c.node_id for c in got[:3 * rc.second_hop
                                                                                               + 10]])}
            other = [c for c in got if c.node_id in got_nodes and got_nodes[c.node_id].session_id != session]
            inserts += [(f"second hop: {query}", c) for c in other[:rc.second_hop]]
            notes.append(f"second hop from leaf {ranked[0].node_id}: BM25 query {query!r}")
    if rc.entity_leaves > 0 or rc.rocchio_leaves > 0:  # entity / topic channels (timem.recall.entities)
        more, more_notes = entity_inserts(state, ranked[:slot])
        inserts += more
        notes += more_notes
    if not inserts:
        return selection._replace(notes=notes)
    late = {x.id for x in store.nodes(user_id=user_id, ids=[c.node_id for _, c in inserts])
            if state.unseen(x)}
    by_id = {c.node_id: c for c in ranked}
    placed: list[str] = []
    channel: dict[str, str] = {}
    for name, c in inserts:
        if c.node_id in late or c.node_id in channel or c.node_id in head:
            continue
        channel[c.node_id] = name
        placed.append(c.node_id)
    order = [c.node_id for c in ranked[:slot]] + placed + [c.node_id for c in ranked[slot:] if c.node_id not in
                                                           channel]
    scores = [c.fused for c in ranked] + [0.0] * len(placed)
    out, n_kept = [], 0
    for r, nid in enumerate(order, 1):
        own = by_id.get(nid)
        src = next(c for name, c in inserts if c.node_id == nid) if nid in channel else None
        base = own if own is not None else src
        assert base is not None
        update: dict[str, object] = {"rank": r, "fused": round(scores[r - 1], 6)}
        if src is not None:
            update.update({"channel": channel[nid], "cosine": src.cosine if own is None else own.cosine,
                           "bm25_raw": src.bm25_raw if own is None or own.bm25_raw is None else own.bm25_raw,
                           "semantic": base.semantic, "bm25": base.bm25,
                           # its channel's query matched content words (names are left out of it): not a match on
                           # a name alone, whatever the question's own query matched (leaves.name_free_query)
                           "name_only": False, "masked_cosine": None})
        keep = base.duplicate_of is None and n_kept < top_k
        n_kept += keep
        update["kept"] = keep
        out.append(base.updated(update))
    notes.append(f"channels placed {counted(len(placed), 'leaf', 'leaves')} after rank {slot}")
    return LeafSelection(out, [c for c in out if c.kept], selection.bm25_query, selection.time, notes)
