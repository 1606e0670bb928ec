"""Start ``streamlit run app.py`` on 127.0.0.1 and screenshot every page in headless Chromium.

The server runs against a DuckDB file prepared before it starts (the bundled demo ingested with the
scripted LLM) and with ``TIMEM_LLM_BACKEND=none``, so it never loads the embedded model. The chat
page is screenshotted after one exchange (typed into the chat box over CDP) with its recall trace
open; the Recall inspector then shows that stored trace.

The Memories page is filtered to a Chinese word of the demo (``TIMEM_SCREENSHOT_CJK_SEARCH``, default
上海; empty to skip), so that its screenshot shows Chinese text: without a CJK font (Debian
``fonts-noto-cjk``, installed by ``make browser-deps``) it would be empty boxes.

``TIMEM_UPDATE_SCREENSHOTS=1`` copies the PNGs to ``docs/screenshots/``.
``TIMEM_SCREENSHOT_DB=path`` uses that DuckDB file (a copy of it) instead of the scripted demo, e.g.
one ingested with the real embedded model for nicer screenshots; then ``TIMEM_SCREENSHOT_USER``,
``TIMEM_SCREENSHOT_QUESTION`` and ``TIMEM_SCREENSHOT_LLM`` (e.g. ``local``: the chat answer comes from
the embedded model) pick who is shown, what is asked and which LLM the server uses.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest
from browser_support import Browser, find_chromium, studio_server
from PIL import Image
from studio_support import DEMO_USER, REPO, build_demo_db

pytestmark = pytest.mark.browser

#: (file name, url path, what must be visible)
PAGES = [
    ("chat", "", "Chat"),
    ("timeline", "timeline", "Timeline"),
    ("recall_inspector", "recall_inspector", "Recall inspector"),
    ("manifold", "manifold", "Manifold"),
    ("memories", "memories", "Memories"),
]
SHOTS = REPO / "docs" / "screenshots"

TYPE_AND_SEND_JS = """(() => {
  const box = document.querySelector('[data-testid="stChatInputTextArea"]');
  if (!box) return false;
  box.focus();
  return true;
})()"""

OPEN_TRACE_JS = """(() => {
  const sums = [...document.querySelectorAll('[data-testid="stExpander"] summary')]
    .filter(s => s.innerText.includes('Recall trace'));
  if (!sums.length) return false;
  sums[sums.length - 1].click();
  return true;
})()"""

CANDIDATES_TAB_JS = """(() => {
  const tab = [...document.querySelectorAll('[data-testid="stTab"], [role="tab"]')]
    .find(b => b.innerText.trim() === 'Candidates');
  if (!tab) return false;
  tab.click();
  return true;
})()"""

SEARCH_JS = """(() => {
  const box = document.querySelector('input[aria-label="Search"]');
  if (!box) return false;
  box.focus();
  return true;
})()"""

#: the Memories screenshot is filtered to the demo's Chinese session, so it shows CJK text (a font check)
CJK_SEARCH = os.environ.get("TIMEM_SCREENSHOT_CJK_SEARCH", "上海")

EXCEPTION_JS = """(() => {
  const e = document.querySelector('[data-testid="stException"]');
  return e ? e.innerText.slice(0, 2000) : null;
})()"""


@pytest.fixture(scope="module")
def server(tmp_path_factory, embedder):
    """A studio server on a free port; yields its base URL."""
    work = tmp_path_factory.mktemp("browser")
    db = work / "studio.duckdb"
    given = os.environ.get("TIMEM_SCREENSHOT_DB")
    if given:
        shutil.copy(given, db)
    else:
        build_demo_db(db, embedder)
    with studio_server(db, work, os.environ.get("TIMEM_SCREENSHOT_LLM", "none")) as base:
        yield base, work / "server.log"


@pytest.fixture(scope="module")
def browser():
    binary = find_chromium()
    if binary is None:
        pytest.fail("Chromium is not installed: `make browser-deps` (apt-get install chromium)")
    with Browser(binary) as b:
        yield b


def assert_picture(path: Path) -> None:
    """The PNG exists, is 1400x1000 and shows something (not one flat colour, enough ink)."""
    assert path.exists() and path.stat().st_size > 20_000, f"{path} is missing or tiny"
    img = Image.open(path).convert("L")
    assert img.size == (1400, 1000)
    hist = img.histogram()  # 256 bins of grey levels
    ink = sum(hist[:160]) / (img.size[0] * img.size[1])
    assert ink > 0.005, f"{path.name} is almost blank ({ink:.2%} dark pixels)"
    assert sum(1 for h in hist if h) > 40, f"{path.name} has too few shades to be a rendered page"


QUESTION = os.environ.get("TIMEM_SCREENSHOT_QUESTION", "What do I drink in the morning now?")


def test_screenshot_every_page(server, browser, tmp_path):
    base, log = server
    out = tmp_path / "shots"
    out.mkdir()
    shots = []
    for name, url_path, title in PAGES:
        url = f"{base}/{url_path}?user={os.environ.get('TIMEM_SCREENSHOT_USER', DEMO_USER)}"
        path = out / f"{name}.png"
        timeout = 240 if name == "manifold" else 120  # the first UMAP compiles numba
        if name == "chat":
            browser.screenshot(url, path, timeout=timeout)
            assert browser.evaluate(TYPE_AND_SEND_JS), "no chat input on the chat page"
            browser.send("Input.insertText", text=QUESTION)
            for kind in ("keyDown", "keyUp"):
                browser.send("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter",
                             windowsVirtualKeyCode=13)
            _wait_for(browser, QUESTION[:15], 60)
            _wait_ready(browser, 600)  # an answer from the embedded model takes a while on 2 cores
            assert browser.evaluate(OPEN_TRACE_JS), "the answer has no recall trace expander"
            time.sleep(2.0)  # let the expander's tabs and tables draw
            browser.capture(path)
        else:
            browser.screenshot(url, path, timeout=timeout)
        if name == "memories" and CJK_SEARCH:  # Chinese memories: rendered glyphs, not empty boxes
            assert browser.evaluate(SEARCH_JS), "no Search box on the Memories page"
            browser.send("Input.insertText", text=CJK_SEARCH)
            for kind in ("keyDown", "keyUp"):
                browser.send("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter",
                             windowsVirtualKeyCode=13)
            _wait_ready(browser, 60)
            shown = browser.evaluate("document.body.innerText") or ""
            assert re.search(r"\b[1-9]\d* of \d+ active memories", shown), shown[-500:]
            browser.capture(path)
        if name == "recall_inspector":  # show the candidate table with its semantic / BM25 / fused scores
            assert browser.evaluate(CANDIDATES_TAB_JS), "the stored trace has no Candidates tab"
            time.sleep(2.0)
            browser.capture(path)
        error = browser.evaluate(EXCEPTION_JS)
        assert error is None, f"{name} page shows an exception:\n{error}\n--- server log ---\n{log.read_text()[-3000:]}"
        assert title in browser.evaluate("document.body.innerText")
        assert_picture(path)
        shots.append(path)
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
    if os.environ.get("TIMEM_UPDATE_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        for p in shots:
            shutil.copy(p, SHOTS / p.name)


def _wait_for(browser: Browser, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in (browser.evaluate("document.body.innerText") or ""):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{text!r} did not appear within {timeout:.0f} s")
        time.sleep(0.5)


def _wait_ready(browser: Browser, timeout: float) -> None:
    from browser_support import READY_JS

    deadline = time.monotonic() + timeout
    time.sleep(1.0)
    while not browser.evaluate(READY_JS):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the page did not settle within {timeout:.0f} s")
        time.sleep(0.5)
    time.sleep(1.5)
