"""The built wheel carries the studio, its views and the demo: install it into a clean venv (no checkout on
its path), start ``timem studio`` from it, and import the bundled demo through the studio's sidebar."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import sysconfig
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

AFTER_IMPORT = textwrap.dedent("""
    import sys, timem
    from streamlit.testing.v1 import AppTest
    from timem.datasets import DEMO_FILE
    from timem.ui.router import APP_PY
    assert APP_PY.is_relative_to(sys.prefix) and DEMO_FILE.is_relative_to(sys.prefix), (APP_PY, sys.prefix)
    at = AppTest.from_file(str(APP_PY), default_timeout=300).run()
    assert not at.exception, at.exception
    at.button(key="sb_imp_go").click().run()
    assert not at.exception, at.exception
    assert any("Imported demo-mia" in s.value for s in at.success), [s.value for s in at.success]
    at.switch_page("views/timeline.py").run()
    assert not at.exception, at.exception
    print("OK", timem.__file__)
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory) -> Path:
    """A venv with only the timem wheel installed; its dependencies come from this venv's site-packages
    through a plain path entry (so the checkout's editable install is not seen)."""
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp / "dist"), str(REPO)], check=True)
    wheel = next((tmp / "dist").glob("timem-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True)
    site = Path(subprocess.check_output([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        text=True).strip())
    (site / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("TIMEM_")}
    return {**env, "HOME": str(tmp), "TIMEM_DB_PATH": str(tmp / "studio.duckdb"), "TIMEM_LLM_BACKEND": "none"}


def test_installed_wheel_starts_the_studio_and_imports_the_demo(wheel_venv, tmp_path):
    env = _env(tmp_path)
    where = subprocess.check_output([str(wheel_venv / "bin" / "python"), "-c", "import timem; print(timem.__file__)"],
                                    cwd=tmp_path, env=env, text=True).strip()
    assert where.startswith(str(wheel_venv)), where  # the installed copy, not the checkout
    port = _free_port()
    proc = subprocess.Popen([str(wheel_venv / "bin" / "timem"), "studio", "--port", str(port)], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5) as r:
                    assert r.read() == b"ok"
                    break
            except OSError as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        f"timem studio did not start: {proc.stdout.read() if proc.stdout else ''}") from exc
                time.sleep(0.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/timeline", timeout=10) as r:
            assert r.status == 200 and b"<html" in r.read().lower()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    out = subprocess.run([str(wheel_venv / "bin" / "python"), "-c", AFTER_IMPORT], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and "OK " + str(wheel_venv) in out.stdout, out.stdout[-3000:] + out.stderr[-3000:]
