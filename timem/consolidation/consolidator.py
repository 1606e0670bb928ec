"""Consolidation: turns -> L1 segments, and children -> L2 session / L3 day / L4 week / L5 profile.

Scheduling (TiMem §3.2, "consolidation when the window closes"), all in *event time*:

* L1 is written online for every complete exchange; in an open session the last exchange waits
  until it has a reply or the session closes (:mod:`timem.consolidation.segment_writer`).
* L2 when its session closes: explicitly ended, a later session of the user exists, the user's
  latest event is ``session_idle_timeout_minutes`` past its last turn, or a flush.
* L3/L4/L5 when their calendar window closes: the user's latest event lies at or after the window
  end, or a flush.
* A window is (re)consolidated when it has no active node, when its node is stale, or when the
  set of its active children changed (a late session, an edit, a delete). The old node is marked
  ``superseded``; the new one becomes the parent of the children, so the change climbs level by
  level in the same pass. A node whose children are all gone is marked ``deleted`` (no
  placeholder memories).
* Idempotent and resumable: every node is written in its own transaction and every decision is
  derived from the store, so a rerun after an interruption continues where it stopped.

Each level's prompt sees its children (dated) and the ``history_k`` (3) latest nodes of the same
level before the window. Every answer is grounded sentence by sentence against those inputs
(:mod:`timem.consolidation.grounding`: copied history and unsupported sentences are dropped and
logged in the ``audit`` table as ``grounding-drop``); if nothing survives, the level is asked once
more without history (the node's ``history_ids`` are then empty), and if nothing survives again the
call fails with an :class:`LLMError`: no placeholder is written.

**Modes** (per level, ``Config.consolidation.mode_for``; recorded as ``MemoryNode.mode``): ``abstractive`` is the
LLM summary above; ``extractive`` selects the children's most informative sentences verbatim
(:mod:`timem.consolidation.extractive`, no LLM, ``model_id = "extractive"``); ``hybrid`` is the
extractive content under a one-line LLM title (:mod:`timem.prompts.title`), grounded like a summary
-- if the title is dropped or the answer is unusable, the node keeps the extractive content alone
(``model_id = "extractive"``) and the audit log says why (``hybrid-title-missing``). A window that
already has a node is re-consolidated in that node's own mode, whatever the configuration says now.
Without an LLM, windows whose mode needs one (hybrid, abstractive) are left as they are.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from timem.config import Config
from timem.consolidation import extractive
from timem.consolidation.abstractive import LEVEL_PROMPTS, hybrid_title, summarise
from timem.consolidation.profile_facts import FACTS_SEPARATOR, facts_as_of
from timem.consolidation.segment_writer import SegmentWriter, node_id
from timem.embed.protocol import Embedder
from timem.errors import ConsolidationIncomplete, UnusableAnswerError
from timem.item_holding import as_held
from timem.item_values import item_subject
from timem.llm.protocol import LLMClient
from timem.models import CONSOLIDATION_MODES, Level, MemoryNode, NodeMode, NodeStatus, Role, TimeSpan
from timem.progress import Progress, no_progress
from timem.prompts import title
from timem.store.ports import MemoryStore
from timem.tree.windows import check_containment, parent_span, parent_window

NEEDS_LLM = ("hybrid", "abstractive")  #: consolidation modes that call the LLM


class Consolidator(SegmentWriter):
    """Writes the Temporal Memory Tree of one store: the L1 segments (:class:`SegmentWriter`'s methods) and L2-L5.

    Args:
        llm: needed for hybrid and abstractive L2–L5 and for ``l1_mode="llm"``; with ``None``, verbatim L1
            and extractive L2–L5 are written, and windows in the other modes wait.
    """

    def __init__(self, store: MemoryStore, embedder: Embedder, llm: LLMClient | None, config: Config) -> None:
        super().__init__(store, embedder, llm, config)
        self._speakers: dict[str, list[str]] = {}  #: user -> speaker names, per consolidate() call
        self._assistant_names: dict[str, list[str]] = {}  #: user -> assistant speaker names, likewise
        self._sentence_vecs = extractive.EmbeddingCache(embedder)  #: extractive units, shared by all levels

    # ------------------------------------------------------------------ L2..L5
    def consolidate(self, user_id: str, *, flush: bool = False, upper_levels: bool = True,
                    progress: Progress = no_progress, l1_pass: bool = True) -> list[MemoryNode]:
        """Write every due L1..L5 node of ``user_id``; returns the new nodes in write order.

        ``upper_levels=False`` writes only the L1 segments (no LLM call in verbatim mode); a later
        call with ``upper_levels=True`` consolidates L2..L5 of the windows that are due by then, each in
        its mode (:meth:`_mode`); without an LLM, windows whose mode needs one are skipped (they stay due).
        ``l1_pass=False``: no L1 pass (the caller's first call, ``upper_levels=False``, just wrote and showed the
        segments: reading every session again found nothing to write).

        Raises:
            ConsolidationIncomplete: the model's answer for some window was unusable
                (:class:`UnusableAnswerError`); every other due window was still written (it is in
                ``.written``), each failure is in the audit log as ``consolidation-failed``, and the
                failed windows stay due. Other errors (e.g. an unreachable endpoint) propagate at once.
        """
        written: list[MemoryNode] = []
        sessions = self.store.sessions(user_id)
        if not sessions:
            return written
        watermark = max(s.last_event_at for s in sessions)
        closed = self._closed(sessions, watermark, flush)
        todo = self._sessions_with_todo(user_id, closed) if l1_pass else set()
        for s in progress(sessions, "L1 segments, by session", len(sessions)) if l1_pass else ():
            if s.session_id in todo:
                written += self.write_segments(user_id, s.session_id, closed=closed[s.session_id])
        if not upper_levels:
            return written
        self._speakers.pop(user_id, None)  # speakers may have been added since the last call
        self._assistant_names.pop(user_id, None)
        failures: list[tuple[int, str, str]] = []
        for level in (Level.SESSION, Level.DAY, Level.WEEK, Level.PROFILE):
            due = self._due(user_id, level, closed, watermark, flush)
            if self.llm is None:  # windows whose mode needs an LLM stay as they are (and due)
                due = [d for d in due if self._mode(level, d[3]) not in NEEDS_LLM]
            if due and level >= Level.DAY:  # the zone its days, weeks and months are cut in (`timem check`)
                self.store.calendar_zone(self.config.time.timezone)
            for key, window, children, existing in progress(due, f"L{int(level)} {level.name.lower()}", len(due)):
                try:
                    written.append(self._write_parent(user_id, level, key, window, children, existing,
                                                      self._mode(level, existing)))
                except UnusableAnswerError as exc:  # this window only; recorded, reported below, stays due
                    failures.append((int(level), key, str(exc)))
                    self.store.audit("consolidation-failed", user_id, existing.id if existing else None, {
                        "level": int(level), "window": key, "children": [c.id for c in children],
                        "error": str(exc)})
        if failures:
            raise ConsolidationIncomplete(failures, written)
        return written


    def _mode(self, level: Level, existing: MemoryNode | None) -> NodeMode:
        """The mode a window is (re)consolidated in: its existing node's own, else the configured one."""
        if existing is not None and existing.mode in CONSOLIDATION_MODES:
            return existing.mode
        return self.config.consolidation.mode_for(level)

    def _due(self, user_id: str, level: Level, closed: dict[str, bool], watermark: datetime, flush: bool
             ) -> list[tuple[str, TimeSpan | None, list[MemoryNode], MemoryNode | None]]:
        """Windows at ``level`` to (re)consolidate: (key, calendar window or None, children, existing node)."""
        # the children's ids, sessions and starts only (their text is read for the due windows alone, below)
        groups: dict[str, tuple[TimeSpan | None, bool, list[str]]] = {}
        for child_id, session_id, start in self.store.node_spans(user_id, int(level) - 1):
            if level == Level.SESSION:
                key, window = f"session:{session_id}", None
                is_closed = closed.get(session_id or "", False)
            else:
                w = parent_window(level, start, self.tz)
                key, window, is_closed = w.key, w.span, flush or watermark >= w.end
            groups.setdefault(key, (window, is_closed, []))[2].append(child_id)
        at_level = self.store.nodes(user_id, int(level))  # active, in conversation order: one query, not one a window
        by_key: dict[str, MemoryNode] = {}
        for node in at_level:
            by_key.setdefault(node.window_key, node)  # a window's first active node, in conversation order
        wanted: list[tuple[str, TimeSpan | None, list[str], MemoryNode | None]] = []
        for key, (window, is_closed, child_ids) in groups.items():
            existing = by_key.get(key)
            if existing is None and not is_closed:
                continue  # the window is still open; a window consolidated once is kept up to date
            if existing and not existing.stale and set(existing.child_ids) == set(child_ids):
                continue
            wanted.append((key, window, child_ids, existing))
        full = {n.id: n for n in self.store.nodes(user_id, int(level) - 1,
                                                  ids=[i for w in wanted for i in w[2]])} if wanted else {}
        due = [(key, window, kids, existing) for key, window, child_ids, existing in wanted
               if (kids := [full[i] for i in child_ids if i in full])]  # (a child erased meanwhile is left out)
        for orphan in at_level:
            if orphan.window_key not in groups and not any(
                    c.status == NodeStatus.ACTIVE for c in self.store.nodes(ids=orphan.child_ids, status=None)):
                self.store.update_node(orphan.id, status=NodeStatus.DELETED)
                self.store.audit("cascade-delete", user_id, orphan.id, {"reason": "no active children"})
        return sorted(due, key=lambda d: min(c.span_start for c in d[2]))

    def _write_parent(self, user_id: str, level: Level, key: str, window: TimeSpan | None,
                      children: list[MemoryNode], existing: MemoryNode | None, mode: NodeMode = "abstractive"
                      ) -> MemoryNode:
        """Write the node of one window in ``mode`` (superseding ``existing``); see the module doc.

        Raises:
            UnusableAnswerError: abstractive only: no usable, grounded answer (nothing is written).
            LLMError: hybrid / abstractive without an LLM, or the LLM call itself failed.
        """
        span = parent_span(window, [c.span for c in children])
        check_containment(span, [c.span for c in children], what=f"L{int(level)} {key}")
        audits: list[tuple[str, dict[str, Any]]] = []
        history: list[MemoryNode] = []
        if mode == "abstractive":
            llm = self._need_llm(f"L{int(level)} consolidation")
            k = self.config.consolidation.history_k
            history = [h for h in self.store.history(user_id, level, span.start, k + 1)
                       if existing is None or h.id != existing.id][-k:]
            people = self._participants(user_id, span) if level == Level.PROFILE else []
            content, history, dropped = summarise(llm, user_id, level, key, children, history, self.tz,
                                                  participants=people, assistants=self._assistants(user_id))
            model_id, version = llm.model_id, LEVEL_PROMPTS[level].version
            if dropped:
                audits.append(("grounding-drop", {"level": int(level), "window": key, "dropped": [
                    {"sentence": t, "reason": r} for t, r in dropped]}))
        else:
            content = extractive.extract(
                level, children, self._sentence_vecs, self.config.consolidation.extractive_cap(level), self.tz,
                speakers=self._user_speakers(user_id), assistants=self._assistants(user_id),
                participants=self._participants(user_id, span) if level == Level.PROFILE else ())
            model_id, version = extractive.MODEL_ID, extractive.PROMPT_VERSION
            if not content.strip():  # children without any text line: nothing to select, no placeholder
                raise UnusableAnswerError(f"L{int(level)} extractive consolidation of {key}: the children hold no "
                                          "text to select; nothing was written. Edit or erase the empty children.")
            if mode == "hybrid":
                llm = self._need_llm(f"L{int(level)} hybrid consolidation")
                head, problem = hybrid_title(llm, user_id, level, content)
                if head:
                    content = f"{head}\n\n{content}"
                    model_id, version = llm.model_id, f"{extractive.PROMPT_VERSION}+{title.PROMPT_VERSION}"
                if problem:
                    audits.append(("hybrid-title-missing" if not head else "grounding-drop",
                                   {"level": int(level), "window": key, "model": llm.model_id, **problem}))
        if level == Level.PROFILE:  # issue 14: the items that hold at its end
            content = self.with_profile_facts(user_id, span, content)
        vec = self._sentence_vecs.embed([content])[0]  # cached: an L3 of one session repeats its L2
        node = MemoryNode(
            id=node_id(user_id, level, key, [c.id for c in children] + [content, existing.id if existing else ""]),
            user_id=user_id, level=level,
            window_key=key, session_id=children[0].session_id if level == Level.SESSION else None,
            span_start=span.start, span_end=span.end, content=content, child_ids=[c.id for c in children],
            history_ids=[h.id for h in history], model_id=model_id, prompt_version=version, mode=mode)
        with self.store.transaction():
            if existing is not None:
                self.store.update_node(existing.id, status=NodeStatus.SUPERSEDED)
            if self.store.nodes(ids=[node.id], status=None):  # the same window, children, text and predecessor
                # were written before and deleted with their last child (a restore of it): that node comes back
                self.store.update_node(node.id, status=NodeStatus.ACTIVE, stale=False)
                for child in node.child_ids:
                    self.store.relink(child, node.id)
                return self.store.node(node.id)
            self.store.add_node(node, vec)
            for action, detail in audits:
                self.store.audit(action, user_id, node.id, detail)
        return node

    def with_profile_facts(self, user_id: str, span: TimeSpan, content: str) -> str:
        """``content`` of an L5 profile over ``span`` with its facts block (:mod:`timem.consolidation.profile_facts`)
        set to the user's items that hold at the span's end, as held (:func:`timem.item_holding.as_held`: a value
        whose successor was forgotten holds again): an old block is replaced, none is added when no item
        holds (or ``Config.memory.memory_items`` is off). Deterministic; no LLM."""
        body, sep, _old = content.rpartition(FACTS_SEPARATOR)
        body = body if sep else content
        if not self.config.memory.memory_items:
            return body
        people = self._participants(user_id, span, subjects=True)
        # as held: a value whose successor was forgotten holds again until the next value that stays (a new-user
        # trial's profile left out Porto and nurse after "forget that I live in Braga / work as a teacher")
        facts = facts_as_of(as_held(self.store.items(user_id)), span.end, self.tz, people)
        return f"{body}{FACTS_SEPARATOR}{facts.removeprefix('Facts as of ')}" if facts else body

    def _user_speakers(self, user_id: str) -> list[str]:
        """Every speaker name of the user's turns (cached for one :meth:`consolidate` call)."""
        if user_id not in self._speakers:
            self._speakers[user_id] = sorted({t.speaker for t in self.store.turns(user_id)})
        return self._speakers[user_id]

    def _assistants(self, user_id: str) -> list[str]:
        """Speaker names used only by the user's assistant-role turns (e.g. the studio chat's ``Assistant``)."""
        if user_id not in self._assistant_names:
            turns = self.store.turns(user_id)
            people = {t.speaker for t in turns if t.role != Role.ASSISTANT}
            self._assistant_names[user_id] = sorted({t.speaker for t in turns if t.role == Role.ASSISTANT} - people)
        return self._assistant_names[user_id]

    def _participants(self, user_id: str, span: TimeSpan, *, subjects: bool = False) -> list[str]:
        """Speakers (not assistants) who spoke within ``span``, in order of first appearance; ``subjects``: as their
        memory items name them (:func:`timem.item_values.item_subject`: the user id for a nameless ``User``)."""
        turns = [t for t in self.store.turns(user_id) if span.start <= t.event_time <= span.end]
        return list(dict.fromkeys(item_subject(t) if subjects else t.speaker
                                  for t in turns if t.role != Role.ASSISTANT))

