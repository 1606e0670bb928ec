"""Issue 15 #13: how long a chat turn takes in the studio on the embedded default (idle 2-core machine).

Drives the real studio with Streamlit's AppTest and the studio's own engine (built from TIMEM_* settings,
so the embedded model unless told otherwise): imports the bundled demo from the sidebar, then asks the
questions below in the Chat page, one exchange each in simulated time, and prints per question the wall
time of the page run (message -> answer shown), the recall trace's stages (ms), the LLM calls with
their prompt tokens, and the answer.

    TIMEM_DB_PATH=/tmp/chat-latency.duckdb .venv/bin/python bench/chat_latency.py

Not a test: it needs the embedded model and minutes of CPU. The Chat page warms the model in the background
(loads it and evaluates the chat's system prompt, :func:`timem.ui.chat._warm`); the script waits for that, as a
person reading the page would, and prints how long it took.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = ["What do I usually drink in the morning these days?", "Where do I work now?",
             "What did I say about my sister last month?"]


def main() -> None:
    from timem.ui import jobs, state

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=3600).run()
    t = time.perf_counter()
    at.button(key="sb_imp_go").click().run()  # the bundled demo
    db = str(Path(state.base_config().store.db_path).expanduser().resolve())
    engine = state._open_engine(db, state.base_config().with_overrides(db_path=Path(db))).engine
    job = jobs.current_job(engine)
    if job is not None:
        job.join(3600)
    mode = engine.config.consolidation.consolidation_mode
    print(f"import: {time.perf_counter() - t:.0f} s; consolidation mode {mode}, "
          f"LLM {'on' if engine.has_llm else 'off'}", flush=True)
    at.run()
    at.radio(key="chat_time_mode").set_value("Simulated").run()
    print(f"warm-up of the chat prompt (background, while the person reads the page): {_join_warm():.1f} s",
          flush=True)
    for q in QUESTIONS:
        t = time.perf_counter()
        at.chat_input[0].set_value(q).run()
        wall = time.perf_counter() - t
        problems = [e.value for e in at.exception] + [e.value for e in at.error]
        if problems:
            sys.exit(f"{q}: {problems}")
        trace = engine.traces(limit=1)[0]
        calls = ", ".join(f"{c.purpose} {c.latency_ms / 1000:.1f} s ({c.prompt_tokens} prompt tokens)"
                          for c in trace.llm_calls)
        stages = {k: round(v) for k, v in trace.latency_ms.items()}
        print(f"{wall:5.1f} s  {q}\n        stages ms {stages}\n        LLM: {calls}\n        answer: {trace.answer}",
              flush=True)
        job = jobs.current_job(engine)
        if job is not None:
            job.join(3600)
            at.run()
            print(f"        warm-up after the background job: {_join_warm():.1f} s", flush=True)


def _join_warm() -> float:
    """Wait for the studio's background warm-up of the chat prompt (``timem.ui.chat._warm``); its duration."""
    t = time.perf_counter()
    for thread in threading.enumerate():
        if thread.name == "timem-chat-warm":
            thread.join(600)
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
