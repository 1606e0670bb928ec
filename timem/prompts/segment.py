"""L1 segment consolidation with an LLM: a batch of exchanges -> facts per exchange (JSON per exchange).

Relative dates are already resolved in the input (``yesterday [= 7 May 2023]``) by
:mod:`timem.reldates`; the prompt asks the model to keep the absolute dates.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from timem.llm.protocol import Message
from timem.prompts.common import LANGUAGE_RULE

PROMPT_VERSION = "l1-segment-v1"


class ExchangeFacts(BaseModel):
    exchange: int = Field(ge=1, description="number of the exchange in the input")
    facts: list[str] = Field(min_length=1, description="third-person facts stated in this exchange")


class SegmentBatch(BaseModel):
    segments: list[ExchangeFacts]


def max_tokens(n_exchanges: int) -> int:
    """Output budget for a batch of ``n_exchanges`` exchanges."""
    return 120 + 120 * n_exchanges


def build_messages(exchanges: Sequence[str], history: Sequence[str]) -> list[Message]:
    """Messages asking for facts from each numbered exchange.

    Args:
        exchanges: rendered exchanges (date line + ``Speaker: text`` lines), oldest first.
        history: contents of the 3 latest earlier L1 memories, for resolving references only.
    """
    system = ("You turn conversation exchanges into memory facts. For EACH numbered exchange, list the "
              "facts it states, in the third person with the speaker's name (\"Caroline went to ...\"), "
              "each fact once. Use the absolute dates given in brackets instead of words like 'yesterday'. "
              "Attribute every fact to the person it is about. " + LANGUAGE_RULE +
              ' Answer with JSON: {"segments": [{"exchange": 1, "facts": ["..."]}, ...]} with one item '
              "per exchange.")
    prior = "\n".join(f"- {h}" for h in history) or "(none)"
    body = "\n\n".join(f"Exchange {i}:\n{x}" for i, x in enumerate(exchanges, start=1))
    user = f"Earlier memories (context only):\n{prior}\n\n{body}"
    return [Message(role="system", content=system), Message(role="user", content=user)]
