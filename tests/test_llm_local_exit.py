"""Ctrl-C on `make studio` while the embedded model is busy segfaulted (issue 27 #10): at exit, the atexit hook
freed the llama.cpp model while a daemon thread (a background import's extraction, the chat's warm-up) was still
inside its decode. A busy model is now waited for briefly and, if still busy, never freed. Stand-in models (no
llama.cpp): the hook, the locks, the threads and the interpreter's exit are real."""

from __future__ import annotations

import ctypes
import subprocess
import sys
import textwrap
import threading

from conftest import REPO

from timem.llm import local


class StandIn:
    """What :func:`timem.llm.local._close_all` needs of a ``llama_cpp.Llama``: ``close()``."""

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def _busy(lock: threading.Lock, seconds: float) -> threading.Thread:
    """A thread that holds ``lock`` (as a running chat call does) for ``seconds``."""
    held = threading.Event()

    def run() -> None:
        with lock:
            held.set()
            threading.Event().wait(seconds)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    held.wait()
    return t


def test_a_busy_model_is_not_freed_and_an_idle_one_is(monkeypatch):
    idle, busy, soon = StandIn(), StandIn(), StandIn()
    locks = [threading.Lock(), threading.Lock(), threading.Lock()]
    monkeypatch.setattr(local, "_LLAMAS", {("/idle", 1, 1): (idle, locks[0]), ("/busy", 1, 1): (busy, locks[1]),
                                           ("/soon", 1, 1): (soon, locks[2])})
    monkeypatch.setattr(local, "_PINNED", [])
    _busy(locks[1], 5.0)
    finishing = _busy(locks[2], 0.2)
    refs = sys.getrefcount(busy)
    local._close_all(wait_s=1.0)
    finishing.join()
    assert idle.closed and soon.closed  # a call that ends within the wait is waited for, then freed
    assert not busy.closed and local._PINNED == [busy]
    # the registry's reference went; the list's and a deliberate extra one came: never deallocated
    assert sys.getrefcount(busy) == refs + 1
    assert local._LLAMAS == {}
    ctypes.pythonapi.Py_DecRef(ctypes.py_object(busy))  # this stand-in may go


def test_the_interpreter_exits_cleanly_while_a_model_is_busy(tmp_path):
    """A real interpreter exit with the real atexit hook: a stand-in "decode" thread aborts the process (as the
    segfault did) if the model is freed under it."""
    script = tmp_path / "busy_exit.py"
    script.write_text(textwrap.dedent("""
        import atexit, os, sys, threading, time
        from timem.llm import local

        class StandIn:
            freed = False
            def close(self):
                self.freed = True
                time.sleep(0.3)  # freeing takes a moment; the decode notices
            def __del__(self):
                self.close()

        model, lock, started = StandIn(), threading.Lock(), threading.Event()
        local._LLAMAS[("/m.gguf", 1, 1)] = (model, lock)
        local.CLOSE_WAIT_S = 0.3
        atexit.register(local._close_all)  # as _load_llama registers it

        def decode():
            with lock:
                started.set()
                while True:
                    if model.freed:
                        os.write(2, b"model freed under a running decode\\n")
                        os._exit(139)
                    time.sleep(0.005)

        threading.Thread(target=decode, daemon=True).start()
        started.wait()
        sys.exit(0)
    """))
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                         cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    assert "freed under a running decode" not in res.stderr
