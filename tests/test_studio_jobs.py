"""Long consolidation runs in the background: pages stay usable, progress shows, writes wait, cancel works.

The scripted LLM blocks on an event, so the test decides when the first window's model call returns.
"""

from __future__ import annotations

import threading

import pytest
from helpers import ABSTRACTIVE
from streamlit.testing.v1 import AppTest
from studio_support import DEMO_USER, REPO, studio_answer

from timem.llm.client import LLM
from timem.llm.fake import ScriptedBackend
from timem.models import Level
from timem.ui import jobs
from timem.ui.state import ENGINE_KEY, USER_KEY


def _gated_engine(cfg, embedder, answer, model_id: str):
    """A :class:`MemoryEngine` on ``cfg``'s file whose scripted LLM answers with ``answer``; after the test, the
    background job is joined and the engine closed."""
    from timem.engine import MemoryEngine
    from timem.store import Store

    store = Store(cfg.store.db_path, embedder.model_id, embedder.dim)
    eng = MemoryEngine(cfg, store, embedder, LLM(ScriptedBackend(answer, model_id=model_id), store))
    yield eng
    job = jobs.current_job(eng)
    if job is not None:
        job.join(120)
    eng.close()


@pytest.fixture()
def gated(tmp_path, embedder):
    """An empty store whose L2-L5 a scripted LLM writes, each call waiting for ``gate``."""
    from timem.config import load_config

    gate = threading.Event()
    calls = []

    def answer(request):
        calls.append(request)
        assert gate.wait(120), "the test never opened the gate"
        return studio_answer(request)

    cfg = load_config(env={}, db_path=tmp_path / "jobs.duckdb", llm_backend="none", **ABSTRACTIVE)
    made = _gated_engine(cfg, embedder, answer, "scripted-gated")
    yield next(made), gate, calls
    gate.set()
    next(made, None)


def _app(eng, page=None) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    at.session_state[ENGINE_KEY] = eng
    at.session_state[USER_KEY] = "me"
    if page:
        at.switch_page(f"timem/studio/views/{page}.py")
    return at.run()


def _wait_for_call(calls, n=1, timeout=60.0) -> None:
    done = threading.Event()
    for _ in range(int(timeout * 10)):
        if len(calls) >= n:
            return
        done.wait(0.1)
    raise AssertionError(f"the background job made {len(calls)} model call(s), expected {n}")


def test_import_consolidates_in_the_background_and_pages_stay_usable(gated):
    eng, gate, calls = gated
    at = _app(eng)
    at.button(key="sb_imp_go").click().run()  # the bundled demo, abstractive: L1 now, L2-L5 in a job
    assert not at.exception, at.exception
    job = jobs.busy(eng)
    assert job is not None and job.user_ids == [DEMO_USER]
    assert any("in the background" in s.value for s in at.success)
    _wait_for_call(calls)  # the job is inside the first window's model call, the engine lock free
    assert {int(n.level) for n in eng.nodes(DEMO_USER)} == {1}

    at.run()  # the chat page: readable, the sidebar shows progress, the chat input waits
    assert not at.exception, at.exception
    assert at.session_state[USER_KEY] == DEMO_USER  # the sidebar counts are the imported user's
    assert at.get("progress") and any("written so far" in c.value for c in at.caption)
    assert at.chat_input[0].disabled
    assert any("running in the background" in i.value for i in at.info)
    assert at.button(key="sb_consolidate").disabled and at.button(key="sb_imp_go").disabled
    at.switch_page("timem/studio/views/timeline.py").run()  # browsing what is written works meanwhile
    assert not at.exception, at.exception

    at.button(key="sb_job_cancel").click().run()
    gate.set()
    assert job.join(120) and job.cancelled
    at.run()
    assert any("cancelled" in w.value for w in at.warning), [w.value for w in at.warning]
    assert jobs.current_job(eng) is None
    at.switch_page("timem/studio/views/chat.py").run()
    assert not at.chat_input[0].disabled  # chatting works again
    written = len(eng.nodes(DEMO_USER, int(Level.PROFILE)))
    assert written < 3  # cancelled before the last windows: they stay due

    at.checkbox(key="sb_flush").check().run()
    at.button(key="sb_consolidate").click().run()  # the rest, again in the background
    assert jobs.current_job(eng).join(300)
    at.run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert len(eng.nodes(DEMO_USER, int(Level.PROFILE))) == 3
    assert eng.check(DEMO_USER) == []


def test_a_failing_job_is_reported_not_lost(gated):
    eng, gate, calls = gated
    from timem.errors import LLMError

    def broken(request):
        raise LLMError("the endpoint is unreachable; start it or pick another backend")

    eng.llm.backend = ScriptedBackend(broken, model_id="scripted-broken")
    at = _app(eng)
    at.button(key="sb_imp_go").click().run()
    job = jobs.current_job(eng)
    assert job.join(120) and job.error and "unreachable" in job.error
    at.run()
    assert any("unreachable" in e.value for e in at.error), [e.value for e in at.error]
    assert {int(n.level) for n in eng.nodes(DEMO_USER)} == {1}  # the import's L1 stays; L2-L5 stay due


def test_a_chat_answer_is_shown_before_the_llm_consolidates_the_day_it_closed(gated):
    """Issue 15 #13: the consolidation a new session triggers must not hold up the answer."""
    eng, gate, calls = gated
    gate.set()  # day 1: a message and its session's L2, nothing held (an endpoint-like LLM: at once)
    at = _app(eng, "chat")
    at.radio(key="chat_time_mode").set_value("Simulated").run()
    at.chat_input[0].set_value("I adopted a grey cat called Pixel.").run()
    assert jobs.current_job(eng) is None and any("L1 segment" in c.value for c in at.caption)
    at.button(key="chat_end").click().run()
    assert not at.exception, at.exception
    assert eng.nodes("me", int(Level.SESSION)) and not eng.nodes("me", int(Level.DAY))
    at.button(key="chat_plus_+1 day").click().run()

    gate.clear()  # day 2: the answer is never held; the day-1 memory (L3) waits for the gate
    answered = threading.Event()

    def answer(request):
        calls.append(request)
        if request.json_schema is None and "Question:" in request.messages[-1].content:
            answered.set()
            return studio_answer(request)
        assert gate.wait(120), "the test never opened the gate"
        return studio_answer(request)

    backend = ScriptedBackend(answer, model_id="scripted-gated-2")
    # stands in for the embedded model: a LocalModel (timem.llm.protocol), with a model file and a prompt cache
    backend.model_path, backend.warm = "scripted.gguf", lambda msgs: 0  # type: ignore[attr-defined]
    eng.llm.backend = backend
    at.chat_input[0].set_value("What is my cat called?").run()  # returns while L3 waits for the gate
    assert not at.exception, at.exception
    assert answered.is_set()
    assert any("Scripted answer to: What is my cat called?" in m.value for m in at.markdown), \
        [m.value for m in at.markdown]
    job = jobs.busy(eng)
    assert job is not None and job.title == "Memories of the last exchange"
    assert any("written in the background" in c.value for c in at.caption)
    assert at.chat_input[0].disabled  # the next message waits for the memories
    gate.set()
    assert job.join(120) and not job.error, job.error
    assert eng.nodes("me", int(Level.DAY))  # day 1's memory, written after the answer was shown


@pytest.fixture()
def endpoint_extractive(tmp_path, embedder):
    """An empty store in extractive mode whose LLM is an OpenAI-compatible endpoint (scripted), so that the memory
    items are read by the LLM (``memory_extractor = "auto"``), each call waiting for ``gate``."""
    from timem.config import load_config

    gate = threading.Event()
    calls: list[tuple[str, bool]] = []  #: (thread name, whether it was a memory-items call)

    def answer(request):
        calls.append((threading.current_thread().name,
                      "items" in (request.json_schema or {}).get("properties", {})))
        assert gate.wait(120), "the test never opened the gate"
        return studio_answer(request)

    cfg = load_config(env={}, db_path=tmp_path / "endpoint.duckdb", llm_backend="none",
                      consolidation_mode="extractive").with_overrides(llm_backend="openai")
    made = _gated_engine(cfg, embedder, answer, "scripted-endpoint")
    yield next(made), gate, calls
    gate.set()
    next(made, None)


def test_an_extractive_import_reads_items_with_the_llm_in_the_background_and_can_be_cancelled(endpoint_extractive):
    """Issue 27 #7: in extractive mode the sidebar's import ran the LLM's memory-item extraction in the foreground
    (385 s for the demo with the embedded model, no Cancel). It runs in the background job now."""
    eng, gate, calls = endpoint_extractive
    assert eng.items_use_llm and jobs.slow_consolidation(eng)
    at = _app(eng)
    at.button(key="sb_imp_go").click().run()  # returns with L1 written and no model call made
    assert not at.exception, at.exception
    job = jobs.busy(eng)
    assert job is not None and job.user_ids == [DEMO_USER]
    assert {int(n.level) for n in eng.nodes(DEMO_USER)} == {1} and not eng.memory_items(DEMO_USER)
    _wait_for_call(calls)
    assert calls[0][1] and calls[0][0].startswith("timem-job-"), calls  # the job's thread asks for the items
    sessions = len(eng.store.sessions(DEMO_USER))
    assert "memory items" in job.stage and (job.done_items, job.total) == (0, sessions), (job.stage, job.total)
    at.run()  # the sidebar shows that stage, the chat waits
    assert not at.exception, at.exception
    assert at.chat_input[0].disabled and any("running in the background" in i.value for i in at.info)
    assert any("memory items" in p.proto.text for p in at.get("progress")), [p.proto.text for p in at.get("progress")]

    at.button(key="sb_job_cancel").click().run()  # stops between two sessions, not after all of them
    gate.set()
    assert job.join(120) and job.cancelled, job.summary()
    assert [c for c in calls if c[1]] == [calls[0]], calls
    assert all(name.startswith("timem-job-") for name, _ in calls), calls  # no LLM call in the page's thread
    read = eng.memory_items(DEMO_USER)
    eng.consolidate(DEMO_USER, flush=True)  # the sessions not read stay due: the next write reads them, once each
    assert len([c for c in calls if c[1]]) == sessions
    assert len(eng.memory_items(DEMO_USER)) > len(read)
