"""The engine facade's online chat: store a message and its reply, answer a chat turn, warm the embedded model.

A part of :class:`timem.engine.MemoryEngine` (the engine owns one); it uses the shared core, the read part, the
memory-item part (forgetting), the queue (each write's consolidation job) and the recall part. Event times are
UTC-aware; the speaker's UTC offset is kept per turn.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from typing import Any

from timem.chat_turns import (
    ChatTurn,
    check_chat,
    check_names,
    check_turn,
    make_turn,
    next_seq,
    reply_without_llm,
    speaker_offset,
)
from timem.config import Config
from timem.engine_items import MemoryItems
from timem.engine_queue import ConsolidationQueue
from timem.engine_reads import EngineCore, EnginePart, StoreReads
from timem.engine_recall import Recaller
from timem.errors import ChatTurnError, ConsolidationIncomplete, InputError, TimemError
from timem.llm.client import local_model
from timem.memory import forget as forget_mod
from timem.models import MAX_SESSION, MemoryNode, Role, Turn, WriteRequest
from timem.prompts import answer as answer_prompt
from timem.recall import answering
from timem.recall.options import RecallOptions

#: speaker label of the assistant's chat turns (role ``assistant``); consolidation never presents
#: assistant turns as the user's facts (see :mod:`timem.consolidation.extractive`)
ASSISTANT_NAME = "Assistant"


class OnlineChat(EnginePart):
    """Chat methods of the engine facade."""

    def __init__(self, core: EngineCore, reads: StoreReads, items: MemoryItems, queue: ConsolidationQueue,
                 recaller: Recaller) -> None:
        super().__init__(core)
        self.reads, self.items, self.queue, self.recaller = reads, items, queue, recaller

    def add_exchange(self, user_id: str, session_id: str, user_text: str, assistant_text: str,
                     event_time: datetime, *, user_name: str = "User", assistant_name: str = ASSISTANT_NAME,
                     consolidate: bool = True, request: WriteRequest | None = None) -> list[MemoryNode]:
        """Record one chat exchange (user turn + assistant reply, both at ``event_time``, UTC-aware).

        Writes its L1 segment online and consolidates whatever windows closed in event time. Same as
        :meth:`add_message` then :meth:`add_reply`, except that nothing is written if either text is refused.
        ``request`` (an idempotency key) is stored in the turns' transaction; look it up with
        :meth:`write_request` before writing again. The consolidation is a job queued in that transaction too
        (:mod:`timem.engine_queue`): with a queue worker running it is done later and ``[]`` is returned
        (a recall still sees the write), else it runs before this returns.

        Raises:
            InputError: empty text, a naive ``event_time``, a name with a line break or control character, a new
                user whose id breaks :func:`timem.ids.check_new_user_id` (``"a b"``, ``"a/b"``), an ended session, or
                a turn earlier than the session's last or more than a day after its first
                (:data:`timem.models.MAX_SESSION`); nothing is written.
            ConsolidationIncomplete: the turns and the L1 segment were stored, but some closed window
                could not be consolidated (see :meth:`Consolidator.consolidate`).
        """
        check_chat(user_text, event_time)
        check_names(user_name=user_name, assistant_name=assistant_name)
        seq = next_seq(self.store.turns(user_id, session_id))
        offset = speaker_offset(event_time, self.config.time.tz_for(user_id))
        turns = [
            make_turn(user_id, session_id, seq, user_name, Role.USER, user_text, event_time, offset),
            make_turn(user_id, session_id, seq + 1, assistant_name, Role.ASSISTANT, assistant_text, event_time, offset),
        ]
        return self._add_chat_turns(user_id, turns, consolidate, request)

    def add_message(self, user_id: str, session_id: str, text: str, event_time: datetime, *,
                    user_name: str = "User", request: WriteRequest | None = None, consolidate: bool = False) -> Turn:
        """Store the user's chat message alone, before it is answered (so that it survives an answer that
        never completes); no consolidation runs (an open session's L1 waits for the reply) unless
        ``consolidate``: then a job is queued with the turn, as :meth:`add_exchange` does (with ``l1_unit``
        ``"turn"`` its L1 segment is written at once).

        Raises:
            InputError: empty text, a naive ``event_time``, a name with a line break or control character, a new
                user whose id breaks :func:`timem.ids.check_new_user_id` (``"a b"``, ``"a/b"``), an ended session, or
                a turn earlier than the session's last or more than a day after its first
                (:data:`timem.models.MAX_SESSION`); nothing is written.
        """
        check_chat(text, event_time)
        check_names(user_name=user_name)
        seq = next_seq(self.store.turns(user_id, session_id))
        turn = make_turn(user_id, session_id, seq, user_name, Role.USER, text, event_time,
                     speaker_offset(event_time, self.config.time.tz_for(user_id)))
        self._add_chat_turns(user_id, [turn], consolidate, request)
        return turn

    def add_reply(self, user_id: str, session_id: str, text: str, event_time: datetime, *,
                  assistant_name: str = ASSISTANT_NAME, consolidate: bool = True,
                  request: WriteRequest | None = None) -> list[MemoryNode]:
        """Store the assistant's reply (role ``assistant``, speaker ``assistant_name``) after
        :meth:`add_message`, then write the L1 segment and consolidate what closed (see :meth:`add_exchange`).

        Raises:
            InputError: empty text, a naive ``event_time``, a name with a line break or control character, a new
                user whose id breaks :func:`timem.ids.check_new_user_id` (``"a b"``, ``"a/b"``), an ended session, or
                a turn earlier than the session's last or more than a day after its first
                (:data:`timem.models.MAX_SESSION`); nothing is written.
            ConsolidationIncomplete: see :meth:`add_exchange`.
        """
        check_chat(text, event_time, what="reply")
        check_names(assistant_name=assistant_name)
        seq = next_seq(self.store.turns(user_id, session_id))
        turn = make_turn(user_id, session_id, seq, assistant_name, Role.ASSISTANT, text, event_time,
                     speaker_offset(event_time, self.config.time.tz_for(user_id)))
        return self._add_chat_turns(user_id, [turn], consolidate, request)

    def chat_config(self) -> Config:
        """The settings a chat answer recalls with: memory items decay with
        ``Config.memory.memory_chat_half_life_days`` (unless ``memory_decay_half_life_days`` is set), and with the
        embedded model the context budget is at most ``Config.recall.local_chat_token_budget`` (it answers in
        seconds only from a short prompt)."""
        half_life = self.config.memory.memory_decay_half_life_days or self.config.memory.memory_chat_half_life_days
        budget = self.config.recall.chat_token_budget(self.reads.local_model_path is not None)
        return self.config.with_overrides(memory_decay_half_life_days=half_life, token_budget=budget)

    def remember(self, user_id: str, session_id: str, message: str, event_time: datetime, *,
                 reply: str | None = None, user_name: str = "User", assistant_name: str = ASSISTANT_NAME,
                 consolidate: bool = True, request: WriteRequest | None = None) -> list[MemoryNode]:
        """Store what the user said (``message``), with the assistant's ``reply`` if there is one, at
        ``event_time`` (UTC-aware; a naive one is refused) in ``session_id``; then write its L1 segment and
        consolidate the windows that closed in event time (``consolidate=False``: later, :meth:`consolidate`).
        The library's name for :meth:`add_exchange` (with a reply) or :meth:`add_message` (without), as the
        memory service's ``POST /v1/users/{user}/turns`` and the MCP ``remember`` tool do; ``request`` as there.

        Returns:
            The memory nodes written (L1 segments first); ``[]`` when a queue worker consolidates later.

        Raises:
            InputError: as :meth:`add_exchange`; nothing is written.
            ConsolidationIncomplete: the turns and their L1 segment are stored, some closed window is not.
        """
        if reply is not None:
            return self.add_exchange(user_id, session_id, message, reply, event_time, user_name=user_name,
                                     assistant_name=assistant_name, consolidate=consolidate, request=request)
        check_chat(message, event_time)
        check_names(user_name=user_name)
        turn = make_turn(user_id, session_id, len(self.store.turns(user_id, session_id)), user_name, Role.USER,
                         message, event_time, speaker_offset(event_time, self.config.time.tz_for(user_id)))
        return self._add_chat_turns(user_id, [turn], consolidate, request)

    def write_request(self, user_id: str, key: str) -> tuple[str, list[str]] | None:
        """The write stored earlier with idempotency ``key`` for ``user_id``: ``(fingerprint, turn ids)``, or None."""
        return self.store.write_request(user_id, key)

    def _add_chat_turns(self, user_id: str, turns: list[Turn], consolidate: bool,
                        request: WriteRequest | None = None) -> list[MemoryNode]:
        for t in turns:
            check_turn(t, self.config.store.max_turn_chars)
        self.check_writes_user(user_id)
        # this session's row only: a user's every session was read per write (~10 ms per 1,000 sessions)
        ended = turns and any(s.ended for s in self.store.sessions_among(user_id, [turns[0].session_id])[0])
        if ended:  # its session memory is written: a later turn would stretch it
            raise InputError(f"session {turns[0].session_id!r} was ended; send the turn in a new session",
                             field="session_id")
        before = self.store.turns(user_id, turns[0].session_id) if turns else []
        if before and turns[0].event_time < before[-1].event_time:  # as a JSONL import refuses it
            raise InputError(f"event time {turns[0].event_time.isoformat()} is earlier than the last turn of session "
                             f"{turns[0].session_id!r} ({before[-1].event_time.isoformat()}); send turns in order "
                             "or start a new session", field="event_time")
        if before and turns[-1].event_time - before[0].event_time > MAX_SESSION:
            raise InputError(f"session {turns[0].session_id!r} started at {before[0].event_time.isoformat()}; a "
                             f"turn at {turns[-1].event_time.isoformat()}, more than a day later, would stretch its "
                             "memories over several days: send it in a new session", field="session_id")
        with self.store.transaction():  # the turns, their idempotency key and their job: all or none
            self.store.add_turns(turns)
            if request is not None:
                self.store.record_write_request(user_id, request.key, request.fingerprint, [t.id for t in turns])
            if consolidate:
                self.queue.enqueue(user_id, [t.session_id for t in turns], [t.id for t in turns])
        return self.queue.after_enqueue(user_id) if consolidate else []

    def chat_turn(self, user_id: str, session_id: str, text: str, event_time: datetime, *,
                  user_name: str = "User", assistant_name: str = ASSISTANT_NAME, consolidate: bool = True,
                  confirm_forget: bool = False) -> ChatTurn:
        """One chat exchange: store the message, recall and answer it, store the reply, consolidate.

        ``consolidate=False`` stores the reply without writing memories, so that the caller can show the
        answer first and consolidate afterwards (:meth:`consolidate`; the studio does it in a background
        job when L2–L5 consolidation calls the LLM).

        The message is stored before it is answered, so it survives an answer that fails. Without an
        LLM the reply is :func:`reply_without_llm`, which is returned but not stored (only the message is), and the
        trace still shows what recall found. The
        question time is ``event_time``; with the embedded model the context budget is at most
        ``Config.recall.local_chat_token_budget``. Memory items decay with ``Config.memory.memory_chat_half_life_days``
        unless ``memory_decay_half_life_days`` is set. A "forget that …" / "忘掉…" message is not answered
        from memory: the reply previews what it names, and with ``confirm_forget`` that is forgotten
        (:meth:`forget` with ``confirm``); without it nothing is (the preview may name a fact said in the same
        message, which would go too). Neither the message nor the reply is stored (``ChatTurn.forgotten`` holds
        the preview).

        Raises:
            InputError: empty message, naive ``event_time``, a name that is empty or holds a line break or
                control character, or a new user whose id breaks :func:`timem.ids.check_new_user_id` (nothing is
                written).
            ChatTurnError: the message is stored but answering failed (``stage="answer"``), the reply
                was refused (``"reply"``), or the reply is stored and writing memories failed
                (``"memories"``); ``__cause__`` is the original error.
        """
        check_chat(text, event_time)
        check_names(user_name=user_name, assistant_name=assistant_name)  # before the message is stored
        what = forget_mod.forget_request(text)
        if what is not None:
            return self._forget_turn(user_id, session_id, what, event_time, confirm_forget)
        asked = self.add_message(user_id, session_id, text, event_time, user_name=user_name)
        chat_config = self.chat_config()
        own = (asked.id,)  # stored first, the message is not a memory of itself
        try:
            if self.llm is None:
                res = self.recaller.recall(user_id, text, event_time, RecallOptions(config=chat_config,
                                                                                    exclude_turns=own))
                trace, reply = res.trace, reply_without_llm(len(res.nodes), res.trace.context_tokens)
            else:
                out = self.recaller.ask(user_id, text, event_time, RecallOptions(config=chat_config, asker=user_name,
                                                                                 exclude_turns=own))
                trace, reply = out.recall.trace, out.answer
        except TimemError as exc:
            raise ChatTurnError("answer", f"your message was recorded, but answering it failed: {exc}") from exc
        warning = None
        try:
            if self.llm is None:  # the note is shown, never stored: stored, it was recalled as a memory
                written = self.queue.queue_consolidation(user_id, [session_id]) if consolidate else []
            else:
                written = self.add_reply(user_id, session_id, reply, event_time, assistant_name=assistant_name,
                                         consolidate=consolidate)
        except ConsolidationIncomplete as exc:  # the exchange and its L1 segment are stored
            written, warning = list(exc.written), str(exc)
        except InputError as exc:  # refused before anything was written (e.g. an empty reply)
            raise ChatTurnError("reply",
                                f"your message was recorded, but the answer could not be stored: {exc}") from exc
        except TimemError as exc:  # the reply is stored; consolidation stopped
            raise ChatTurnError("memories",
                                f"the exchange was recorded, but writing its memories failed: {exc}") from exc
        return ChatTurn(session_id=session_id, trace=trace, reply=reply, written=written, warning=warning)

    def warm_chat(self, user_id: str, user_name: str = "User", *,
                  store_lock: AbstractContextManager[Any] | None = None) -> int | None:
        """Prepare the embedded model for ``user_name``'s next chat answer: evaluate the answer prompt's
        system message for this person (instructions, asker and pinned profile, the same on every turn:
        :mod:`timem.prompts.answer` v5) into llama.cpp's cache, so the answer evaluates only the memories
        and the question (:meth:`timem.llm.local.LocalLlamaBackend.warm`). The studio calls it in a
        background thread when the Chat page opens. ``store_lock`` is held while the store is read.

        Returns:
            The prompt tokens now cached, or ``None`` when the backend is no
            :class:`~timem.llm.protocol.LocalModel` (no LLM, an OpenAI-compatible endpoint).

        Raises:
            LLMError: the model cannot be loaded.
        """
        model = local_model(self.llm)
        if model is None:
            return None
        with store_lock or nullcontext():
            pinned = answering.pinned_lines(self.store, self.config, user_id)
        at = datetime.now(UTC).astimezone(self.config.time.tz)
        return model.warm(answer_prompt.build_messages("", "", at, pinned=pinned, asker=user_name))

    def _forget_turn(self, user_id: str, session_id: str, what: str, event_time: datetime,
                     confirm: bool) -> ChatTurn:
        """A "forget that …" chat message: the preview of what matches, soft-deleted with ``confirm``; the trace
        is a recall of ``what`` afterwards (not persisted: it shows what is left). Nothing is stored as a turn.

        The user's writes still queued for consolidation (the memory service acknowledges a write before its worker
        writes the L1 segment and reads the memory items) are consolidated here first, so that "forget that I work
        at Blue Harbor" right after "I work at Blue Harbor" finds both. A job that fails stays ``failed`` in the
        queue with its error (audited; ``timem check`` lists it) and the preview reads what is stored. The service
        first waits (outside its lock) for the jobs its worker is running (:meth:`ConsolidationQueue.settle`)."""
        self.queue.drain_queue(user_id, raise_errors=False)
        plan = forget_mod.preview(self.store, user_id, what)
        if plan.empty:
            reply = plan.describe()
        elif confirm:
            forget_mod.apply(self.store, self.items.consolidator, plan, actor="chat")
            reply = "I forgot:\n" + plan.describe()
        else:
            reply = ("This would forget:\n" + plan.describe()
                     + "\nNothing is forgotten until you confirm.")
        trace = self.recaller.recall(user_id, what, event_time, RecallOptions(persist=False)).trace
        return ChatTurn(session_id=session_id, trace=trace, reply=reply, written=[], forgotten=plan)
