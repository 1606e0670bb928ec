"""Small things a newcomer saw in the studio (issue 27 item 10): one memory is never "1 memories", and "Forget by
text" stays open after Enter, with its preview and its button. AppTest over app.py with an injected engine (real
MiniLM + DuckDB, no LLM)."""

from __future__ import annotations

import re

import pytest
from memory_scenario import EN, write
from streamlit.testing.v1 import AppTest
from studio_support import assert_clean, studio_app

from timem.chat_turns import reply_without_llm
from timem.config import load_config
from timem.datasets import load_dataset
from timem.engine import MemoryEngine
from timem.store import Store

PAGES = ("chat", "timeline", "memories", "recall_inspector", "manifold")
#: "1 memories", "of 1 memories", "1 active memories" (not "11 memories" nor "0.1 memories")
ONE_MEMORIES = re.compile(r"(?<![\d.,])1 (?:[a-z]+ )?memories\b")


@pytest.fixture()
def engine(tmp_path, embedder):
    cfg = load_config(env={}, db_path=tmp_path / "one.duckdb", llm_backend="none", consolidation_mode="extractive")
    eng = MemoryEngine(cfg, Store(cfg.store.db_path, embedder.model_id, embedder.dim), embedder, None)
    yield eng
    eng.close()


def page_text(at: AppTest) -> str:
    """Every string of the rendered page (labels, bodies, captions, help), as protobuf text."""
    out: list[str] = []

    def walk(node) -> None:
        if (proto := getattr(node, "proto", None)) is not None:
            out.append(str(proto))
        children = getattr(node, "children", None) or {}
        for child in children.values() if isinstance(children, dict) else children:
            walk(child)

    walk(at._tree)
    return "\n".join(out)


def test_one_memory_is_never_called_1_memories(engine):
    at = studio_app(engine, user="me", page="chat")
    at.chat_input[0].set_value("I adopted a grey cat called Pixel.").run()  # one L1 memory
    assert_clean(at)
    assert len(engine.nodes("me")) == 1
    for page in PAGES:
        at.switch_page(f"timem/studio/views/{page}.py").run()
        assert_clean(at)
        text = page_text(at)
        assert not ONE_MEMORIES.findall(text), (page, [m.group(0) for m in re.finditer(
            r".{0,60}" + ONE_MEMORIES.pattern, text)])
    at.switch_page("timem/studio/views/chat.py").run()
    at.chat_input[0].set_value("What is my cat called?").run()  # recall finds the one memory: its trace says so
    assert_clean(at)
    text = page_text(at)
    assert "Recall trace · simple · 1 memory ·" in text, "the chat's trace expander does not say 1 memory"
    assert "(cl100k), 1 memory\"" in text, "the trace's context tab does not say 1 memory"
    assert not ONE_MEMORIES.findall(text)
    # the no-LLM reply the engine returns (the service and `timem chat` show it) agrees too
    assert "Recall found 1 memory," in reply_without_llm(1, 27)
    assert "Recall found 2 memories," in reply_without_llm(2, 54)


def test_forget_by_text_stays_open_after_enter_and_forgets_on_its_button(engine, tmp_path):
    f = write(tmp_path / "mia.jsonl", "mia", EN)
    engine.ingest(load_dataset(f, "jsonl", tz=engine.config.time.tz, user_tz=engine.config.time.user_tz))
    at = studio_app(engine, user="mia", page="memories")
    at.radio(key="mem_view").set_value("Facts").run()
    assert_clean(at)

    def box():
        return next(e for e in at.expander if e.label == "Forget by text")

    assert not box().proto.expanded  # closed until it holds text
    at.text_input(key="facts_forget_text").set_value("I work at Blue Harbor").run()  # typed, then Enter
    assert_clean(at)
    assert box().proto.expanded  # Enter reran the page: the box is still open, with the preview in it
    preview = " ".join(c.value for c in box().code)
    assert "Blue Harbor" in preview and "data analyst" in preview, preview
    assert any(i.value == "Blue Harbor" for i in engine.memory_items("mia"))  # a preview forgets nothing
    box().button(key="facts_forget_confirm").click().run()
    assert_clean(at)
    assert not any("Blue Harbor" in i.value for i in engine.memory_items("mia"))
    # the line and the assistant's reply to it (timem.memory.forget_scope.replies)
    assert any("Forgot 2 item(s) and 2 segment(s)" in s.value for s in [*at.success, *at.info, *at.toast]), \
        [s.value for s in [*at.success, *at.info, *at.toast]]
