"""Support for the studio tests: a scripted studio LLM and a demo store prepared once per session.

Not a test module (no ``test_`` prefix): imported by ``tests/test_app_*.py`` and
``tests/test_browser_screenshots.py``.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from helpers import consolidation_answer
from streamlit.testing.v1 import AppTest

from timem.llm.client import LLM
from timem.llm.fake import ScriptedBackend
from timem.llm.protocol import ChatRequest
from timem.ui.state import ENGINE_KEY, USER_KEY

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "timem" / "data" / "demo_conversation.jsonl"
DEMO_USER = "demo-mia"
SCRIPTED_MODEL = "scripted-studio"


_SECTION = re.compile(r"\n(Segments of this session|Sessions of this day|Days of this week|Weeks of this month):\n")
_SPEAKER = re.compile(r"^[^\W\d][\w .'-]{0,30}: ")
_SENTENCES = re.compile(r"(?<=[.!?。！？])\s*")


def extractive_summary(prompt: str, max_sentences: int = 3) -> str | None:
    """A deterministic stand-in for an L2–L5 memory: the first substantial sentence of the first
    children in the prompt (speaker prefixes and date lines dropped); ``None`` if no children section."""
    found = list(_SECTION.finditer(prompt))
    if not found:
        return None
    picked: list[str] = []
    for line in prompt[found[-1].end():].splitlines():
        line = line.strip()
        if line.startswith(("Now write", "Earlier ")):  # the history block / closing instruction after the children
            break
        if not line or line.startswith(("[", "Assistant:")) or re.match(r"On \d", line):
            continue
        parts = [p for p in _SENTENCES.split(_SPEAKER.sub("", line)) if p]
        best = next((p for p in parts if len(p.split()) >= 5 or len(p) >= 12), parts[0] if parts else "")
        if best and best not in picked:
            picked.append(best)
        if len(picked) == max_sentences:
            break
    return " ".join(picked) or "Nothing to remember."


def scripted_items(prompt: str) -> list[dict]:
    """The memory-items answer of the scripted LLM: the rule extractor's statements of each numbered turn."""
    import re

    from timem.memory.rules import extract_statements

    out = []
    for m in re.finditer(r"^(\d+)\. ([^:\n]+): (.*)$", prompt, re.MULTILINE):
        for st in extract_statements(m[3]):
            if st.attribute:
                out.append({"turn": int(m[1]), "kind": st.kind, "subject": m[2], "attribute": st.attribute,
                            "value": st.value, "correction": st.correction, "replaces": st.replaces})
    return out


def answer_request(request: ChatRequest) -> str | None:
    """The question (or, in a chat, the message that asks nothing: answer-v9's "Message:") of an answer prompt, else
    ``None``."""
    if request.json_schema is not None:
        return None
    asked = re.findall(r"^(?:Question|Message): (.*)$", request.messages[-1].content, re.MULTILINE)
    return asked[-1].strip() if asked else None


def studio_answer(request: ChatRequest) -> str:
    """A valid answer for every prompt the studio triggers: planner, gate, answer and consolidation
    (consolidation: :func:`extractive_summary`, so that screenshots read sensibly; model id says scripted)."""
    props = (request.json_schema or {}).get("properties", {})
    if "keep" in props:
        return json.dumps({"keep": [1, 2, 3]})
    if "items" in props:  # memory items: what the rule extractor reads in the numbered turns
        return json.dumps({"items": scripted_items(request.messages[-1].content)})
    if "complexity" in props:
        return json.dumps({"complexity": "simple", "keywords": ["tea"], "time_expression": None})
    last = request.messages[-1].content
    if (asked := answer_request(request)) is not None:
        return f"Scripted answer to: {asked}"
    summary = extractive_summary(last)
    if summary is None:
        return consolidation_answer(request)
    if "profiles" in props:  # L5, JSON (one profile per person)
        return json.dumps({"profiles": [{"person": "Mia", "profile": summary}]})
    if "summary" in props:  # L2-L4, JSON
        return json.dumps({"summary": summary})
    if request.json_schema is None:  # plain-text consolidation prompts
        return f"Mia: {summary}" if "People to profile" in last else summary
    return consolidation_answer(request)


def studio_llm(store=None) -> tuple[LLM, ScriptedBackend]:
    """An :class:`LLM` over a :class:`ScriptedBackend` answering with :func:`studio_answer`."""
    backend = ScriptedBackend(studio_answer, model_id=SCRIPTED_MODEL)
    return LLM(backend, store), backend


def build_demo_db(path: Path, embedder, **config_overrides) -> Path:
    """Ingest the bundled demo into a new DuckDB file at ``path`` with the scripted LLM; returns ``path``."""
    from timem.config import load_config
    from timem.datasets import load_dataset
    from timem.engine import MemoryEngine
    from timem.store import Store

    # the scripted LLM writes L2-L5 (without a backend the default mode would be extractive)
    cfg = load_config(env={}, db_path=path, llm_backend="none",
                      **{"consolidation_mode": "abstractive", **config_overrides})
    store = Store(path, embedder.model_id, embedder.dim)
    try:
        llm, _ = studio_llm(store)
        MemoryEngine(cfg, store, embedder, llm).ingest(load_dataset(DEMO, "jsonl", tz=cfg.time.tz))
    finally:
        store.close()
    return path


def open_engine(template: Path, workdir: Path, embedder, *, with_llm: bool = True, **config_overrides):
    """A :class:`MemoryEngine` over a fresh copy of ``template`` (scripted LLM unless ``with_llm`` is false)."""
    from timem.config import load_config
    from timem.engine import MemoryEngine
    from timem.store import Store

    db = workdir / "studio.duckdb"
    shutil.copy(template, db)
    if with_llm:  # the scripted LLM writes L2-L5 (without a backend the default mode would be extractive)
        config_overrides = {"consolidation_mode": "abstractive", **config_overrides}
    cfg = load_config(env={}, db_path=db, llm_backend="none", cache_dir=workdir / "cache", **config_overrides)
    store = Store(db, embedder.model_id, embedder.dim)
    llm = studio_llm(store)[0] if with_llm else None
    return MemoryEngine(cfg, store, embedder, llm)


def studio_app(backend, user: str = DEMO_USER, page: str | None = None, timeout: float = 180) -> AppTest:
    """The studio (``app.py``) in AppTest, run once, showing ``backend`` (a MemoryEngine or a ServiceClient,
    injected: the studio opens nothing itself) for ``user``, on ``page`` (a file of timem/studio/views)."""
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=timeout)
    at.session_state[ENGINE_KEY] = backend
    at.session_state[USER_KEY] = user
    if page:
        at.switch_page(f"timem/studio/views/{page}.py")
    return at.run()


def assert_clean(at: AppTest) -> None:
    """No exception and no error box on the page."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
