"""The embedded model's replies to fixed chat messages through the answer prompt (no recall, no cache).

    PYTHONPATH=. .venv/bin/python bench/chat_replies.py

Each case is a chat message from "Mia" with an empty or a two-line context, built by
:func:`timem.prompts.answer.build_messages` as the chat builds it and sent once to the configured backend (the
embedded model by default), temperature 0, at most 80 tokens. Prints seconds, the message and the reply: a check
by eye of greetings, statements and questions after a change to the answer prompt (answer-v10).
"""

from __future__ import annotations

import time
from datetime import datetime

from timem.config import load_config
from timem.errors import ConfigError
from timem.llm.factory import make_backend
from timem.llm.protocol import ChatRequest
from timem.prompts import answer

CONTEXT = ("On Tue 02 Apr 2024 08:15: Mia: Hi! I'm Mia. I just moved to Lisbon for a new job.\n"
           "On Wed 10 Apr 2024 07:40: Mia: I usually drink green tea in the morning these days.")
CASES = [("Hi!", ""), ("Hi!", CONTEXT), ("Hello there", CONTEXT), ("Thanks!", CONTEXT), ("Good night", ""),
         ("你好！", ""), ("I adopted a dog named Rex.", CONTEXT), ("我养了一只猫。", ""),
         ("Which city do I live in now?", CONTEXT), ("What do I drink in the morning?", CONTEXT),
         ("我住在哪个城市？", CONTEXT)]


def main() -> None:
    """Send every case once and print ``seconds | message context? -> reply``."""
    backend = make_backend(load_config())
    if backend is None:
        raise ConfigError("llm_backend is 'none': set it to 'local' (the default) or 'openai' to see replies")
    when = datetime(2024, 6, 20, 9, 0)
    for message, context in CASES:
        t0 = time.perf_counter()
        reply = backend.chat(ChatRequest(messages=answer.build_messages(message, context, when, asker="Mia"),
                                         max_tokens=80))
        print(f"{time.perf_counter() - t0:5.1f}s | {message!r} context={bool(context)} -> {reply.text.strip()!r}",
              flush=True)


if __name__ == "__main__":
    main()
