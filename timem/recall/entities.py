"""Entity and topic channels for scattered evidence (issue 23): leaves about the question's subject from sessions
the question's own ranking did not reach.

A list question ("What activities has Melanie done with her family?", "What do Melanie's kids like?") is answered by
one turn in each of several sessions, most of which share no word with the question ("The kids loved it! ... make
something with clay", "They were stoked for the dinosaur exhibit!"). The fused ranking fills a small budget from
the one or two sessions that match best; these channels ask for the best leaf of each *other* session instead, and
their leaves are placed like the second hop's (:func:`timem.recall.aspects.merge_channels`: after
``Config.recall.channel_slot`` leaves, so a single-turn question keeps its leaves). Both are off by default.

* **Entity channel** (``Config.recall.entity_leaves = N``): the question's entities (its content words and any
  name that is not a participant's, :func:`entity_terms`) are the BM25 query and the question with the
  participants' names masked the cosine query, both over every session (:data:`POOL` leaves each); only leaves
  spoken by the participant the question names first (its subject: "What do Melanie's kids like?" -> Melanie's
  turns) count, with ``entity_scope = "speaker"``; the best leaf of each session not already among the sessions of
  the first ``channel_slot`` leaves, best sessions first, ``N`` of them.
* **Rocchio channel** (``Config.recall.rocchio_leaves = N``): dense pseudo-relevance feedback. The masked question
  vector plus ``rocchio_beta`` times the mean vector of the first ``channel_slot`` leaves (re-normalised) is
  searched (cosine only), with the same speaker and session rules: "more turns like the ones that matched", which
  for a list question are the other instances ("pottery with the kids" -> "painting together lately").

Cost per recall: the entity channel one vector and one BM25 search of :data:`POOL`; the Rocchio channel one vector
search, one read of the head leaves' vectors from the in-memory copy; plus one node fetch from the working set.
No LLM, no scan of the user's memories in Python; leaves are verbatim turns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from timem.models import Level, MemoryNode
from timem.recall.keywords import STOPWORDS, name_words, strip_possessive
from timem.recall.leaves import Candidate, fuse, speaker_of
from timem.recall.planner import mask_names
from timem.recall.state import RecallState
from timem.tokens import counted

POOL = 200  #: leaves each channel search returns before the speaker and session rules
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’\-]*")
#: question words that name the kind of answer, not what it is about ("What *activities* ...", "What *kind* ...")
_ANSWER_TYPES = frozenset("""activity activities event events thing things kind kinds type types sort way ways
place places item items name names hobby hobbies""".split())


def subject_of(question: str, participants: Sequence[str]) -> str | None:
    """The participant the question names first (whole word, a first name counts: "Mel" of "Mel Smith"), or
    ``None`` when it names none."""
    best: tuple[int, str] | None = None
    for p in participants:
        for w in dict.fromkeys([p, p.split()[0] if p.split() else p]):
            m = re.search(rf"\b{re.escape(w)}\b", question) if w else None
            if m and (best is None or m.start() < best[0]):
                best = (m.start(), p)
    return best[1] if best else None


def entity_terms(question: str, participants: Sequence[str] = ()) -> list[str]:
    """The question's entities, lower-cased, in order, once each: its words of 3+ letters that are not recall stop
    words, a participant's name or a word naming the kind of answer ("activities", "events"); a capitalised name
    that is not a participant's ("Nicole", "Paris") is kept. ``[]`` for a question of names and stop words only."""
    names = name_words(participants)
    out: list[str] = []
    for m in _TOKEN.finditer(question):
        w = strip_possessive(m.group()).lower().strip("'’-")
        if len(w) < 3 or w in STOPWORDS or w in names or w in _ANSWER_TYPES or w in out:
            continue
        out.append(w)
    return out


def _speaks(node: MemoryNode, subject: str | None) -> bool:
    """Whether ``node`` is spoken by ``subject`` (its full or first name); always true without a subject."""
    if subject is None:
        return True
    who = speaker_of(node)
    return who is not None and (who == subject or who == subject.split()[0] or who.split()[0] == subject)


def _per_session(state: RecallState, ranked: Sequence[Candidate], exclude_ids: set[str],
                 exclude_sessions: set[str | None], subject: str | None, n: int) -> list[Candidate]:
    """The best candidate of each session (``ranked`` order) outside ``exclude_sessions``, spoken by ``subject``
    when given, not in ``exclude_ids`` and not after the question time; the first ``n``."""
    pool = [c for c in ranked if c.node_id not in exclude_ids]
    nodes = {x.id: x for x in state.store.nodes(user_id=state.user_id, ids=[c.node_id for c in pool])}
    seen = set(exclude_sessions)
    out: list[Candidate] = []
    for c in pool:
        x = nodes.get(c.node_id)
        if x is None or state.unseen(x) or x.session_id in seen or not _speaks(x, subject):
            continue
        seen.add(x.session_id)
        out.append(c)
        if len(out) == n:
            break
    return out


def _masked_vector(state: RecallState) -> np.ndarray:
    """The question's embedding with the participants' names masked (the centroid planner's, else embedded)."""
    text = mask_names(state.query, state.participants)
    if state.masked is not None and state.masked[0] == text:
        return state.masked[1]
    vec: np.ndarray = state.embedder.embed([text])[0]
    return vec


def entity_inserts(state: RecallState, head: Sequence[Candidate]) -> tuple[list[tuple[str, Candidate]], list[str]]:
    """The entity and Rocchio channels' leaves (module docstring) as ``(channel name, candidate)`` in placing
    order, and trace notes. ``head``: the first ``channel_slot`` leaves of the question's ranking, whose ids and
    sessions the channels leave out. Nothing when both channels are off or the question has no subject and no
    entity."""
    rc, store, user_id = state.config.recall, state.store, state.user_id
    if not head or (rc.entity_leaves <= 0 and rc.rocchio_leaves <= 0):
        return [], []
    ids = {c.node_id for c in head}
    head_nodes = store.nodes(user_id=user_id, ids=list(ids))
    sessions = {x.session_id for x in head_nodes}
    subject = subject_of(state.query, state.participants) if rc.entity_scope == "speaker" else None
    inserts: list[tuple[str, Candidate]] = []
    notes: list[str] = []
    masked = None
    if rc.entity_leaves > 0:
        terms = entity_terms(state.query, state.participants)
        masked = _masked_vector(state)
        sem = dict(store.search_vector(user_id, masked, int(Level.SEGMENT), POOL))
        lex = dict(store.search_bm25(user_id, " ".join(terms), int(Level.SEGMENT), POOL)) if terms else {}
        got = _per_session(state, fuse(sem, lex, rc.recall_lambda), ids, sessions, subject, rc.entity_leaves)
        name = f"entity: {' '.join(terms) or '(masked question)'}" + (f" by {subject}" if subject else "")
        inserts += [(name, c) for c in got]
        notes.append(f"entity channel ({', '.join(terms) or 'no term'}; "
                     f"{'speaker ' + subject if subject else 'any speaker'}): "
                     f"{counted(len(got), 'leaf', 'leaves')} from other sessions")
    if rc.rocchio_leaves > 0:
        masked = _masked_vector(state) if masked is None else masked
        vecs = store.embeddings(list(ids), user_id=user_id)
        if vecs:
            centre = np.mean(np.stack(list(vecs.values())), axis=0)
            q = masked + rc.rocchio_beta * centre
            q = (q / np.linalg.norm(q)).astype(np.float32)
            sem = dict(store.search_vector(user_id, q, int(Level.SEGMENT), POOL))
            taken = ids | {c.node_id for _, c in inserts}
            got = _per_session(state, fuse(sem, {}, 1.0), taken, sessions, subject, rc.rocchio_leaves)
            inserts += [(f"rocchio: question + {rc.rocchio_beta} x {len(vecs)} leaves", c) for c in got]
            notes.append(f"Rocchio channel (β={rc.rocchio_beta}, {counted(len(vecs), 'leaf', 'leaves')}): "
                         f"{counted(len(got), 'leaf', 'leaves')} from other sessions")
    return inserts, notes
