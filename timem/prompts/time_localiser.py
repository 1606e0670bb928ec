"""TIDER's LLM time localiser (arXiv 2610.23598 §3.2): does a question need a time constraint, and which
window(s)? The model sees the question, the question time and the most relevant dated L2/L3 summaries,
so that a window named by an event ("the weekend after she moved") can be placed on the calendar.

The model names calendar days only; turning them into UTC windows stays in code
(:func:`timem.recall.time_window.day_window`), because small models get date arithmetic wrong.
"""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, ConfigDict, Field

from timem.llm.protocol import Message

PROMPT_VERSION = "time-localiser-v1"
MAX_TOKENS = 96
MAX_SUMMARY_CHARS = 300  #: each dated summary is cut to this many characters in the prompt


class WindowOut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    start: date = Field(description="first day of the window, YYYY-MM-DD")
    end: date = Field(description="last day of the window (inclusive), YYYY-MM-DD")


class LocaliserOut(BaseModel):
    """The model's answer: ``detect`` and at most two windows (two for comparisons)."""

    model_config = ConfigDict(extra="forbid")

    detect: bool = Field(description="true if answering needs memories from a particular time")
    windows: list[WindowOut] = Field(default_factory=list, max_length=2)


def build_messages(question: str, asked_on: date, summaries: list[tuple[date, date, str]]) -> list[Message]:
    """Messages for one localisation.

    Args:
        question: the user's question, as asked.
        asked_on: the question's day in the user's zone.
        summaries: ``(first day, last day, text)`` of the dated L2/L3 memories shown as landmarks, in time
            order (the caller picks the most relevant ones).
    """
    system = ("You decide whether answering a question about a person's past conversations needs memories "
              "from a particular time, and which days. Use the dated summaries as landmarks to place events "
              "the question names. If the question names no time and no datable event, or asks when "
              "something happened, answer detect false. Give at most two windows (two only when the "
              "question compares two times). Answer with JSON: "
              '{"detect": true, "windows": [{"start": "YYYY-MM-DD", "end": "YYYY-MM-DD"}]}.')
    lines = [f"[{a.isoformat()}{'' if a == b else ' to ' + b.isoformat()}] "
             f"{' '.join(text.split())[:MAX_SUMMARY_CHARS]}" for a, b, text in summaries]
    user = (f"Dated summaries:\n{chr(10).join(lines) if lines else '(none)'}\n\n"
            f"Today is {asked_on.isoformat()}.\nQuestion: {question}\n\nJSON:")
    return [Message(role="system", content=system), Message(role="user", content=user)]
