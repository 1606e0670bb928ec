"""L1 segments: a session's turns -> verbatim (or LLM-fact) segment nodes, the first level of the Temporal Memory
Tree (:class:`SegmentWriter`, the base of :class:`timem.consolidation.consolidator.Consolidator`).

L1 is written online for every complete exchange; in an open session the last exchange waits until it has a reply or
the session closes (:func:`timem.tree.windows.closed_sessions`, in event time). A segment's node id is derived from its
turns (:func:`node_id`), and a segment already written (or deleted) is never written again, so a rerun continues where
it stopped. In ``l1_mode = "llm"`` each segment's content is the LLM's facts (:mod:`timem.prompts.segment`), or its
verbatim text when the LLM found none.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import numpy as np

from timem.config import Config
from timem.consolidation.segments import cut_segments, render_segment
from timem.embed.protocol import Embedder
from timem.errors import LLMError
from timem.llm.protocol import LLMClient
from timem.models import Level, MemoryNode, SessionInfo, Turn
from timem.prompts import segment
from timem.store.ports import MemoryStore
from timem.tree.windows import closed_sessions

VERBATIM_MODEL = "verbatim"
#: v1 still: a multi-line turn's further lines are marked (segments.continued, issue 27 #11), one-line turns are
#: byte-identical to before
VERBATIM_PROMPT = "l1-verbatim-v1"


def node_id(user_id: str, level: Level, window_key: str, parts: Sequence[str]) -> str:
    """Deterministic node id from the user, level, window and what it was made of."""
    h = hashlib.sha1("|".join([user_id, str(int(level)), window_key, *parts]).encode()).hexdigest()[:16]
    return f"L{int(level)}-{h}"


class SegmentWriter:
    """Writes the L1 segments of one store (see the module doc).

    Args:
        llm: needed for ``l1_mode="llm"`` only; with ``None``, verbatim L1 is written.
    """

    def __init__(self, store: MemoryStore, embedder: Embedder, llm: LLMClient | None, config: Config) -> None:
        self.store, self.embedder, self.llm, self.config = store, embedder, llm, config
        self.tz = config.time.tz

    def write_segments(self, user_id: str, session_id: str, *, closed: bool,
                       vectors: Mapping[str, np.ndarray] | None = None) -> list[MemoryNode]:
        """Write the missing L1 segments of one session; returns the new nodes. ``vectors``: embeddings already
        made for some of their contents (:meth:`embed_l1`), by content; the others are embedded here.

        The segments are listed and embedded outside a transaction, then listed again inside the insert's: a
        recall's read-your-writes (:mod:`timem.engine_queue`, another thread) may have written some of them
        meanwhile, which are skipped (inserting them again failed the queue worker's job with a duplicate key)."""
        todo = self._todo_segments(user_id, session_id, closed)
        if not todo:
            return []
        if self.config.consolidation.l1_mode == "llm":
            contents = self._llm_segments(user_id, todo)
        else:
            contents = [(render_segment(s, self.tz), VERBATIM_MODEL, VERBATIM_PROMPT) for s in todo]
        known = vectors or {}
        missing = list(dict.fromkeys(c for c, _, _ in contents if c not in known))
        fresh = dict(zip(missing, self.embedder.embed(missing), strict=True)) if missing else {}
        vecs = np.stack([known[c] if c in known else fresh[c] for c, _, _ in contents])
        written = [MemoryNode(
            id=node_id(user_id, Level.SEGMENT, f"segment:{seg[0].id}", [t.id for t in seg]), user_id=user_id,
            level=Level.SEGMENT, window_key=f"segment:{seg[0].id}", session_id=session_id,
            span_start=seg[0].event_time, span_end=max(t.event_time for t in seg), content=text,
            source_turn_ids=[t.id for t in seg], model_id=model, prompt_version=version)
            for seg, (text, model, version) in zip(todo, contents, strict=True)]
        with self.store.transaction():  # the check and the insert under the store's writer, as one
            have = self.store.window_keys(user_id, Level.SEGMENT, session_id, include_deleted=True)
            keep = [i for i, n in enumerate(written) if n.window_key not in have]
            written = [written[i] for i in keep]
            self.store.add_nodes(written, vecs[keep])
        return written

    def _todo_segments(self, user_id: str, session_id: str, closed: bool) -> list[list[Turn]]:
        """The turns of each L1 segment of the session that has no node yet (deleted ones count as written)."""
        cons = self.config.consolidation
        segs = cut_segments(self.store.turns(user_id, session_id), cons.l1_unit, cons.l1_segment_exchanges,
                            closed=closed)
        have = self.store.window_keys(user_id, Level.SEGMENT, session_id, include_deleted=True)
        return [s for s in segs if f"segment:{s[0].id}" not in have]

    def _sessions_with_todo(self, user_id: str, closed: Mapping[str, bool]) -> set[str]:
        """The ids of the user's sessions with an L1 segment to write (:meth:`_todo_segments` not empty), from two
        queries (every turn of the user, every segment's window key) instead of two per session: the worker's
        consolidation of one chat write read each session of the user twice (45 queries a job for conv-26)."""
        cons = self.config.consolidation
        have = self.store.window_keys(user_id, Level.SEGMENT, include_deleted=True)
        by_session: dict[str, list[Turn]] = {}
        for t in self.store.turns(user_id):
            by_session.setdefault(t.session_id, []).append(t)
        return {sid for sid, turns in by_session.items()
                if any(f"segment:{seg[0].id}" not in have for seg in cut_segments(
                    turns, cons.l1_unit, cons.l1_segment_exchanges, closed=closed.get(sid, False)))}

    def embed_l1(self, user_id: str, session_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Embeddings of the verbatim L1 segments :meth:`write_l1` would write now, by content (reads only, no
        write): made before the write transaction, so that the transaction does not hold the store's writer
        while the embedder runs (issue 26). ``{}`` in ``l1_mode = "llm"`` (its contents come from the LLM)."""
        if self.config.consolidation.l1_mode == "llm":
            return {}
        texts = [render_segment(seg, self.tz) for sid, closed in self._l1_sessions(user_id, session_ids)
                 for seg in self._todo_segments(user_id, sid, closed)]
        texts = list(dict.fromkeys(texts))
        return dict(zip(texts, self.embedder.embed(texts), strict=True)) if texts else {}
    def _llm_segments(self, user_id: str, segs: list[list[Turn]]) -> list[tuple[str, str, str]]:
        """LLM facts per segment, batched; a segment without facts keeps its verbatim text (labelled so)."""
        llm = self._need_llm("L1 segments in llm mode")
        history = [n.content for n in self.store.history(user_id, Level.SEGMENT, segs[0][0].event_time,
                                                         self.config.consolidation.history_k)]
        out: list[tuple[str, str, str]] = []
        step = self.config.consolidation.l1_batch_exchanges
        for i in range(0, len(segs), step):
            batch = segs[i:i + step]
            rendered = [render_segment(s, self.tz) for s in batch]
            result = llm.complete_json(segment.build_messages(rendered, history), segment.SegmentBatch,
                                       purpose="consolidate-L1", user_id=user_id,
                                       max_tokens=segment.max_tokens(len(batch)))
            facts: dict[int, list[str]] = {}
            for item in result.segments:
                if 1 <= item.exchange <= len(batch):
                    facts.setdefault(item.exchange, []).extend(f.strip() for f in item.facts if f.strip())
            for j, text in enumerate(rendered, start=1):
                uniq = list(dict.fromkeys(facts.get(j, [])))
                if uniq:
                    out.append(("\n".join(uniq), llm.model_id, segment.PROMPT_VERSION))
                else:
                    out.append((text, VERBATIM_MODEL, VERBATIM_PROMPT))
            history = (history + [c for c, _, _ in out[-len(batch):]])[-self.config.consolidation.history_k:]
        return out

    def write_l1(self, user_id: str, session_ids: Sequence[str],
                 vectors: Mapping[str, np.ndarray] | None = None) -> list[MemoryNode]:
        """Write the missing L1 segments of these sessions of ``user_id`` only (what :meth:`consolidate` writes
        first, without reading the user's other sessions): a queued write's segments, recallable at once
        (:mod:`timem.engine_queue`). ``vectors``: as :meth:`write_segments`. Returns the new nodes; unknown
        session ids are skipped."""
        written: list[MemoryNode] = []
        for sid, closed in self._l1_sessions(user_id, session_ids):
            written += self.write_segments(user_id, sid, closed=closed, vectors=vectors)
        return written

    def _l1_sessions(self, user_id: str, session_ids: Sequence[str]) -> list[tuple[str, bool]]:
        """(session id, closed in event time) of the user's sessions among ``session_ids``, by start."""
        sessions, latest_start, watermark = self.store.sessions_among(user_id, session_ids)
        if not sessions or watermark is None:
            return []
        idle = timedelta(minutes=self.config.time.session_idle_timeout_minutes)
        closed = closed_sessions(sessions, watermark, idle, latest_start=latest_start)
        return [(s.session_id, closed[s.session_id]) for s in sessions]

    def _closed(self, sessions: Sequence[SessionInfo], watermark: datetime, flush: bool) -> dict[str, bool]:
        """Per session id: whether the session is closed in event time (:func:`closed_sessions`)."""
        idle = timedelta(minutes=self.config.time.session_idle_timeout_minutes)
        return closed_sessions(sessions, watermark, idle, flush)

    def _need_llm(self, what: str) -> LLMClient:
        if self.llm is None:
            raise LLMError(f"{what} needs an LLM, but llm_backend is 'none'; use --llm local or --llm openai.")
        return self.llm
