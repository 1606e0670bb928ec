"""``streamlit run app.py`` connected to a live memory service (as `timem studio --service URL --key KEY` starts it),
screenshotted in headless Chromium: the Timeline page shows the tenant's memories and the sidebar says where they
come from; the studio's process creates no DuckDB file.

``TIMEM_UPDATE_SCREENSHOTS=1`` copies the PNG to ``docs/screenshots/service_timeline.png``.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime, timedelta

import pytest
from browser_support import Browser, find_chromium, studio_server
from service_support import engine_factory, running
from test_browser_screenshots import EXCEPTION_JS, SHOTS, assert_picture

from timem.service import KeyFile
from timem.service.client import ServiceClient

pytestmark = pytest.mark.browser

T0 = datetime(2024, 5, 2, 9, 0, tzinfo=UTC)
SAID = ["I live in Lisbon and I adopted a grey cat called Pixel.", "My sister Ana is a doctor in Porto.",
        "I drink green tea every morning now.", "I started swimming on Tuesdays."]


@pytest.fixture(scope="module")
def embedder(fake_embedder):
    return fake_embedder


def test_screenshot_of_the_studio_over_a_live_service(tmp_path, embedder, monkeypatch):
    binary = find_chromium()
    if binary is None:
        pytest.fail("Chromium is not installed: `make browser-deps` (apt-get install chromium)")
    kf = KeyFile(tmp_path / "svc.duckdb.keys.json")
    key = kf.add("acme")
    with running(engine_factory(tmp_path / "svc.duckdb", embedder, memory_extractor="rules"), kf) as base:
        with ServiceClient(base, key) as c:
            for day, text in enumerate(SAID):
                c.chat_turn("mia", f"s{day}", text, T0 + timedelta(days=day), user_name="Mia")
                c.end_session("mia", f"s{day}")
            c.consolidate("mia", flush=True)
        work = tmp_path / "studio"
        work.mkdir()
        db = work / "never.duckdb"
        monkeypatch.setenv("TIMEM_SERVICE_URL", base)
        monkeypatch.setenv("TIMEM_SERVICE_KEY", key)
        with studio_server(db, work, "none") as url, Browser(binary) as browser:
            path = browser.screenshot(f"{url}/timeline?user=mia", work / "service_timeline.png")
            text = browser.evaluate("document.body.innerText") or ""
            assert browser.evaluate(EXCEPTION_JS) is None, (work / "server.log").read_text()[-3000:]
            assert f"Connected to {base} as tenant acme" in text, text[:1500]
            assert "Timeline" in text and "memories" in text
            assert_picture(path)
        assert "Traceback" not in (work / "server.log").read_text()
        assert not list(work.glob("*.duckdb*")), "the studio created a DuckDB file"
    if os.environ.get("TIMEM_UPDATE_SCREENSHOTS") == "1":
        shutil.copy(path, SHOTS / path.name)
