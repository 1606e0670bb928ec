"""The history the memory writer (:mod:`timem.memory.writer`) writes beside a new value or an end: a value no item held
that a change or an end names (:func:`ended_before`: "I switched from espresso to green tea", nothing known of
espresso), and the employer that a new or quit job ends (:func:`end_old_employer`); also what the writer's parts share:
the :class:`ExtractionReport`, an item's id (:func:`item_id`) and the subjects one person's items are stored under
(:func:`same_person`; matched case-insensitively, spelled as first stored: :func:`stored_subject`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from timem.embed.protocol import Embedder
from timem.item_values import PLACEHOLDER_SUBJECTS, first_spellings, mentions, normalise
from timem.memory.rules import Statement, extract_statements
from timem.models import MemoryItem
from timem.store.ports import MemoryStore

#: how long after the last statement of a value a change that ends it starts at the earliest, when the change's
#: own date ("last month") reaches back before that statement or both were said at the same time: the old value held
#: when it was said, and an empty interval is a correction's mark; also how long a value no item held lasts before a
#: change from it that is the first thing said (:func:`ended_before`)
CHANGE_AFTER = timedelta(seconds=1)
#: attributes that name the same slot: a statement on one joins an open item on the other
ATTRIBUTE_FAMILIES: dict[str, tuple[str, ...]] = {"drink": ("morning drink",), "morning drink": ("drink",)}


@dataclass
class ExtractionReport:
    """What one extraction pass did, per user: items added / merged / superseded / ended, and the
    LLM sessions that failed as ``(session id, error)``."""

    added: int = 0
    merged: int = 0
    superseded: int = 0
    ended: int = 0
    units: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    deferred: int = 0  #: unread segments left to a later pass (``ItemWriter.extract``'s ``at_most``)


def same_person(user_id: str, subject: str) -> tuple[str, ...]:
    """The subjects under which ``subject``'s open items may be stored: ``subject``, and when it is the user id
    (:func:`item_subject`, in any case), the placeholders items of an older file name the same person by, so that "I
    moved to Porto" still supersedes an old "User's home city: Lisbon"."""
    own = subject.casefold() == user_id.rsplit("/", 1)[-1].casefold()
    return (subject, *PLACEHOLDER_SUBJECTS) if own else (subject,)


def stored_subject(store: MemoryStore, user_id: str, subject: str) -> str:
    """``subject`` as the user's items already spell it: subjects match case-insensitively, and the spelling of the
    first item stored under it stays (a new-user trial: a chat turn as "Leo" said "I live in Dublin", a turn of user
    id ``leo`` with no name "I moved to Galway", and both "Leo's home city" and "leo's home city" held); ``subject``
    itself when no item names it. The placeholders ``User`` / ``user`` are no spelling of anyone. One query with a
    row per distinct subject (:meth:`MemoryStore.item_subjects`), not the user's items (it runs for every statement)."""
    return first_spellings(store.item_subjects(user_id)).get(subject.casefold(), subject)


def item_id(user_id: str, subject: str, attribute: str, value: str, at: datetime) -> str:
    """The id of the item stating ``value`` said at ``at``: the same statement read twice gets the same id."""
    key = "|".join([user_id, subject, attribute, normalise(value), at.isoformat()])
    return "item-" + hashlib.sha1(key.encode()).hexdigest()[:16]


def end_old_employer(store: MemoryStore, user_id: str, open_items: list[MemoryItem], old_jobs: list[MemoryItem],
                     st: Statement, at: datetime, segment_id: str, report: ExtractionReport,
                     quit: bool = False, by: str | None = None) -> None:
    """A new occupation ends the open employer stated with the old one (at or before it), unless the statement
    names that employer or the new job is the old one's kind ("senior designer" after "designer": a promotion).
    A second new-user trial: "I got a job at Kruste & Krume" and "I work there as a baker", then "I'm now
    working as a nurse" left the bakery the employer "now". ``by``: the new job's item id, kept as the employer's
    ``superseded_by`` (as "likes jazz" supersedes "dislikes jazz"), so that forgetting the new job brings the
    employer back with the old job (:func:`timem.item_holding.as_held`; a trial brought back the nurse but left
    "Santa Maria hospital" ended at the forgotten teacher statement); ``None`` for a quit job, which has none."""
    changed = [o for o in old_jobs if quit or not mentions(st.value, o.value)]  # quit: "I quit my job as …"
    if not changed:
        return
    last = max(o.event_time for o in changed)
    for e in open_items:
        if e.attribute == "employer" and e.event_time <= last and not mentions(st.text, e.value):
            store.update_item(e.id, valid_to=max(at, e.valid_from), superseded_by=by)  # (not a forgotten job's)
            store.audit("item-ended", user_id, e.id, {"at": at.isoformat(), "segment": segment_id, "by": by,
                                                      "reason": f"the job changed to {st.value!r}"})
            report.ended += 1


def end_old_job(store: MemoryStore, user_id: str, open_items: list[MemoryItem], old_employers: list[MemoryItem],
                st: Statement, at: datetime, segment_id: str, report: ExtractionReport, by: str) -> None:
    """A change of employer ends the open job title at the new employer's start ``at`` (UTC), superseded by the new
    employer's item ``by`` (so that forgetting the new employer brings the job back, as :func:`end_old_employer` does
    the other way round), unless the turn states a job again ("I work at Google as a nurse": that job statement keeps
    or changes it) or names the old title ("I just started at Google, still nursing"). Found by trying it: "I work as a
    nurse at St James's", then "I just started at Google" left the nurse job open beside Google. A change needs an
    employer it ends (``old_employers``): a first employer ("I'm a nurse", then "I work at St James's") says where
    the job is done, and "I quit Google" (an end with no new employer) leaves the job, which outlives it."""
    if not old_employers or any(x.attribute == "job" for x in extract_statements(st.text)):
        return
    for j in open_items:
        if j.attribute == "job" and not mentions(st.text, j.value):
            store.update_item(j.id, valid_to=max(at, j.valid_from), superseded_by=by)
            store.audit("item-ended", user_id, j.id, {"at": at.isoformat(), "segment": segment_id, "by": by,
                                                      "reason": f"the employer changed to {st.value!r}"})
            report.ended += 1


def _earlier(store: MemoryStore, user_id: str, subject: str, attribute: str, at: datetime) -> list[MemoryItem]:
    """The items of ``attribute`` (and its family) on ``subject`` stated at or before ``at``."""
    family = (attribute, *ATTRIBUTE_FAMILIES.get(attribute, ()))
    return [i for who in same_person(user_id, subject) for i in store.items(user_id, subject=who)
            if i.attribute in family and i.event_time <= at]


def held_since(store: MemoryStore, user_id: str, earlier: list[MemoryItem], until: datetime) -> datetime:
    """Since when a value that held until ``until`` (UTC) held, when that is not said: from the end of the last of the
    ``earlier`` values of its attribute that ended by then, else from the start of the user's first session; a second
    (:data:`CHANGE_AFTER`) before ``until`` when neither is earlier (it held before, since when is not known; an
    empty interval would mark a correction, a value that never held: a trial)."""
    ends = [i.valid_to for i in earlier if i.valid_to is not None and i.valid_to <= until]
    starts = [s.started_at for s in store.sessions(user_id)]
    since = min(max(ends, default=min(starts, default=until)), until)
    return until - CHANGE_AFTER if since >= until else since


def restart_stale(store: MemoryStore, user_id: str, old: MemoryItem, until: datetime) -> None:
    """``old`` was said after the change that ends it at ``until`` (UTC) had happened: "I live in Dublin", then
    the same day "Actually I moved to Galway last week". It was out of date when said, so it held before the change:
    its ``valid_from`` moves back to :func:`held_since` (its ``event_time``, when it was said, stays)."""
    others = [i for i in _earlier(store, user_id, old.subject, old.attribute, old.event_time) if i.id != old.id]
    store.update_item(old.id, valid_from=held_since(store, user_id, others, until))


def ended_before(store: MemoryStore, embedder: Embedder, user_id: str, subject: str, attribute: str, st: Statement,
                 at: datetime, until: datetime, new_id: str | None, segment_id: str, confidence: float,
                 report: ExtractionReport) -> None:
    """A change from a value no item holds ("I switched from espresso to green tea", nothing known of espresso)
    writes that value as history: an item that held until the new one starts (``until``) and is superseded by
    it. Since when is not said: from the end of the last earlier value of the attribute, else from the start of
    the user's first session (a second before the change when it is the first thing said: an empty interval is a
    correction's mark). Nothing is written when an item
    of the attribute (or its family) already had that value (:func:`check_statement` saw the value in the turn,
    as ``ends``). A new-user trial: the switch recorded green tea only, nothing of espresso. An end said with no new
    value ("I don't drink espresso anymore", :attr:`Statement.held`) writes it the same way, ``new_id`` ``None``:
    it held until it was said and nothing superseded it."""
    old = st.replaces or ""
    earlier = _earlier(store, user_id, subject, attribute, at)
    if any(mentions(i.value, old) for i in earlier):
        return
    since = held_since(store, user_id, earlier, until)
    item = MemoryItem(id=item_id(user_id, subject, attribute, old, since), user_id=user_id, kind=st.kind,  # type: ignore[arg-type]
                      subject=subject, attribute=attribute, value=old, event_time=at, valid_from=since,
                      valid_to=until, confidence=confidence, source="stated", source_ids=[segment_id],
                      superseded_by=new_id)
    store.add_item(item, embedder.embed([f"{subject} {attribute}: {old}"])[0])
    store.audit("item-added", user_id, item.id, {"segment": segment_id, "kind": item.kind,
                                                 "source": "stated", "history": True})
    report.added += 1
    if new_id is None:
        store.audit("item-ended", user_id, item.id, {"at": at.isoformat(), "segment": segment_id})
        report.ended += 1
        return
    store.audit("item-superseded", user_id, item.id, {"by": new_id, "at": at.isoformat(), "correction": False})
    report.superseded += 1
