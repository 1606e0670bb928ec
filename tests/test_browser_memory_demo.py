"""The bundled demo in the running studio with the embedded model: the morning-drink question of issue 14.

Mia switched from coffee to green tea on 21 April 2024. Asked in the chat "What do I usually drink in the
morning these days?", the answer must name tea, speak to the user ("you"), and the recall trace must show
the coffee memory item as superseded. Headless Chromium types the question; the embedded Qwen model
answers (a real-model test: minutes on 2 cores). The screenshot is kept as ``memory_demo.png`` next to the
others when ``TIMEM_UPDATE_SCREENSHOTS=1``.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest
from browser_support import Browser, find_chromium, studio_server
from studio_support import DEMO_USER, build_demo_db
from test_browser_screenshots import OPEN_TRACE_JS, SHOTS, TYPE_AND_SEND_JS, _wait_for, _wait_ready

pytestmark = [pytest.mark.browser, pytest.mark.slow]

QUESTION = "What do I usually drink in the morning these days?"
CONTEXT_TAB_JS = """(() => {
  const tabs = [...document.querySelectorAll('[data-testid="stTab"], [role="tab"]')]
    .filter(b => b.innerText.trim() === 'Context');
  if (!tabs.length) return false;
  tabs[tabs.length - 1].click();
  return true;
})()"""
LAST_ANSWER_JS = """(() => {
  const msgs = [...document.querySelectorAll('[data-testid="stChatMessage"]')];
  return msgs.length ? msgs[msgs.length - 1].innerText : null;
})()"""


@pytest.fixture(scope="module")
def local_server(tmp_path_factory, embedder):
    work = tmp_path_factory.mktemp("memory-demo")
    db = work / "studio.duckdb"
    build_demo_db(db, embedder, consolidation_mode="extractive")  # the tree and the memory items, no model
    with studio_server(db, work, "local") as base:
        yield base, work


def test_demo_morning_drink_is_tea_for_you_with_coffee_superseded(local_server):
    base, work = local_server
    binary = find_chromium()
    if binary is None:
        pytest.fail("Chromium is not installed: `make browser-deps` (apt-get install chromium)")
    shot = work / "memory_demo.png"
    with Browser(binary) as browser:
        browser.screenshot(f"{base}/?user={DEMO_USER}", shot, timeout=180)
        assert browser.evaluate(TYPE_AND_SEND_JS), "no chat input on the chat page"
        browser.send("Input.insertText", text=QUESTION)
        for kind in ("keyDown", "keyUp"):
            browser.send("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter", windowsVirtualKeyCode=13)
        _wait_for(browser, QUESTION[:20], 60)
        _wait_ready(browser, 900)  # the embedded model loads, then answers
        answer = (browser.evaluate(LAST_ANSWER_JS) or "").lower()
        assert "tea" in answer, answer
        assert any(w.strip(".,!?") in ("you", "your") for w in answer.split()), answer  # addressed to the user
        assert browser.evaluate(OPEN_TRACE_JS), "the answer has no recall trace expander"
        time.sleep(2.0)
        assert browser.evaluate(CONTEXT_TAB_JS), "the trace has no Context tab"
        time.sleep(2.0)
        page = browser.evaluate("document.body.innerText") or ""
        after = page.lower().split("superseded", 1)
        assert len(after) == 2 and any(w in after[1][:400] for w in ("coffee", "espresso")), page[-2000:]
        browser.capture(shot)
    log = (work / "server.log").read_text()
    assert "Traceback" not in log, log[-3000:]
    if os.environ.get("TIMEM_UPDATE_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, SHOTS / shot.name)
