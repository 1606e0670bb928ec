"""How long a value holds once what replaced it is forgotten: the items "as held".

Supersession (:mod:`timem.memory.writer`) closes an item of a single-valued attribute at the next value's start
(``valid_to``, ``superseded_by``). When that successor is forgotten (soft-deleted, or gone), the item holds again,
but not forever: it ends where the next value that stays begins (a new-user trial: Manchester -> Bristol -> 上海 ->
Bristol -> Cardiff, then "forget that I live in Bristol" left Manchester, 上海 and Cardiff all holding "now").

* :func:`single_valued`: the items supersession closes (facts and preferences of an attribute other than
  :data:`timem.item_values.MULTI_VALUED`).
* :func:`as_held`: the items with such a reopened item ended at the next active item of its subject and attribute
  (``valid_to`` = that item's ``valid_from``, ``superseded_by`` = its id), or open when none follows. The stored rows
  are unchanged, so restoring the forgotten successor supersedes it again. Multi-valued attributes (likes, hobbies,
  dislikes) reopen with no end, as before. An employer also ends where a later job change that stays begins, as the
  writer's :func:`timem.memory.history.end_old_employer` ends it (:func:`_job_change_after`): "I work as a nurse at
  Acme", "I started working as a teacher", "I started working as a baker", then forgetting the teacher job left Acme
  the employer "now" beside the baker job. A job likewise ends where a later change of employer that stays begins,
  as :func:`timem.memory.history.end_old_job` ends it (:func:`_employer_change_after`): "I work as a nurse at St
  James's", "I just started at Google", "I started a new job at Meta", then forgetting Google left nurse the job
  "now" beside Meta.
* :func:`open_twice`: the subjects and single-valued attributes with more than one open item (``timem check``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from timem.item_values import MULTI_VALUED, mentions
from timem.models import MemoryItem

#: the item kinds a new value supersedes (events and plans only merge); the writer's rule too
SUPERSEDING_KINDS = ("fact", "preference")


def single_valued(item: MemoryItem) -> bool:
    """Whether a new value of ``item``'s subject and attribute closes it (one value at a time: a home city, a job)."""
    return item.kind in SUPERSEDING_KINDS and item.attribute not in MULTI_VALUED


def _key(item: MemoryItem) -> tuple[str, str, str]:
    return item.user_id, item.subject, item.attribute


def _job_change_after(employer: MemoryItem, jobs: list[MemoryItem]) -> MemoryItem | None:
    """The first job item of ``jobs`` (the active ``job`` items of the employer's subject, ordered by ``valid_from``,
    then ``event_time``) that ends ``employer`` as :func:`timem.memory.history.end_old_employer` does: it starts after
    the employer, the job it follows was stated with or after the employer, it is no promotion of that job ("senior
    designer" after "designer") and it was not stated with the employer (a statement naming the employer merges into
    it: the same segment among its sources); ``None`` when none does."""
    for old, new in zip(jobs, jobs[1:], strict=False):
        if ((new.valid_from, new.event_time) > (employer.valid_from, employer.event_time)
                and employer.event_time <= old.event_time and not mentions(new.value, old.value)
                and not set(new.source_ids) & set(employer.source_ids)):
            return new
    return None


def _employer_change_after(job: MemoryItem, employers: list[MemoryItem], job_sources: set[str]) -> MemoryItem | None:
    """The first employer of ``employers`` (the active ``employer`` items of the job's subject, ordered by
    ``valid_from``, then ``event_time``) that ends ``job`` as :func:`timem.memory.history.end_old_job` does: it follows
    another employer (a change, not a first employer), starts after the job and another value, and its statement named
    no job (none of its segments is a source of a job item, ``job_sources``: "I work at Google as a nurse" adds its
    segment to the nurse); ``None`` when none does."""
    for old, new in zip(employers, employers[1:], strict=False):
        if ((new.valid_from, new.event_time) > (job.valid_from, job.event_time)
                and not mentions(new.value, old.value) and not set(new.source_ids) & job_sources):
            return new
    return None


def as_held(items: list[MemoryItem]) -> list[MemoryItem]:
    """``items`` (any statuses, in their order) with each active item whose successor is not active ended at the next
    active item of its subject and single-valued attribute (by ``valid_from``, then ``event_time``), or open (with
    ``valid_to`` and ``superseded_by`` cleared) when none follows; the others as given. An ``employer`` ends at the
    next job change instead when that comes first (:func:`_job_change_after`). Pass all of a user's active items (or
    all of one subject's): the next value is looked for among the active ones given."""
    active = [i for i in items if i.status == "active"]
    ids = {i.id for i in active}
    chains: dict[tuple[str, str, str], list[MemoryItem]] = defaultdict(list)
    for i in active:
        if single_valued(i):
            chains[_key(i)].append(i)
    out = []
    for i in items:
        if i.status != "active" or not i.superseded_by or i.superseded_by in ids:
            out.append(i)
            continue
        after = [n for n in chains.get(_key(i), []) if single_valued(i) and n.id != i.id
                 and (n.valid_from, n.event_time) > (i.valid_from, i.event_time)]
        nxt = min(after, key=lambda n: (n.valid_from, n.event_time), default=None)
        if i.attribute == "employer" and single_valued(i):  # a new job ends the employer held with the old one
            jobs = sorted(chains.get((i.user_id, i.subject, "job"), []), key=lambda n: (n.valid_from, n.event_time))
            change = _job_change_after(i, jobs)
            if change is not None and (nxt is None or (change.valid_from, change.event_time) < (nxt.valid_from,
                                                                                                  nxt.event_time)):
                nxt = change
        if i.attribute == "job" and single_valued(i):  # a change of employer ends the job held with the old one
            employers = sorted(chains.get((i.user_id, i.subject, "employer"), []),
                               key=lambda n: (n.valid_from, n.event_time))
            sources = {s for j in chains.get(_key(i), []) for s in j.source_ids}
            change = _employer_change_after(i, employers, sources)
            if change is not None and (nxt is None or (change.valid_from, change.event_time) < (nxt.valid_from,
                                                                                                  nxt.event_time)):
                nxt = change
        out.append(i.model_copy(update={"valid_to": nxt.valid_from if nxt else None,
                                        "superseded_by": nxt.id if nxt else None}))
    return out


def open_twice(items: Iterable[MemoryItem]) -> dict[tuple[str, str, str], list[MemoryItem]]:
    """The ``(user_id, subject, attribute)`` of a single-valued attribute holding more than one open active item
    of ``items`` (as held: :func:`as_held` first), with those items."""
    held: dict[tuple[str, str, str], list[MemoryItem]] = defaultdict(list)
    for i in items:
        if i.status == "active" and i.is_open and single_valued(i):
            held[_key(i)].append(i)
    return {k: v for k, v in held.items() if len(v) > 1}
