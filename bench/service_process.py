"""The memory service under test of :mod:`service_load`: ``timem serve`` as a subprocess on 127.0.0.1
(:class:`Server`: start and wait for health, SIGTERM, ``kill -9``), and the faults injected mid-load:
:func:`kill_and_restart` (``kill -9`` of the one-process service, restarted on the same file and port) and
:func:`kill_shard_replica` (``kill -9`` of the Ray worker serving shard 0 with ``--ray``; Ray Serve starts a new one).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

__all__ = ["Server", "free_port", "kill_and_restart", "kill_shard_replica", "replica_pids"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``timem serve`` on ``db`` as a subprocess on 127.0.0.1:``port`` (log appended to ``log``)."""

    def __init__(self, db: Path, port: int, env: dict[str, str], log: Path, ray: int = 0) -> None:
        self.db, self.port, self.env, self.log, self.ray = db, port, env, log, ray
        self.base = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> float:
        """Start and wait until ``/v1/health`` answers; returns the seconds that took."""
        t0 = time.monotonic()
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "timem.cli", "serve", "--db", str(self.db), "--port",
                                          str(self.port), "--llm", "none",
                                          *(["--ray", "--replicas", str(self.ray)] if self.ray else [])],
                                         env=self.env, cwd=self.db.parent,
                                         stdout=log, stderr=subprocess.STDOUT)
        for _ in range(480):
            try:
                if httpx.get(f"{self.base}/v1/health", timeout=2).status_code == 200:
                    return time.monotonic() - t0
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None:
                raise SystemExit(f"the service exited; see {self.log}")
            time.sleep(0.25)
        raise SystemExit(f"the service did not answer in 120 s; see {self.log}")

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(60)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(120)


def kill_and_restart(server: Server, after: float, outages: list[float], stop: threading.Event) -> None:
    """kill -9 the service ``after`` seconds in, restart it on the same file; the outage goes to ``outages``."""
    if stop.wait(after):
        return
    t0 = time.monotonic()
    server.kill9()
    server.start()
    outages.append(time.monotonic() - t0)


def replica_pids(shard: int) -> list[int]:
    """PIDs of the Ray worker processes serving deployment ``timem-shard<shard>`` (their process title is
    ``ray::ServeReplica:<app>:timem-shard<shard>``), read from /proc."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "ServeReplica" in cmd and re.search(rf"timem-shard{shard}(?!\d)", cmd):
            out.append(int(proc.name))
    return out


def kill_shard_replica(server: Server, after: float, outages: list[float], stop: threading.Event) -> None:
    """kill -9 shard 0's replica process ``after`` seconds in; the time until a new replica process runs and
    the service's health answers goes to ``outages``."""
    if stop.wait(after):
        return
    old = replica_pids(0)
    if not old:
        raise SystemExit("no Ray Serve replica process of timem-shard0 found to kill")
    t0 = time.monotonic()
    for pid in old:
        os.kill(pid, signal.SIGKILL)
    while time.monotonic() - t0 < 300 and not stop.is_set():
        new = [p for p in replica_pids(0) if p not in old]
        try:
            healthy = bool(new) and httpx.get(f"{server.base}/v1/health", timeout=5).status_code == 200
        except httpx.HTTPError:
            healthy = False
        if healthy:
            outages.append(time.monotonic() - t0)
            return
        time.sleep(0.2)
