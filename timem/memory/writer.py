"""Writing memory items: extraction (rules or one LLM call per closed session), near-duplicate merge and
supersession.

* **Rules** (no LLM; :mod:`timem.memory.rules`): every new active L1 segment is read once (logged in
  ``memory_extractions`` with mode ``rules``), in event-time order; only people's turns (never a turn
  of role ``assistant`` or of a speaker who only speaks as the assistant).
* **LLM** (``Config.memory.memory_extractor`` ``llm``, or ``auto`` with an OpenAI-compatible endpoint; ``auto``
  reads with the rules when the LLM is the embedded model, which wrote false items: see
  ``bench/results/item-extraction.md``): one ``complete_json`` call per *closed* session
  (:mod:`timem.memory.llm_reader`: an unusable answer writes nothing for that session, is audited and returned in
  :attr:`ExtractionReport.failures`).
* **Merge**: a statement whose subject, attribute and normalised value (:func:`normalise`) equal an
  open item adds its segment to the item's sources (``item-merged``), confidence +0.1 (cap 1).
* **Supersession** (facts and preferences): a statement with another value on the same subject and
  attribute closes every open item there (``valid_to`` = the statement's event time, ``superseded_by``
  = the new item; audited ``item-superseded``); nothing is deleted. "Switched from X to Y" / "不喝X了"
  name the ended value; the new item takes the attribute of the open item holding it. When no item held the
  ended value, it is written as history, an item that held until the change and is superseded by the new one
  (:func:`timem.memory.history.ended_before`). A correction
  ("actually, ...") also starts its item at the corrected item's ``valid_from`` (the old value never
  held); a bare "actually, it's Braga" corrects the subject's latest open item. Only an item said within
  :data:`CORRECTION_WITHIN` is corrected, or one the correction names ("…, not Porto"); else it is a change.
  Events and plans only merge.

* **Grounding** (:mod:`timem.memory.grounding`): a statement is applied only when its attribute is in the
  vocabulary, its value is no placeholder and occurs in a first-person clause of its turn that speaks of the
  attribute (a trip is not a move); a refused one is audited ``item-ungrounded`` with the reason.
* **Subject**: an item is about the speaker who said it, by name ("Mia's likes: jazz"). A speaker who is only the
  placeholder of the user's role (``User``, the default name of ``remember`` and the chat; ``user``, a JSONL turn
  without ``speaker``) has no name: the item is then about the user id as written ("mia's likes: jazz"), whichever
  way the turns came in (:func:`item_subject`).
* Multi-valued attributes (:data:`timem.item_values.MULTI_VALUED`: hobbies, likes, dislikes) are not
  superseded by a new value, only ended ("I stopped running"); a like supersedes the dislike of the same value
  and the other way round (:data:`timem.memory.grounding.OPPOSITES`).

Every statement of one unit (segment or session) is applied in one transaction with its log row. The history written
beside a statement (a value no item held, the employer a job change ends) is :mod:`timem.memory.history`; when a
value starts to hold, :mod:`timem.memory.dating`.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any

from timem.config import Config
from timem.embed.protocol import Embedder
from timem.item_holding import SUPERSEDING_KINDS, as_held
from timem.item_values import MULTI_VALUED, item_subject, mentions, normalise
from timem.llm.protocol import LLMClient
from timem.memory.dating import dated_period
from timem.memory.forget import forget_request
from timem.memory.grounding import OPPOSITES, check_statement
from timem.memory.history import (
    ATTRIBUTE_FAMILIES,
    CHANGE_AFTER,
    ExtractionReport,
    end_old_employer,
    end_old_job,
    ended_before,
    item_id,
    restart_stale,
    same_person,
    stored_subject,
)
from timem.memory.llm_reader import read_closed_sessions
from timem.memory.rules import Statement, extract_statements
from timem.models import Level, MemoryItem, Role, Turn
from timem.progress import Progress, no_progress
from timem.store.ports import MemoryStore

__all__ = ["CORRECTION_WITHIN", "OWN_ENDS", "ExtractionReport", "ItemWriter"]

#: how long after a value was said a correction that does not name it may still correct it ("I live in Cardiff", then
#: "actually, I live in Bristol" or "scratch that, Bristol" the same day): a correction takes back what was just said.
#: Later, the same words are news of a change (a month on, "scratch that, I live in Bristol again" erased Cardiff's
#: month as a value that never held); a correction that names the value it corrects ("Actually, I moved to Braga, not
#: Porto") corrects it at any distance
CORRECTION_WITHIN = timedelta(hours=24)
#: attributes whose end said with no new value ends only an item of that attribute: "I quit Google" ends the employer
#: Google, "I moved out of Madrid" the home city Madrid (:mod:`timem.memory.work`, ``rules._HOME_OVER``)
OWN_ENDS = ("employer", "home city")
#: segments the rules read per transaction: a recall's few in one commit, a file never read in bounded ones
RULES_SEGMENTS_PER_COMMIT = 64


class ItemWriter:
    """Extracts and writes the memory items of a store (see the module doc).

    Args:
        llm: used when ``config.memory.memory_extractor`` allows it; ``None`` = rules.
    """

    def __init__(self, store: MemoryStore, embedder: Embedder, llm: LLMClient | None, config: Config) -> None:
        self.store, self.embedder, self.llm, self.config = store, embedder, llm, config
        #: held while the rules read a user's segments: a recall's read-your-writes
        #: (:meth:`timem.engine_queue.ConsolidationQueue.read_items`) and the queue worker read them one after the
        #: other, never the same segment twice (each decides what is left to read under it)
        self._rules_lock = threading.RLock()

    def reading(self) -> AbstractContextManager[Any]:
        """The lock the rules hold while they read a user's segments (re-entrant). A caller that wants the reading
        inside its own transaction takes it **before** the transaction (the order every reader keeps: this lock,
        then the store's writer; never call :meth:`extract` inside a transaction without it)."""
        return self._rules_lock

    @property
    def mode(self) -> str:
        """``"llm"`` or ``"rules"``: the configured extractor; ``auto`` = llm with an OpenAI-compatible endpoint,
        rules with the embedded model (it wrote false items: ``bench/results/item-extraction.md``) or no LLM."""
        extractor = self.config.memory.memory_extractor
        if extractor == "rules" or self.llm is None:
            return "rules"
        if extractor == "auto" and self.config.llm.llm_backend != "openai":
            return "rules"
        return "llm"

    def extract(self, user_id: str, progress: Progress = no_progress, *, at_most: int | None = None
                ) -> ExtractionReport:
        """Read every not yet read unit of ``user_id`` (see the module doc); returns the report. ``progress`` wraps
        the LLM's sessions (one call each), so that the studio's background job shows them and can stop between
        two (the sessions not yet read stay due); the rules take seconds and are not wrapped.

        ``at_most``: with the rules, read nothing when more than that many segments are unread (a recall reads a
        queued write's few; a file whose items were never read is the worker's, not a request's: 354 s at 100k
        segments); the report's ``deferred`` says how many.

        Raises:
            ConfigError: ``memory_extractor = "llm"`` without an LLM (via :attr:`mode` it falls back only
                for ``auto``; an explicit ``llm`` is checked by the engine).
        """
        report = ExtractionReport()
        if self.mode == "rules":
            with self._rules_lock:
                self._extract_rules(user_id, report, at_most)
        else:
            assert self.llm is not None  # (mode "llm" needs one)
            read_closed_sessions(self.store, self.llm, self.config, user_id, report, progress, self.apply)
        return report

    # ------------------------------------------------------------------ rules
    def _extract_rules(self, user_id: str, report: ExtractionReport, at_most: int | None = None) -> None:
        # targeted reads: a recall runs this (read_items); with at_most, one id more than it says whether to defer
        unread = self.store.unread_segments(user_id, "rules", None if at_most is None else at_most + 1)
        if not unread:
            return
        if at_most is not None and len(unread) > at_most:
            report.deferred = len(unread)  # at least this many
            return
        todo = sorted(self.store.nodes(user_id, Level.SEGMENT, ids=unread), key=lambda n: (n.span_start, n.id))
        turns = {t.id: t for t in self.store.turns(user_id, ids=[t for n in todo for t in n.source_turn_ids])}
        roles = self.store.speaker_roles(user_id)
        assistants = {s for s, r in roles if r == Role.ASSISTANT} - {s for s, r in roles if r != Role.ASSISTANT}
        for start in range(0, len(todo), RULES_SEGMENTS_PER_COMMIT):
            with self.store.transaction():  # one commit per batch (a commit syncs the write-ahead log: ~2-6 ms)
                for seg in todo[start:start + RULES_SEGMENTS_PER_COMMIT]:
                    found: list[tuple[Turn, Statement]] = []
                    for tid in seg.source_turn_ids:
                        t = turns.get(tid)
                        if t is None or t.role == Role.ASSISTANT or t.speaker in assistants or forget_request(t.text):
                            continue
                        found += [(t, s) for s in extract_statements(t.text)]
                    for t, s in found:
                        self.apply(user_id, item_subject(t), s, t.event_time, seg.id, source="stated",
                                   confidence=0.8, report=report)
                    self.store.mark_extracted(user_id, seg.id, "rules", len(found))
                    report.units += 1

    def _period(self, user_id: str, st: Statement, at: datetime) -> tuple[datetime, datetime] | None:
        """The first past period a relative date of the clause stating ``st`` (said at ``at``, UTC) names, in the
        user's zone, as ``(start, end)`` UTC (:func:`timem.memory.dating.dated_period`); ``None``: none."""
        return dated_period(st.text, st.replaces if st.ends_only and st.replaces else st.value, at,
                            self.config.time.tz_for(user_id))

    def _since(self, user_id: str, st: Statement, at: datetime) -> datetime:
        """When ``st``, said at ``at`` (UTC), starts to hold: the start of :meth:`_period`, else ``at``."""
        period = self._period(user_id, st, at)
        return period[0] if period else at

    # ------------------------------------------------------------------ merge and supersession
    def apply(self, user_id: str, subject: str, st: Statement, at: datetime, segment_id: str, *, source: str,
              confidence: float, report: ExtractionReport | None = None) -> MemoryItem | None:
        """Apply one statement said at ``at`` (UTC-aware) in L1 segment ``segment_id`` (see the module doc).
        Returns the item written or merged into, ``None`` when it only ended an item or had no target.
        Call inside a transaction."""
        report = report if report is not None else ExtractionReport()
        subject = stored_subject(self.store, user_id, subject)  # "leo" is "Leo": one person, one home city
        why = check_statement(st.attribute, st.value, st.text, ends=st.replaces)
        if why is not None:
            self.store.audit("item-ungrounded", user_id, None, {"segment": segment_id, "attribute": st.attribute,
                                                                "value": st.value, "reason": why})
            return None
        # as held: a value whose successor was forgotten is open again until the next value that stays (a trial:
        # "I quit my job at Acme" after forgetting "I now work at Brightly" left Acme the employer "now")
        open_items = [i for i in as_held([i for who in same_person(user_id, subject)
                                          for i in self.store.items(user_id, subject=who)]) if i.is_open]
        # items stated after this statement (an older session read later, e.g. by the LLM after the rules):
        # it never closes them; it goes into its chain before them instead (below)
        later = [i for i in open_items if i.event_time > at]
        open_items = [i for i in open_items if i.event_time <= at]
        attribute, kind = st.attribute, st.kind
        ended = [i for i in open_items if st.replaces and mentions(i.value, st.replaces)
                 # a habit's end or switch ("I don't drink espresso anymore") ends no opinion ("likes espresso")
                 and (st.attribute is None or st.attribute in OPPOSITES or i.attribute not in OPPOSITES)
                 # "I quit Google", "I moved out of Madrid" end that employer or home city only
                 and not (st.ends_only and st.attribute in OWN_ENDS and i.attribute != st.attribute)]
        if ended and (attribute is None or not any(i.attribute == attribute for i in ended)):
            attribute = ended[-1].attribute
        if attribute is not None and not any(i.attribute == attribute for i in open_items):
            attribute = next((i.attribute for i in open_items if i.attribute in ATTRIBUTE_FAMILIES.get(attribute, ())),
                             attribute)
        corrected: MemoryItem | None = None
        correction = st.correction
        if correction:
            pool = [i for i in open_items if attribute is None or i.attribute == attribute]
            corrected = max(pool, key=lambda i: (i.event_time, i.created_at), default=None)
            if corrected is not None and attribute is None:
                attribute, kind = corrected.attribute, corrected.kind
            if corrected is not None and at - corrected.event_time > CORRECTION_WITHIN and not mentions(
                    st.text, corrected.value):  # too late to take it back, and not named: news of a change
                correction, corrected = False, None
        if st.ends_only:  # "I used to love jazz" ends "likes jazz", not "dislikes jazz"
            # "I left Google last month": it ended when last month began, but not before it was last said to hold,
            # unless it was said after that whole period (out of date when said, as a change's: see below)
            period = self._period(user_id, st, at)
            since = period[0] if period else at
            for i in (i for i in ended if i.attribute != OPPOSITES.get(st.attribute or "")):
                end = since if since > i.event_time else min(at, i.event_time + CHANGE_AFTER)
                out_of_date = period is not None and period[1] <= i.event_time
                if out_of_date and i.valid_from >= since:  # it held before the end (since when: unsaid)
                    restart_stale(self.store, user_id, i, since)
                end = since if out_of_date else max(end, i.valid_from)
                self.store.update_item(i.id, valid_to=end, superseded_by=None)  # (a forgotten one)
                self.store.audit("item-ended", user_id, i.id, {"at": at.isoformat(), "segment": segment_id})
                report.ended += 1
            if attribute == "job":  # "I quit my job as a nurse" ends the employer stated with it (a trial)
                end_old_employer(self.store, user_id, open_items, ended, st, at, segment_id, report, quit=True)
            if st.held and not ended and attribute is not None:  # "I don't drink espresso anymore", none held
                ended_before(self.store, self.embedder, user_id, subject, attribute, st, at, since, None, segment_id,
                             confidence, report)
            return None
        if attribute is None:
            self.store.audit("item-skipped", user_id, None, {"segment": segment_id,
                                                             "reason": "a correction with nothing to correct"})
            return None
        same = [i for i in open_items if i.attribute == attribute]
        same_later = [i for i in later if i.attribute == attribute]  # a restatement of a newer value merges into it
        # near-duplicate: the same value, or a less specific restatement of it ("tea" for "green tea")
        dup = next((i for i in same + same_later if normalise(i.value) == normalise(st.value)), None) or next(
            (i for i in same + same_later if mentions(i.value, st.value)), None)
        if dup is not None:
            if segment_id not in dup.source_ids:
                self.store.update_item(dup.id, source_ids=[*dup.source_ids, segment_id],
                                       confidence=min(1.0, dup.confidence + 0.1))
                self.store.audit("item-merged", user_id, dup.id, {"segment": segment_id})
                report.merged += 1
            return self.store.item(dup.id)
        if st.background:  # "Ever since I moved to Porto, …": an earlier change, not one made when it was said
            self.store.audit("item-skipped", user_id, None, {"segment": segment_id, "attribute": attribute,
                                                             "value": st.value, "reason": "a since-clause names an "
                                                             "earlier change, which it does not date"})
            return None
        new_id = item_id(user_id, subject, attribute, st.value, at)
        known = next(iter(self.store.items(ids=[new_id], status=None)), None)
        if known is not None:  # the same statement read again (e.g. by the rules after the LLM read it): no new item
            if segment_id not in known.source_ids:
                self.store.update_item(known.id, source_ids=[*known.source_ids, segment_id])
            return known
        closing = same if kind in SUPERSEDING_KINDS and attribute not in MULTI_VALUED else []
        closing += [i for i in ended if i not in closing]
        # a dislike also ends a favourite of its value ("My favourite band is Radiohead", then "I hate Radiohead now")
        closing += [i for i in open_items if (i.attribute == OPPOSITES.get(attribute) or (
                    attribute == "dislikes" and i.attribute.startswith("favourite "))) and i not in closing
                    and (mentions(i.value, st.value) or mentions(st.value, i.value))]
        stale: set[str] = set()
        if corrected is not None and corrected.attribute == attribute:
            valid_from = corrected.valid_from
        else:  # "I moved to Braga last week": it holds since last week's Monday, not since it was said
            period = self._period(user_id, st, at) if kind in SUPERSEDING_KINDS else None
            valid_from = period[0] if period else at
            # ... and what it ends that was said after that whole period was out of date when said ("I live in
            # Dublin", then the same day "Actually I moved to Galway last week": Galway from last week's Monday,
            # Dublin until then: Galway started a second after Dublin was said, and Dublin held one second)
            stale = {i.id for i in closing if period is not None and period[1] <= i.event_time}
            # ... but a change is not a correction: what it ends held when it was said ("I live in Porto" on
            # 1 March, then on 30 April "I relocated to Madrid last month": Madrid from just after 1 March)
            stated = [i.event_time for i in closing if i.event_time < at and i.id not in stale]
            if stated and valid_from <= max(stated):
                valid_from = min(at, max(stated) + CHANGE_AFTER)
            # ... also when it was said at the same time ("I drink espresso every day. I switched from espresso to
            # green tea.", or two turns of one time): an empty interval is a correction's mark, a value that never
            # held (a new-user trial read "corrected: was espresso" for a switch)
            opened = [i.valid_from for i in closing if i.id not in stale]
            if opened and valid_from <= max(opened):
                valid_from = max(opened) + CHANGE_AFTER
        item = MemoryItem(id=new_id, user_id=user_id, kind=kind, subject=subject, attribute=attribute,  # type: ignore[arg-type]
                          value=st.value, event_time=at, valid_from=valid_from, confidence=confidence,
                          source=source, source_ids=[segment_id])  # type: ignore[arg-type]
        vec = self.embedder.embed([f"{subject} {attribute}: {st.value}"])[0]
        self.store.add_item(item, vec)
        for old in closing:  # a corrected item never held: its interval closes where it opened
            held = corrected is not None and old.id == corrected.id
            end = old.valid_from if held else max(valid_from, old.valid_from)
            if old.id in stale and old.valid_from >= valid_from:  # it held before the change (since when: unsaid)
                restart_stale(self.store, user_id, old, valid_from)
                end = valid_from
            self.store.update_item(old.id, valid_to=end, superseded_by=new_id)
            self.store.audit("item-superseded", user_id, old.id, {"by": new_id, "at": at.isoformat(),
                                                                  "correction": correction})
            report.superseded += 1
        if not ended and st.replaces and kind in SUPERSEDING_KINDS and not correction:
            ended_before(self.store, self.embedder, user_id, subject, attribute, st, at, valid_from, new_id,
                         segment_id, confidence, report)
        if attribute == "job":
            end_old_employer(self.store, user_id, open_items, [o for o in closing if o.attribute == "job"], st,
                             valid_from, segment_id, report, by=new_id)
        if attribute == "employer":  # a new employer ends the old job title, unless the turn states one
            end_old_job(self.store, user_id, open_items, [o for o in closing if o.attribute == "employer"], st,
                        valid_from, segment_id, report, by=new_id)
        self.store.audit("item-added", user_id, new_id, {"segment": segment_id, "kind": kind, "source": source})
        report.added += 1
        if kind in SUPERSEDING_KINDS and attribute not in MULTI_VALUED:
            chain = [i for i in self.store.items(user_id, subject=subject)
                     if i.attribute == attribute and i.id != new_id]
            nxt = min((i for i in chain if i.event_time > at), key=lambda i: (i.event_time, i.created_at), default=None)
            if nxt is not None:  # read out of order: it goes into the chain between what held before and after
                for old in chain:  # the value that held at `at` (already closed by a newer one) ends here now
                    if old.event_time <= at and old.valid_to is not None and old.valid_from <= at < old.valid_to:
                        self.store.update_item(old.id, valid_to=max(at, old.valid_from), superseded_by=new_id)
                        self.store.audit("item-superseded", user_id, old.id, {"by": new_id, "at": at.isoformat(),
                                                                              "read_out_of_order": True})
                        report.superseded += 1
                self.store.update_item(new_id, valid_to=max(nxt.valid_from, valid_from), superseded_by=nxt.id)
                self.store.audit("item-superseded", user_id, new_id, {"by": nxt.id, "at": nxt.event_time.isoformat(),
                                                                      "correction": False, "read_out_of_order": True})
                report.superseded += 1
                return self.store.item(new_id)
        return item
