"""Crash durability of the memory service: ``timem serve`` as a subprocess on 127.0.0.1, concurrent
writers (threads, httpx, an idempotency key per write), ``kill -9`` mid-load, a restart on the same
DuckDB file, the writers retrying every unacknowledged write with its key. Afterwards every acknowledged
write is stored exactly once (texts compared), nothing else is stored, and ``timem check`` exits 0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from service_support import free_port

from timem.service import KeyFile

REPO = Path(__file__).resolve().parents[1]
WRITERS, USERS = 4, 2
BASE = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)


def _start(db: Path, port: int, log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TIMEM_LLM_BACKEND": "none"}
    proc = subprocess.Popen([sys.executable, "-m", "timem.cli", "serve", "--db", str(db), "--port", str(port),
                             "--llm", "none"], env=env, cwd=db.parent, stdout=log.open("a"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"timem serve exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    pytest.fail(f"timem serve did not answer within 120 s: {log.read_text()[-2000:]}")


class Writer(threading.Thread):
    """Writes exchanges to one user, each with its own idempotency key, retrying a write (same key, same
    body) until it is answered 200; records what was acknowledged."""

    def __init__(self, idx: int, base: str, key: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.idx, self.user, self.stop = idx, f"u{idx % USERS}", stop
        self.http = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        self.acked: dict[str, str] = {}  # turn id -> text
        self.sent: list[tuple[str, dict, list[str]]] = []  # (key, body, turn ids) of every acknowledged write
        self.retries = self.replayed = 0
        self.error: str | None = None

    def write(self, n: int) -> None:
        key = f"w{self.idx}-{n}"
        body = {"session_id": f"w{self.idx}", "event_time": (BASE + timedelta(minutes=2 * n)).isoformat(),
                "message": f"[w{self.idx}.{n}] I watered the tomatoes in the garden.",
                "reply": f"[w{self.idx}.{n}] Noted."}
        give_up = time.monotonic() + 180
        while True:
            try:
                r = self.http.post(f"/v1/users/{self.user}/turns", json=body, headers={"Idempotency-Key": key})
                if r.status_code == 200:
                    break
                if r.status_code < 500:
                    raise AssertionError(f"write {key} refused: {r.status_code} {r.text}")
            except httpx.TransportError:
                pass
            if time.monotonic() > give_up:
                raise AssertionError(f"write {key} was never acknowledged")
            self.retries += 1
            time.sleep(0.2)
        out = r.json()
        self.replayed += out["replayed"]
        self.acked.update(zip(out["turn_ids"], [body["message"], body["reply"]], strict=True))
        self.sent.append((key, body, out["turn_ids"]))

    def run(self) -> None:
        try:
            n = 0
            while not self.stop.is_set():
                self.write(n)
                n += 1
        except Exception as exc:  # noqa: BLE001 - any failure is reported by the test, not swallowed
            self.error = f"{type(exc).__name__}: {exc}"


@pytest.mark.slow
def test_kill_9_mid_load_loses_and_duplicates_nothing(tmp_path):
    db, log, port = tmp_path / "crash.duckdb", tmp_path / "serve.log", free_port()
    key = KeyFile(tmp_path / "crash.duckdb.keys.json").add("acme")
    base = f"http://127.0.0.1:{port}"
    server = _start(db, port, log)
    stop = threading.Event()
    writers = [Writer(i, base, key, stop) for i in range(WRITERS)]
    try:
        for w in writers:
            w.start()
        deadline = time.monotonic() + 60
        while min(len(w.sent) for w in writers) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        acked_before = sum(len(w.sent) for w in writers)
        assert acked_before >= 3 * WRITERS, "the writers did not get going"
        server.send_signal(signal.SIGKILL)  # kill -9 mid-load: writes are in flight
        server.wait(30)
        server = _start(db, port, log)
        time.sleep(2)  # load continues on the restarted service
        stop.set()
        for w in writers:
            w.join(200)
        assert [w.error for w in writers] == [None] * WRITERS
        assert all(not w.is_alive() for w in writers)
        assert sum(len(w.sent) for w in writers) > acked_before  # writes were acknowledged after the restart
        # an acknowledgement lost in the crash: the client resends an early write with its key -> replayed
        for w in writers:
            k, body, ids = w.sent[0]
            r = w.http.post(f"/v1/users/{w.user}/turns", json=body, headers={"Idempotency-Key": k})
            assert r.status_code == 200 and r.json()["replayed"] is True and r.json()["turn_ids"] == ids
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
            stored = {u: c.get(f"/v1/users/{u}/export").json()["turns"] for u in (f"u{i}" for i in range(USERS))}
    finally:
        stop.set()
        server.send_signal(signal.SIGTERM)
        server.wait(60)
        for w in writers:
            w.http.close()
    print(f"acknowledged writes: {sum(len(w.sent) for w in writers)} ({acked_before} before the kill); "
          f"retries {sum(w.retries for w in writers)}, replayed {sum(w.replayed for w in writers)}")
    for user, turns in stored.items():
        acked = {tid: text for w in writers if w.user == user for tid, text in w.acked.items()}
        got = {t["id"]: t["text"] for t in turns}
        assert Counter(t["id"] for t in turns).most_common(1)[0][1] == 1
        texts = Counter(got.values())
        assert [t for t, k in texts.items() if k > 1] == []  # no write stored twice
        assert got == acked  # every acknowledged write present with its text, and nothing unacknowledged
    check = subprocess.run([sys.executable, "-m", "timem.cli", "check", "--db", str(db)], capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
