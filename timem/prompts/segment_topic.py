"""A one-line topic for a segment-tree node (SegTreeMem, arXiv 2606.04555: "a node's text is its span's
utterances, or a summary when an LLM is configured"). Short output, so fast on the embedded model; the
line is checked by the grounding filter against the node's utterances before it is stored. The answer
schema and its cleaning are the hybrid title's (:mod:`timem.prompts.title`)."""

from __future__ import annotations

from timem.llm.protocol import Message
from timem.prompts.common import LANGUAGE_RULE, language_note
from timem.prompts.title import MAX_TOKENS, NodeTitle, render

PROMPT_VERSION = "segtree-topic-v1"

__all__ = ["MAX_TOKENS", "PROMPT_VERSION", "NodeTitle", "build_messages", "render"]


def build_messages(lines: str) -> list[Message]:
    """Messages asking for one topic line for the utterances ``lines`` (``"Speaker: text"`` per line)."""
    system = ("You write a one-line topic for a stretch of a conversation: what it is about, at most 15 words, "
              "no date, using only what the lines say. " + LANGUAGE_RULE + ' Answer with JSON: {"title": "..."}.')
    user = f"Lines of the conversation:\n{lines}\n\nNow write the topic (one line, at most 15 words)."
    return [Message(role="system", content=system), Message(role="user", content=user + language_note(lines))]
