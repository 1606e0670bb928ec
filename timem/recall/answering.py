"""The answer step after recall: the recalled context, the user's pinned memory items and the question go to the
LLM in one call (:func:`answer`), and the answer is checked against the context
(:mod:`timem.recall.answer_check`). The trace, answer included, is persisted once at the end.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel

from timem.config import Config
from timem.embed.protocol import Embedder
from timem.errors import ConfigError, LLMError
from timem.llm.protocol import LLMClient
from timem.models import MemoryNode, Role
from timem.prompts import answer as answer_prompt
from timem.prompts.injection import withhold_instructions
from timem.recall.answer_check import check_answer
from timem.recall.context import count_context_tokens
from timem.recall.options import DEFAULT_OPTIONS, RecallOptions
from timem.recall.pipeline import RecallResult, elapsed_ms, persist, run_recall
from timem.recall.recording import RecordingLLM
from timem.store.ports import MemoryStore
from timem.tree.windows import speaker_zone


class AnswerResult(BaseModel):
    """An answer from the recalled context, with the recall it came from (trace includes the answer)."""

    answer: str
    recall: RecallResult


def _assistant_speakers(store: MemoryStore, user_id: str, nodes: Sequence[MemoryNode]) -> set[str]:
    """The speaker names of the assistant's turns (``Role.ASSISTANT``) under the recalled L1 segments."""
    ids = sorted({t for n in nodes if n.level == 1 for t in n.source_turn_ids})
    return {t.speaker for t in store.turns(user_id, ids=ids) if t.role == Role.ASSISTANT} if ids else set()


def pinned_lines(store: MemoryStore, config: Config, user_id: str, at: datetime | None = None) -> list[str]:
    """The user's pinned, open, active items as ``"Mia's home city: Porto"`` lines, oldest first, within
    ``Config.memory.memory_pinned_tokens`` (cl100k); none when the memory layer is off. With ``at`` (UTC-aware, a
    question's time): the pinned items stated by then and still holding then (nothing said later)."""
    if not config.memory.memory_items:
        return []
    lines, used = [], 0
    for item in store.items(user_id):
        holds = item.is_open if at is None else item.event_time <= at and item.valid_at(at)
        if item.pinned and holds:
            cost = count_context_tokens(item.label()) + 1
            if used + cost > config.memory.memory_pinned_tokens:
                break
            lines.append(item.label())
            used += cost
    return lines


def answer(store: MemoryStore, embedder: Embedder, llm: LLMClient, config: Config, user_id: str, query: str,
           question_time: datetime | None = None, options: RecallOptions = DEFAULT_OPTIONS) -> AnswerResult:
    """Recall (as :func:`recall`, with ``options``), then answer from the context with one ``llm.complete`` call
    (purpose ``"answer"``). Without an asker (not a chat), an empty context and no pinned item get
    :func:`timem.prompts.answer.dont_know` in the question's language, with no LLM call (a model given nothing
    invents: "the University of Oxford", 你好！).

    The user's pinned memory items (open ones, at most ``Config.memory.memory_pinned_tokens`` cl100k tokens) go
    into the system message; ``options.asker`` (a chat's speaker) is answered as "you".

    The prompt (:mod:`timem.prompts.answer`) gets the context and the question's local date and time (the
    question time's own offset, else the user's zone: :func:`timem.tree.windows.speaker_zone`). The trace,
    including the answer and its LLM call, is persisted once at the end,
    also when the answer call fails (``answer_error`` set) before the error is re-raised.

    Raises:
        ConfigError: ``llm`` is ``None``.
        LLMError: the answer call failed.
    """
    if llm is None:
        raise ConfigError("answering needs an LLM; set llm_backend to 'local' or 'openai', or pass --recall-only for "
                          "the context alone.")
    config = options.config or config
    rec = RecordingLLM(llm)
    with store.snapshot():  # as recall(): one view; the answer call runs outside it
        result = run_recall(store, embedder, rec, config, user_id, query, question_time, options)
    trace = result.trace
    t0 = time.perf_counter()
    pinned = pinned_lines(store, config, user_id, trace.question_time)
    zone = speaker_zone(question_time, config.time.tz_for(user_id))  # the recall's zone (run_recall)
    msgs = answer_prompt.build_messages(query, result.context, trace.question_time.astimezone(zone),
                                        pinned=pinned, asker=options.asker)
    withheld = withhold_instructions(result.context)[1]
    if withheld:
        trace.notes.append(f"withheld from the answer prompt, as pasted instructions to an AI assistant: "
                           f"{len(withheld)} memory line(s): " + "; ".join(withheld))
    try:
        if options.asker is None and not result.context.strip() and not pinned:  # nothing to answer from
            text = answer_prompt.dont_know(query)
            trace.notes.append("nothing recalled and nothing pinned: answered 'don't know' without the LLM")
        else:
            text, note = check_answer(rec.complete(msgs, purpose="answer", user_id=user_id).strip(), query,
                                      result.context, pinned, options.asker, config.recall.answer_check,
                                      _assistant_speakers(store, user_id, result.nodes))
            if note:
                trace.notes.append(note)
    except LLMError as exc:
        trace.answer_error = str(exc)
        raise
    else:
        trace.answer = text
    finally:
        trace.latency_ms["answer"] = elapsed_ms(t0)
        trace.latency_ms["total"] = round(trace.latency_ms["total"] + trace.latency_ms["answer"], 2)
        trace.llm_calls = list(rec.calls)
        if options.persist:
            persist(store, trace, config)
    return AnswerResult(answer=text, recall=result)
