"""Headless Chromium over the DevTools protocol, enough to screenshot a Streamlit page after it rendered.

``chromium --screenshot`` fires at the load event, before Streamlit's websocket delivers the page,
and ``--virtual-time-budget`` does not wait for websocket traffic; so the browser is driven over
CDP instead: navigate, wait until the app reports ``script-state notRunning`` with a title on the
page, let plotly draw, then ``Page.captureScreenshot``. Uses the ``websockets`` sync client.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Self

from websockets.sync.client import connect

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-quic", "--hide-scrollbars",
                  "--window-size=1400,1000"]

#: JS: true once Streamlit finished the script run and the main area shows a title
READY_JS = """(() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  if (!main.querySelector('h1')) return false;
  if (main.querySelector('[data-testid="stSpinner"], [data-testid="stSkeleton"]')) return false;
  return true;
})()"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_chromium() -> str | None:
    """Path of the Debian ``chromium`` (or another Chrome) binary, if installed."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def wait_http(url: str, timeout: float) -> str:
    """GET ``url`` until it answers 200; returns the body. Raises TimeoutError."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return r.read().decode()
        except OSError as exc:
            last = exc
        time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f} s (last error: {last})")


class Browser:
    """One headless Chromium with a fresh profile, driven over CDP (use as a context manager)."""

    def __init__(self, binary: str) -> None:
        self.port = free_port()
        self.profile = Path(tempfile.mkdtemp(prefix="timem-chromium-"))
        self.proc = subprocess.Popen([binary, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}",
                                      f"--remote-debugging-port={self.port}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        targets = json.loads(wait_http(f"http://127.0.0.1:{self.port}/json/list", 30))
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = connect(page["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024).__enter__()
        self._id = 0
        self.send("Page.enable")
        # --window-size includes the (invisible) window frame; pin the viewport itself
        self.send("Emulation.setDeviceMetricsOverride", width=1400, height=1000, deviceScaleFactor=1, mobile=False)

    def send(self, method: str, **params) -> dict:
        """Send one CDP command and return its result (events in between are skipped)."""
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"CDP {method} failed: {msg['error']}")
                return msg.get("result", {})

    def evaluate(self, js: str):
        return self.send("Runtime.evaluate", expression=js, returnByValue=True).get("result", {}).get("value")

    def screenshot(self, url: str, path: Path, *, timeout: float = 120.0, settle: float = 2.5) -> Path:
        """Open ``url``, wait for the rendered page (see :data:`READY_JS`), save a PNG at ``path``.

        Raises:
            TimeoutError: the page did not finish rendering within ``timeout`` seconds.
        """
        self.send("Page.navigate", url=url)
        time.sleep(1.0)
        deadline = time.monotonic() + timeout
        ready_since = None
        while True:
            if self.evaluate(READY_JS):
                ready_since = ready_since or time.monotonic()
                if time.monotonic() - ready_since >= settle:  # stays ready: plotly and late reruns are done
                    break
            else:
                ready_since = None
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not render within {timeout:.0f} s")
            time.sleep(0.5)
        return self.capture(path)

    def capture(self, path: Path) -> Path:
        """Save the current viewport as a PNG at ``path`` (no waiting)."""
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.ws.__exit__(None, None, None)
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def studio_server(db: Path, work: Path, llm_backend: str) -> Iterator[str]:
    """``streamlit run app.py`` on a free 127.0.0.1 port over DuckDB file ``db`` with ``llm_backend``; yields
    the base URL; the server log is ``work / "server.log"``."""
    port = free_port()
    env = {**os.environ, "TIMEM_DB_PATH": str(db), "TIMEM_LLM_BACKEND": llm_backend,
           "TIMEM_CACHE_DIR": str(work / "cache"), "PYTHONUNBUFFERED": "1"}
    env.pop("TIMEM_CONFIG", None)
    with (work / "server.log").open("w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.address",
                                 "127.0.0.1", "--server.port", str(port), "--server.headless", "true"],
                                cwd=Path(__file__).resolve().parents[1], env=env, stdout=log,
                                stderr=subprocess.STDOUT)
        try:
            wait_http(f"http://127.0.0.1:{port}/_stcore/health", 90)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
