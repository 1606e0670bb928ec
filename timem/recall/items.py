"""Memory items in recall: which items answer a question, as of when, and how they read at the head of the context.

* **Matching**: an item chain (the items of one subject and attribute, linked by supersession) joins when
  the question's embedding has cosine >= ``Config.memory.memory_item_min_cosine`` with one of its items (vector of
  "subject attribute: value", same embedder as the tree), or the question names its value or attribute
  (words, with a few attribute cues such as "live" -> home city, "喝" -> drink; Chinese cut by jieba). When
  some chain is named, only named chains are given (MiniLM's cosine is a weak signal across short items, and
  none for Chinese); otherwise the cosine alone decides. A question naming a subject ("Where does Caroline
  live?") gets only that subject's items, and one naming a participant with no items ("When did Jon lose his
  job?", :attr:`RecallState.participants`) gets none; one about a relation of the asker and not in their own
  voice ("Where does my sister live?") only items whose value it names (the items are the asker's own).
* **As of when**: without a time window in the plan, or with one that reaches the question time, the
  question is about the present: only the chain's *open* item is given, with what it superseded (each open value
  of a multi-valued attribute, :data:`timem.item_values.MULTI_VALUED`, best cosine first). When the
  recall planner resolved a window that ended before the question (:mod:`timem.recall.time_window`:
  "in March"), the items valid in that window are given instead, latest statement first; a question that also
  names the present ("What do I do for work now, and did I run in March?", :data:`PRESENT`) gets the open items
  too.
* **Decay** (:func:`decay_weight`; only when ``Config.memory.memory_decay_half_life_days`` is set): items below
  ``Config.memory.memory_decay_floor`` leave default recall (they stay in the store); the weight scales the rank.
* **Ended**: asked about the present, a chain whose latest value ended with no value after it ("I got fired from
  Microsoft", "I don't like hiking anymore") gives that value with its end (``(ended 2024-05-10, nothing since)``),
  so that the answer is not the old value read from an excerpt (a new-user trial: "Where do I work?" was answered
  "Microsoft" after "I got fired from Microsoft"). So does a value ended at the change of another single-valued
  attribute of its subject (:func:`_ended_by`: ``(ended 2024-05-03, at the change of employer to Google)``), and
  a chain given brings the chains linked to it by such an end (:func:`_linked`): "Am I still a nurse?" after "I
  just started at Google" gets the nurse line with its end and the employer Google (a new-user trial got no item
  line, only the old excerpt "I work as a nurse").
* Lines look like ``[preference, valid 2024-04-21 – now] Mia's morning drink: green tea (superseded:
  black coffee, until 2024-04-21)``; dates are local days in ``Config.time.tz``.
"""

from __future__ import annotations

import math
import re
from datetime import datetime

import numpy as np
from pydantic import BaseModel, Field

from timem.config import Config
from timem.item_holding import as_held
from timem.item_values import MULTI_VALUED, mentions, normalise
from timem.models import MemoryItem, TimeSpan
from timem.recall.answer_check import asked_relation
from timem.recall.keywords import person_names
from timem.recall.state import RecallState
from timem.store.segmenter import search_text

#: question words that point at an attribute (English and Chinese)
ATTRIBUTE_CUES: dict[str, tuple[str, ...]] = {
    "home city": ("live", "living", "lives", "move", "moved", "city", "town", "home", "based",
                  "住", "搬", "城市", "家"),
    "employer": ("work", "works", "working", "employer", "company", "job", "工作", "上班", "公司"),
    "job": ("job", "work", "works", "working", "profession", "occupation", "do for a living", "工作", "职业", "做什么"),
    "drink": ("drink", "drinks", "drinking", "coffee", "tea", "喝", "饮料", "咖啡", "茶"),
    "morning drink": ("drink", "drinks", "drinking", "morning", "coffee", "tea", "喝", "早上", "咖啡", "茶"),
    "diet": ("eat", "eats", "diet", "food", "meat", "vegetarian", "vegan", "吃", "饮食", "素"),
    "hobby": ("hobby", "hobbies", "pastime", "free time", "spare time", "for fun", "爱好", "业余"),
    "likes": ("like", "likes", "love", "loves", "enjoy", "enjoys", "favourite", "favorite", "fan", "喜欢"),
    "dislikes": ("dislike", "dislikes", "hate", "hates", "don't like", "not like", "不喜欢", "讨厌"),
    "birthday": ("birthday", "born", "生日"),
    "hometown": ("hometown", "grew up", "grow up", "老家", "家乡"),
}
#: "What is Lisbon like?": "like" after a copula, in a question with no do/does/did, asks what a thing is like
_LIKE_AS_PREPOSITION = re.compile(r"^(?!.*\b(?:do|does|did|would)\b).*\b(?:is|was|are|were|'s)\b.*\blike\b",
                                  re.IGNORECASE)
#: a question in the asker's own voice ("Do I live near my sister?"), not only about a relation of theirs
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|myself)\b|我(?!的?(?:姐|妹|哥|弟|妈|爸|朋友))")
#: words by which a question asks about the present even when it also names a past window
PRESENT = re.compile(r"\b(?:now|currently|current|nowadays|these days|at the moment|today|anymore|any more)\b"
                     r"|现在|目前", re.IGNORECASE)
_STOP = {"i", "me", "my", "you", "your", "do", "does", "did", "is", "are", "was", "what", "where", "who", "the", "a",
         "an", "in", "at", "of", "to", "now", "these", "days", "usually", "still", "and", "or", "how", "when", "we"}


class SupersededRef(BaseModel):
    """An item of the chain that no longer holds: its value, validity and what replaced it."""

    item_id: str
    value: str
    valid_from: datetime
    valid_to: datetime | None
    superseded_by: str | None
    corrected: bool = False  #: it never held (a correction replaced it)


class ItemUse(BaseModel):
    """One item given in the context (recorded in :attr:`timem.recall.trace.RecallTrace.items`)."""

    item_id: str
    kind: str
    subject: str
    attribute: str
    value: str
    valid_from: datetime
    valid_to: datetime | None
    source_ids: list[str] = Field(default_factory=list)
    cosine: float
    named: bool  #: the question named its value or attribute
    decay: float | None = None
    line: str
    superseded: list[SupersededRef] = Field(default_factory=list)


class ItemRecall(BaseModel):
    """The items for one question: lines (priority order), what was used, notes (e.g. decayed items)."""

    lines: list[str] = Field(default_factory=list)
    used: list[ItemUse] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    @property
    def block(self) -> str:
        return "\n".join(self.lines)


def decay_weight(item: MemoryItem, at: datetime, half_life_days: float) -> float:
    """Forgetting by time decay: ``2^(-age / h) * (1 + ln(1 + n) / 4)``, capped at 1, where ``age`` is the
    days from the later of the item's event time and last access to ``at`` (UTC-aware), ``h`` the half-life
    in days and ``n`` the access count (repeated use slows forgetting; the Ebbinghaus-style curve the TiMem
    memory layer names, here in its simplest exponential form). Never negative; 1 for a fresh item."""
    last = max(item.event_time, item.last_access or item.event_time)
    age = max(0.0, (at - last).total_seconds() / 86400)
    return min(1.0, 2 ** (-age / half_life_days) * (1 + math.log1p(item.access_count) / 4))


def _words(text: str) -> set[str]:
    """The question's words (lower case, stop words out); "for a living" is one word, so that "living" alone
    still points at the home city but "What do I do for a living?" at the job."""
    text = re.sub(r"\bfor a living\b", "for-a-living", search_text(text).lower())
    return {w for w in re.findall(r"[\w'-]+", text) if w not in _STOP}


def _names_attribute(query: str, qwords: set[str], attribute: str) -> bool:
    """Whether the question points at ``attribute`` by one of its :data:`ATTRIBUTE_CUES` (a word of the
    question, a phrase of it, or a Chinese cue in its text); without cues, by the attribute's own words."""
    cues = ATTRIBUTE_CUES.get(attribute, tuple(attribute.split()))
    text = " " + " ".join(re.findall(r"[\w'-]+", search_text(query).lower())) + " "
    for c in cues:
        if not c.isascii():
            hit = c in query
        elif " " in c:
            hit = f" {c} " in text
        else:
            hit = c in qwords
        if hit and not (c == "like" and _LIKE_AS_PREPOSITION.search(query)):
            return True
    return False


def _day(dt: datetime | None, config: Config) -> str:
    return "now" if dt is None else dt.astimezone(config.time.tz).date().isoformat()


def _ref(i: MemoryItem) -> SupersededRef:
    return SupersededRef(item_id=i.id, value=i.value, valid_from=i.valid_from, valid_to=i.valid_to,
                         superseded_by=i.superseded_by, corrected=i.valid_to == i.valid_from)


def _successor(chain: list[MemoryItem], item: MemoryItem) -> MemoryItem | None:
    """The item that superseded ``item``, past any correction of it (a corrected item never held)."""
    by_id = {i.id: i for i in chain}
    nxt = by_id.get(item.superseded_by or "")
    seen = {item.id}
    while nxt is not None and nxt.valid_to == nxt.valid_from and nxt.superseded_by and nxt.id not in seen:
        seen.add(nxt.id)
        nxt = by_id.get(nxt.superseded_by)
    return nxt


def _ended(item: MemoryItem) -> bool:
    """Whether ``item`` ended with no value after it ("I got fired from Microsoft", "I don't like hiking anymore"):
    closed, superseded by nothing, not a correction's empty interval."""
    return item.valid_to is not None and not item.superseded_by and item.valid_to != item.valid_from


def _ended_by(item: MemoryItem, chain: list[MemoryItem], items: dict[str, MemoryItem]) -> MemoryItem | None:
    """The value of another single-valued attribute of the same subject that ended ``item`` (closed, not a
    correction), or ``None``: the writer ends a job at a change of employer and an employer at a change of job
    (:func:`timem.memory.history.end_old_job`, :func:`~timem.memory.history.end_old_employer`), superseded by the new
    value's item, which is in another chain. (A like superseding a dislike of the same thing is no such end: both
    attributes are multi-valued, :data:`~timem.item_values.MULTI_VALUED`.)"""
    by = items.get(item.superseded_by or "")
    if (by is None or item.valid_to is None or item.valid_to == item.valid_from or any(i.id == by.id for i in chain)
            or {item.attribute, by.attribute} & MULTI_VALUED):
        return None
    return by if by.subject == item.subject and by.attribute != item.attribute else None


def _linked(chains: dict[tuple[str, str], list[MemoryItem]], key: tuple[str, str]) -> set[tuple[str, str]]:
    """The chains (subject, attribute) linked to chain ``key`` by an end across single-valued attributes: one of its
    items ended one of theirs or the other way round (:func:`_ended_by`: a change of employer ended the job title)."""
    mine = {i.id for i in chains[key]}
    ends = {i.superseded_by for i in chains[key]} - {None}
    return {k for k, chain in chains.items() if k != key and k[0] == key[0] and not {k[1], key[1]} & MULTI_VALUED
            and any(i.id in ends or i.superseded_by in mine for i in chain)}


def _line(item: MemoryItem, history: list[MemoryItem], config: Config, by: MemoryItem | None = None,
          ended_by: MemoryItem | None = None) -> str:
    head = f"[{item.kind}, valid {_day(item.valid_from, config)} – {_day(item.valid_to, config)}] {item.label()}"
    notes = [] if by is not None or not _ended(item) else [f"ended {_day(item.valid_to, config)}, nothing since"]
    if ended_by is not None and by is None:
        notes.append(f"ended {_day(item.valid_to, config)}, at the change of {ended_by.attribute} to {ended_by.value}")
    for old in history[:2]:
        if old.valid_to == old.valid_from:
            notes.append(f"corrected: was {old.value}")
        else:
            notes.append(f"superseded: {old.value}, until {_day(old.valid_to, config)}")
    if by is not None:
        notes.append(f"then {by.value} from {_day(by.valid_from, config)}")
    return head + (f" ({'; '.join(notes)})" if notes else "")


def _as_of(items: list[MemoryItem], question_time: datetime) -> list[MemoryItem]:
    """The items as they stood at ``question_time`` (UTC-aware): those stated by then (``event_time``), and a
    supersession or correction stated later undone (``valid_to`` and ``superseded_by`` cleared), so that
    nothing said after the question reaches its context (issue 15 #7). An end stated later ("I eat meat again",
    no successor: ``valid_to`` is when it was said) is undone too: asked before it, the diet held."""
    known = {i.id for i in items if i.event_time <= question_time}

    def as_stored(i: MemoryItem) -> bool:
        return i.superseded_by in known if i.superseded_by else i.valid_to is None or i.valid_to <= question_time

    return [i if as_stored(i) else i.model_copy(update={"valid_to": None, "superseded_by": None})
            for i in items if i.id in known]


def recall_items(state: RecallState, window: TimeSpan | None) -> ItemRecall:
    """The items answering ``state.query`` asked at ``state.question_time`` (UTC-aware), see the module doc.

    ``window`` is the recall plan's time window (half-open, UTC) or ``None``. Nothing is written here (the
    caller records the access with :meth:`MemoryStore.touch_items` when the trace is persisted).
    """
    store, config, user_id = state.store, state.config, state.user_id
    query, question_time = state.query, state.question_time
    out = ItemRecall()
    items = _as_of(as_held(store.items(user_id)), question_time)  # a forgotten successor: until the next value
    if not items or config.memory.memory_item_limit == 0:
        return out
    qv = state.query_vector()
    vecs = store.item_embeddings([i.id for i in items])
    qwords = _words(query)
    chains: dict[tuple[str, str], list[MemoryItem]] = {}
    for i in items:
        chains.setdefault((i.subject, i.attribute), []).append(i)
    named_subjects = {subj for subj, _ in chains if subj.lower() in query.lower()}
    if named_subjects:  # "Where does Caroline live?": Caroline's items only
        chains = {k: v for k, v in chains.items() if k[0] in named_subjects}
    elif state.participants and person_names(query, state.participants):  # a participant with no items: none
        chains = {}  # (LoCoMo conv-30: "When Jon has lost his job as a banker?" got Gina's employer line)
    # "Where does my sister live?": the items are the asker's own (statements about others make none), so only an
    # item whose value the question names may answer it (a new-user trial got the asker's own city first)
    about_relation = asked_relation(query) is not None and not _FIRST_PERSON.search(query)
    past = window is not None and window.end < question_time
    present = not past or PRESENT.search(query) is not None
    by_id = {i.id: i for i in items}
    chosen: dict[tuple[str, str], bool] = {}  # the chains given, and whether the question named them
    cosines: dict[tuple[str, str], dict[str, float]] = {}
    for key, chain in chains.items():
        chain.sort(key=lambda i: (i.event_time, i.created_at))
        cos = cosines[key] = {i.id: float(np.dot(qv, vecs[i.id])) for i in chain}
        value_named = any(mentions(query, i.value) or normalise(i.value) in qwords for i in chain)
        named = value_named or _names_attribute(query, qwords, key[1])
        if (not named and max(cos.values()) < config.memory.memory_item_min_cosine) or (about_relation
                                                                                       and not value_named):
            continue
        chosen[key] = named
    if not about_relation:  # "Am I still a nurse?": the employer whose change ended the job comes with it
        for key, named in list(chosen.items()):
            for other in _linked(chains, key):
                chosen[other] = chosen.get(other, False) or named
    ranked: list[tuple[float, ItemUse]] = []
    for (_subject, attribute), named in chosen.items():
        chain, cos = chains[(_subject, attribute)], cosines[(_subject, attribute)]
        then: list[MemoryItem] = []
        if past:
            assert window is not None
            then = [i for i in chain if i.valid_from < window.end and (i.valid_to is None or i.valid_to > window.start)
                    and i.valid_to != i.valid_from]
            then.sort(key=lambda i: (i.event_time, i.created_at), reverse=True)
        now: list[MemoryItem] = []
        if present and attribute in MULTI_VALUED:  # every value that holds ("What music do I like?": jazz and folk)
            now = sorted((i for i in chain if i.is_open and i not in then), key=lambda i: -cos[i.id])
        elif present:
            now = [i for i in chain if i.is_open and i not in then][-1:]
        if present and not now and not then:  # the chain's value ended with none after it ("I got fired from X"),
            now = [i for i in chain if _ended(i) or _ended_by(i, chain, by_id)][-1:]  # or at another's change
        picks = then + now
        for rank_in_chain, item in enumerate(picks):
            as_past = item in then
            history = [i for i in reversed(chain) if i.superseded_by and i.valid_to is not None
                       and i.valid_to <= (item.valid_to or question_time) and i.id != item.id and not as_past]
            if attribute in MULTI_VALUED:  # a like replaced nothing but what it superseded: "likes: jazz" was
                history = [i for i in history if i.superseded_by == item.id]  # shown replacing Radiohead (a trial)
            by = _successor(chain, item) if as_past else None
            weight = None
            if config.memory.memory_decay_half_life_days:
                weight = decay_weight(item, question_time, config.memory.memory_decay_half_life_days)
                if weight < config.memory.memory_decay_floor:
                    out.notes.append(f"item {item.id} ({item.label()}) left out: decay weight {weight:.3f} "
                                     f"< floor {config.memory.memory_decay_floor}")
                    continue
            fit = cos[item.id] if attribute in MULTI_VALUED else max(cos.values())
            score = (fit + (0.5 if named else 0.0)) * (weight if weight is not None else 1.0)
            score -= 0.01 * rank_in_chain
            use = ItemUse(item_id=item.id, kind=item.kind, subject=item.subject, attribute=item.attribute,
                          value=item.value, valid_from=item.valid_from, valid_to=item.valid_to,
                          source_ids=item.source_ids, cosine=round(cos[item.id], 4), named=named,
                          decay=None if weight is None else round(weight, 4),
                          line=_line(item, history, config, by, _ended_by(item, chain, by_id)),
                          superseded=[_ref(i) for i in history])
            ranked.append((score, use))
    if any(u.named for _, u in ranked):  # the question names a slot: those chains only
        ranked = [(sc, u) for sc, u in ranked if u.named]
    ranked.sort(key=lambda x: -x[0])
    out.used = [u for _, u in ranked[:config.memory.memory_item_limit]]
    out.lines = [u.line for u in out.used]
    return out
