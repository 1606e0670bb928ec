"""The LLM's reading of memory items (``Config.memory.memory_extractor`` ``llm``, or ``auto`` with an
OpenAI-compatible endpoint; :attr:`timem.memory.writer.ItemWriter.mode`): one ``complete_json`` call per *closed*
session (:func:`timem.tree.windows.closed_sessions`), prompt :mod:`timem.prompts.memory`, over the session's people's
turns (never a turn of role ``assistant`` or of a speaker who only speaks as the assistant: :func:`person_turns`).

An unusable answer (no valid JSON, a subject who is not a speaker of the session, a turn number out of range) writes
nothing for that session, is audited as ``memory-extraction-failed`` and the session is tried again on the next read;
the error is returned in :attr:`ExtractionReport.failures` (never swallowed). An attribute outside the vocabulary
(:func:`timem.memory.grounding.canonical_attribute`) is audited ``item-ungrounded`` and skipped. Every statement of one
session is applied (by the writer's :meth:`~timem.memory.writer.ItemWriter.apply`) in one transaction with the
session's log row in ``memory_extractions`` (unit ``session:<id>``, mode ``llm``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

from timem.config import Config
from timem.errors import LLMError
from timem.item_values import item_subject, normalise
from timem.llm.protocol import LLMClient
from timem.memory.grounding import canonical_attribute
from timem.memory.history import ExtractionReport
from timem.memory.rules import Statement
from timem.models import Level, MemoryItem, Role, Turn
from timem.progress import Progress
from timem.prompts import memory as memory_prompt
from timem.store.ports import MemoryStore
from timem.tree.windows import closed_sessions

__all__ = ["Apply", "person_turns", "read_closed_sessions"]


class Apply(Protocol):
    """Applies one statement said at ``at`` (UTC) in segment ``segment_id`` (:meth:`timem.memory.writer.ItemWriter.
    apply`); called inside the session's transaction."""

    def __call__(self, user_id: str, subject: str, st: Statement, at: datetime, segment_id: str, *, source: str,
                 confidence: float, report: ExtractionReport | None = None) -> MemoryItem | None: ...


def person_turns(store: MemoryStore, user_id: str, turns: list[Turn]) -> list[Turn]:
    """``turns`` (one session's, in order) without the assistant's: a turn of role ``assistant``, or of a speaker who
    speaks only as the assistant among all of ``user_id``'s turns."""
    assistants = {t.speaker for t in store.turns(user_id) if t.role == Role.ASSISTANT}
    people = {t.speaker for t in turns if t.role != Role.ASSISTANT}
    only_assistant = assistants - people
    return [t for t in turns if t.role != Role.ASSISTANT and t.speaker not in only_assistant]


def read_closed_sessions(store: MemoryStore, llm: LLMClient, config: Config, user_id: str, report: ExtractionReport,
                         progress: Progress, apply: Apply) -> None:
    """Read every closed session of ``user_id`` the LLM has not read yet, oldest first (see the module doc); counts
    into ``report``. ``progress`` wraps the sessions (one call each), so a caller can show and stop between two."""
    sessions = store.sessions(user_id)
    if not sessions:
        return
    done = store.extracted_units(user_id, "llm")
    watermark = max(s.last_event_at for s in sessions)
    idle = timedelta(minutes=config.time.session_idle_timeout_minutes)
    segs = store.nodes(user_id, Level.SEGMENT)
    closed = closed_sessions(sessions, watermark, idle)
    todo = [s for s in sorted(sessions, key=lambda s: s.started_at)
            if f"session:{s.session_id}" not in done and closed[s.session_id]]
    for s in progress(todo, "memory items (LLM)", len(todo)):
        unit = f"session:{s.session_id}"
        turns = person_turns(store, user_id, store.turns(user_id, s.session_id))
        seg_of = {tid: n.id for n in segs if n.session_id == s.session_id for tid in n.source_turn_ids}
        turns = [t for t in turns if t.id in seg_of]  # a turn without an active segment is not read
        if not turns:
            with store.transaction():
                store.mark_extracted(user_id, unit, "llm", 0)
            continue
        try:
            result = llm.complete_json(memory_prompt.build_messages([(t.speaker, t.text) for t in turns]),
                                       memory_prompt.ExtractedItems, purpose="memory-items",
                                       user_id=user_id, max_tokens=memory_prompt.MAX_TOKENS)
            speakers = {t.speaker for t in turns}
            for it in result.items:
                if it.subject not in speakers:
                    raise ValueError(f"subject {it.subject!r} is not a speaker of the session "
                                     f"({', '.join(sorted(speakers))})")
                if it.turn > len(turns):
                    raise ValueError(f"turn {it.turn} is out of range (the session has {len(turns)} turns)")
        except (LLMError, ValueError) as exc:
            msg = f"{type(exc).__name__}: {exc}"
            report.failures.append((s.session_id, msg))
            store.audit("memory-extraction-failed", user_id, None, {
                "session_id": s.session_id, "prompt_version": memory_prompt.PROMPT_VERSION, "error": msg})
            continue
        subject_of = {t.speaker: item_subject(t) for t in turns}  # the names the LLM saw -> the items' subjects
        with store.transaction():
            for it in result.items:
                t = turns[it.turn - 1]
                ends = bool(it.replaces) and normalise(it.replaces or "") == normalise(it.value)  # "not X anymore"
                attribute = canonical_attribute(it.attribute)
                if attribute is None:
                    store.audit("item-ungrounded", user_id, None, {
                        "segment": seg_of[t.id], "value": it.value, "attribute": it.attribute,
                        "reason": f"the attribute {it.attribute!r} is not in the vocabulary"})
                    continue
                st = Statement(it.kind, attribute, it.value.strip(), t.text,
                               correction=it.correction, replaces=(it.replaces or None), ends_only=ends)
                apply(user_id, subject_of.get(it.subject, it.subject), st, t.event_time, seg_of[t.id],
                      source="stated" if it.stated else "inferred", confidence=it.confidence, report=report)
            store.mark_extracted(user_id, unit, "llm", len(result.items))
        report.units += 1
