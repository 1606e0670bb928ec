"""Which TIDER time localiser runs for a question: rules, or an LLM that sees dated summaries.

``Config.recall.time_localiser``:

* ``"rules"`` (default): :func:`timem.recall.time_channel.localise` — time expressions the code can
  resolve ("last week", "in May", "on 3 June").
* ``"llm"``: one LLM call (:mod:`timem.prompts.time_localiser`, TIDER §3.2) that also sees the
  :data:`N_SUMMARIES` L2 session / L3 day memories most similar to the question, with their dates, so
  that a window named by an event ("the weekend after she moved") can be placed. The model names days;
  the windows are cut at local midnight here. If the rules found a window the LLM's answer is not needed
  and no call is made. Any failure (no LLM, an unusable answer, a window that ends before it starts or
  lies after the question) falls back to the rules' answer, and the note says why.
"""

from __future__ import annotations

from timem.errors import LLMError, UnusableAnswerError
from timem.models import Level
from timem.prompts import time_localiser as prompt
from timem.recall.state import RecallState
from timem.recall.time_channel import TimeLocalisation, localise
from timem.recall.time_window import day_window

N_SUMMARIES = 30  #: dated L2/L3 memories shown to the LLM localiser (TIDER: the 30 most relevant)


def localise_question(state: RecallState) -> TimeLocalisation:
    """The question's time localisation by ``Config.recall.time_localiser`` (see the module doc). The LLM's
    windows must start on or before the day of ``state.question_time``; the dated summaries it sees are found
    with the state's question embedding. Fallbacks are noted in ``state.notes`` (they go to the recall trace).
    """
    store, llm, config, user_id = state.store, state.llm, state.config, state.user_id
    question, question_time, notes = state.query, state.question_time, state.notes
    rules = localise(question, question_time, state.tz)
    if config.recall.time_localiser != "llm" or rules.detect:
        return rules
    if llm is None:
        notes.append("time localiser 'llm' configured but no LLM available; rule-based localiser used")
        return rules
    hits: list[tuple[str, float]] = []
    for level in (Level.SESSION, Level.DAY):
        hits += store.search_vector(user_id, state.query_vector(), int(level), N_SUMMARIES)
    ids = [i for i, _ in sorted(hits, key=lambda h: -h[1])[:N_SUMMARIES]]
    nodes = sorted((n for n in store.nodes(user_id=user_id, ids=ids) if n.span_start <= question_time),
                   key=lambda n: (n.span_start, n.id))
    tz = state.tz
    shown = [(n.span_start.astimezone(tz).date(), n.span_end.astimezone(tz).date(), n.content) for n in nodes]
    asked_on = question_time.astimezone(tz).date()
    try:
        out = llm.complete_json(prompt.build_messages(question, asked_on, shown), prompt.LocaliserOut,
                                purpose="time-localiser", user_id=user_id, max_tokens=prompt.MAX_TOKENS)
    except (LLMError, UnusableAnswerError, ValueError) as exc:
        notes.append(f"LLM time localiser failed ({exc}); rule-based localiser used")
        return rules
    bad = [w for w in out.windows if w.end < w.start or w.start > asked_on]
    if bad:
        notes.append(f"LLM time localiser named an impossible window ({bad[0].start} to {bad[0].end}, asked on "
                     f"{asked_on}); rule-based localiser used")
        return rules
    if not out.detect or not out.windows:
        return TimeLocalisation(detect=False)
    days = sorted({(w.start, min(w.end, asked_on)) for w in out.windows})  # a window is cut at the question day
    return TimeLocalisation(detect=True, windows=[day_window(a, b, tz) for a, b in days],
                            phrases=[f"LLM: {a} to {b}" for a, b in days])
