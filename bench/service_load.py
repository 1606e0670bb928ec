"""Bounded load test of the memory service (``timem serve``) on 127.0.0.1.

Starts ``timem serve`` on a fresh DuckDB file (two tenants, one key each), runs N client threads for T
seconds over U users per tenant (mixed: exchanges written, recalls, memory listings), then stops by itself
and reports:

* p50 / p95 / p99 latency and count per endpoint, errors per endpoint and status;
* tenant (and user) isolation, checked on every response: each written text carries a marker
  ``[tenant.user.client.n]``, and a response for tenant X's user u must not contain a marker of another
  tenant or another user;
* afterwards, through each user's export: every acknowledged turn is stored exactly once with its text
  (turns stored whose request never got an answer are counted separately);
* ``timem check`` on the file after the service stopped.

Every write carries an ``Idempotency-Key`` and is resent (same key, same body) after a transport error or
a 5xx until it is answered, so the end state is exactly once. ``--kill-after S`` kills the service with
SIGKILL (``kill -9``) S seconds into the load and restarts it on the same file and port; the clients ride
through the outage and the same checks run afterwards (the report gives the outage, retries and replays).

Usage (prints a markdown report; writes nothing under bench/results)::

    python bench/service_load.py --clients 4 --seconds 20 --users 10
    python bench/service_load.py --clients 20 --seconds 120 --users 25   # the issue's run: 50 users
    python bench/service_load.py --clients 20 --seconds 120 --users 25 --kill-after 60   # kill -9 mid-load
    python bench/service_load.py --clients 20 --seconds 120 --users 25 --ray 2   # timem serve --ray, 2 shards

With ``--ray N`` the service is ``timem serve --ray --replicas N`` (a local Ray cluster in the service's process,
N shard files beside the file); the checks are the same, and ``timem check`` runs on every shard file.
``--kill-after`` is for the one-process service; with ``--ray`` it kills one shard's replica process instead
(``kill -9`` of the Ray worker that serves ``timem-shard0``): Ray Serve starts a new replica on the same shard
file, the router and the other shard keep serving, and the report gives the time until the new replica's
process is up and the service answers again.

The service process and the faults injected into it are in ``bench/service_process.py``.

Exit code 1 if an isolation breach, a lost or duplicated turn, or a failed check was found.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from service_process import Server, free_port, kill_and_restart, kill_shard_replica

from timem.service.keys import KeyFile, default_keys_path
from timem.service.shards import shard_paths

TENANTS = ("acme", "beta")
MARK = re.compile(r"\[(\w+)\.(u\d+)\.c\d+\.\d+\]")
WORDS = ("cat", "garden", "concert", "train", "sister", "recipe", "bicycle", "museum", "exam", "holiday")
BASE = datetime(2024, 1, 1, 8, 0, tzinfo=UTC)


class Stats:
    """Latencies, errors, breaches and acknowledged turns, shared by the client threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lat: dict[str, list[float]] = defaultdict(list)
        self.errors: Counter[tuple[str, str]] = Counter()
        self.breaches: list[str] = []
        self.acked: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)  # (tenant, user) -> turn id -> text
        self.minute: Counter[tuple[str, str]] = Counter()
        self.retries = 0  #: resends of a write (same key) after a transport error or a 5xx
        self.replayed = 0  #: writes answered as already stored (their first attempt was stored, unanswered)
        self.gave_up: list[str] = []  #: writes never acknowledged (their key), past the final deadline

    def next_time(self, tenant: str, user: str) -> datetime:
        with self.lock:
            self.minute[(tenant, user)] += 1
            return BASE + timedelta(minutes=3 * self.minute[(tenant, user)])


def _check_isolation(stats: Stats, tenant: str, user: str, endpoint: str, text: str) -> None:
    for t, u in set(MARK.findall(text)):
        if (t, u) != (tenant, user):
            with stats.lock:
                stats.breaches.append(f"{endpoint} for {tenant}/{user} returned a memory of {t}/{u}")


def _write(c: httpx.Client, user: str, body: dict, key: str, stats: Stats,
           give_up: float) -> tuple[httpx.Response | None, float]:
    """POST the turns with ``key`` until answered below 500 (transport errors and 5xx counted, then resent
    after 0.2 s); returns the answer and the latency of the answered attempt (ms), or (None, 0) past ``give_up``."""
    endpoint = "POST turns"
    while True:
        t0 = time.perf_counter()
        try:
            r = c.post(f"/v1/users/{user}/turns", json=body, headers={"Idempotency-Key": key})
            if r.status_code < 500:
                return r, (time.perf_counter() - t0) * 1000
            stats.errors[(endpoint, str(r.status_code))] += 1
        except httpx.HTTPError as exc:
            stats.errors[(endpoint, type(exc).__name__)] += 1
        if time.monotonic() > give_up:
            with stats.lock:
                stats.gave_up.append(key)
            return None, 0.0
        with stats.lock:
            stats.retries += 1
        time.sleep(0.2)


def _client(idx: int, base: str, keys: dict[str, str], users: int, deadline: float, stats: Stats, seed: int) -> None:
    rng = random.Random(seed + idx)
    clients = {t: httpx.Client(base_url=base, headers={"Authorization": f"Bearer {k}"}, timeout=60)
               for t, k in keys.items()}
    n = 0
    try:
        while time.monotonic() < deadline:
            tenant, user = rng.choice(TENANTS), f"u{rng.randrange(users)}"
            known = bool(stats.acked.get((tenant, user)))
            op = rng.random()
            c = clients[tenant]
            if op < 0.5 or not known:
                endpoint, n = "POST turns", n + 1
                marker = f"[{tenant}.{user}.c{idx}.{n}]"
                w = rng.choice(WORDS)
                body = {"session_id": f"c{idx}-{stats.minute[(tenant, user)] // 20}",
                        "event_time": stats.next_time(tenant, user).isoformat(),
                        "message": f"{marker} Today I talked about my {w} again.", "reply": f"{marker} Noted."}
                r, ms = _write(c, user, body, marker[1:-1], stats, deadline + 180)
                if r is None:
                    continue
                dt = ms / 1000
                if r.status_code == 200:
                    ids = r.json()["turn_ids"]
                    with stats.lock:
                        stats.replayed += r.json()["replayed"]
                        stats.acked[(tenant, user)].update(zip(ids, [body["message"], body["reply"]], strict=True))
            elif op < 0.9:
                endpoint = "POST recall"
                t0 = time.perf_counter()
                try:
                    r = c.post(f"/v1/users/{user}/recall",
                               json={"query": f"What did I say about my {rng.choice(WORDS)}?"})
                except httpx.HTTPError as exc:
                    stats.errors[(endpoint, type(exc).__name__)] += 1
                    continue
                dt = time.perf_counter() - t0
            else:
                endpoint = "GET memories"
                t0 = time.perf_counter()
                try:
                    r = c.get(f"/v1/users/{user}/memories", params={"level": 1})
                except httpx.HTTPError as exc:
                    stats.errors[(endpoint, type(exc).__name__)] += 1
                    continue
                dt = time.perf_counter() - t0
            _check_isolation(stats, tenant, user, endpoint, r.text)
            with stats.lock:
                stats.lat[endpoint].append(dt * 1000)
                if r.status_code != 200:
                    stats.errors[(endpoint, str(r.status_code))] += 1
    finally:
        for c in clients.values():
            c.close()


def _verify(base: str, keys: dict[str, str], stats: Stats) -> tuple[int, list[str], int]:
    """Every acknowledged turn stored exactly once with its text; returns (turns checked, problems,
    stored turns never acknowledged)."""
    problems, checked, extra = [], 0, 0
    for tenant, key in keys.items():
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120) as c:
            users = c.get("/v1/users").json()["users"]
            for user in users:
                data = c.get(f"/v1/users/{user}/export")
                _check_isolation(stats, tenant, user, "GET export", data.text)
                turns = data.json()["turns"]
                counts = Counter(t["id"] for t in turns)
                texts = {t["id"]: t["text"] for t in turns}
                for tid, text in stats.acked.get((tenant, user), {}).items():
                    checked += 1
                    if counts[tid] != 1 or texts.get(tid) != text:
                        problems.append(f"{tenant}/{user} turn {tid}: stored {counts[tid]}x, "
                                        f"text ok={texts.get(tid) == text}")
                extra += sum(1 for tid in counts if tid not in stats.acked.get((tenant, user), {}))
                dup_text = [m for m, k in Counter(texts.values()).items() if k > 1]
                problems += [f"{tenant}/{user}: text stored twice: {m[:60]}" for m in dup_text]
    return checked, problems, extra


def _queue_sampler(base: str, keys: dict[str, str], every: float, samples: list[int], stop: threading.Event) -> None:
    """Every ``every`` seconds, the consolidation jobs pending or running over both tenants (``GET /v1/queue``):
    how far the worker is behind the writes."""
    clients = [httpx.Client(base_url=base, headers={"Authorization": f"Bearer {k}"}, timeout=30) for k in keys.values()]
    try:
        while not stop.wait(every):
            total = 0
            for c in clients:
                try:
                    q = c.get("/v1/queue").json()
                except (httpx.HTTPError, ValueError):
                    break
                total += int(q.get("pending", 0)) + int(q.get("running", 0))
            else:
                samples.append(total)
    finally:
        for c in clients:
            c.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--users", type=int, default=10, help="users per tenant")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--dir", type=Path, default=None, help="work folder (default: a temporary one)")
    ap.add_argument("--kill-after", type=float, default=None, metavar="SECONDS",
                    help="kill -9 the service this many seconds into the load, then restart it on the same file "
                         "(with --ray: kill -9 shard 0's replica process; Ray Serve starts a new one)")
    ap.add_argument("--ray", type=int, default=0, metavar="N",
                    help="serve with timem serve --ray --replicas N (N shards) instead of one process")
    args = ap.parse_args()

    work = args.dir or Path(tempfile.mkdtemp(prefix="timem-load-"))
    work.mkdir(parents=True, exist_ok=True)
    db = work / "load.duckdb"
    kf = KeyFile(default_keys_path(db))
    keys = {t: kf.add(t) for t in TENANTS}
    env = {**os.environ, "PYTHONPATH": str(REPO), "TIMEM_LLM_BACKEND": "none"}
    server = Server(db, free_port(), env, work / "serve.log", args.ray)
    base = server.base
    outages: list[float] = []
    stop_killer = threading.Event()
    try:
        server.start()
        stats = Stats()
        t_start = time.monotonic()
        deadline = t_start + args.seconds
        threads = [threading.Thread(target=_client, args=(i, base, keys, args.users, deadline, stats, args.seed))
                   for i in range(args.clients)]
        queue_samples: list[int] = []
        threads.append(threading.Thread(target=_queue_sampler, args=(base, keys, 5.0, queue_samples, stop_killer)))
        if args.kill_after is not None:
            killer = kill_shard_replica if args.ray else kill_and_restart
            threads.append(threading.Thread(target=killer, args=(server, args.kill_after, outages, stop_killer)))
        for t in threads:
            t.start()
        for t in threads[:args.clients]:
            t.join()
        stop_killer.set()
        for t in threads[args.clients:]:
            t.join()
        wall = time.monotonic() - t_start
        checked, problems, extra = _verify(base, keys, stats)
    finally:
        stop_killer.set()
        server.stop()
    files = shard_paths(db, args.ray) if args.ray else [db]
    checks = [subprocess.run([sys.executable, "-m", "timem.cli", "check", "--db", str(f)], env=env, cwd=work,
                             capture_output=True, text=True, check=False) for f in files]

    print(f"# Service load test: {args.clients} clients, {args.seconds:.0f} s, {args.users} users x "
          f"{len(TENANTS)} tenants\n")
    served = f"timem serve --ray --replicas {args.ray}" if args.ray else "timem serve (one process)"
    print(f"{served}; wall {wall:.1f} s; " + ", ".join(f"file {f} ({f.stat().st_size / 1e6:.1f} MB)" for f in files)
          + "\n")
    total = sum(len(a) for a in stats.lat.values())
    print(f"all endpoints: {total} requests, {total / wall:.1f} req/s\n")
    print("| endpoint | n | req/s | p50 ms | p95 ms | p99 ms | errors |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for ep in sorted(stats.lat):
        a = np.array(stats.lat[ep])
        errs = ", ".join(f"{s}: {k}" for (e, s), k in sorted(stats.errors.items()) if e == ep) or "0"
        print(f"| {ep} | {len(a)} | {len(a) / wall:.1f} | {np.percentile(a, 50):.0f} | {np.percentile(a, 95):.0f} | "
              f"{np.percentile(a, 99):.0f} | {errs} |")
    transport = {k: v for k, v in stats.errors.items() if k[0] not in stats.lat}
    if transport:
        print(f"\ntransport errors: {dict(transport)}")
    if args.kill_after is not None:
        what = "shard 0's replica process" if args.ray else "the service"
        back = "a new replica up and the service answering" if args.ray else "service back"
        print(f"\nkill -9 of {what} at {args.kill_after:.0f} s: " + (f"{back} after {outages[0]:.1f} s" if outages
                                                                     else "not reached (the load ended first)"))
    if queue_samples:
        print(f"\nconsolidation jobs pending or running, sampled every 5 s: median {int(np.median(queue_samples))}, "
              f"max {max(queue_samples)}, last {queue_samples[-1]} ({len(queue_samples)} samples)")
    print(f"\nwrites resent {stats.retries}x (same key); {stats.replayed} answered as already stored; "
          f"{len(stats.gave_up)} never acknowledged")
    print(f"\nisolation: {len(stats.breaches)} breach(es) over every response" +
          "".join(f"\n- {b}" for b in stats.breaches[:10]))
    print(f"turns: {checked} acknowledged, {len(problems)} lost/duplicated/changed, {extra} stored without an "
          "acknowledgement" + "".join(f"\n- {p}" for p in problems[:10]))
    for f, check in zip(files, checks, strict=True):
        said = (check.stdout.strip() or check.stderr.strip()).splitlines()
        print(f"timem check {f.name}: exit {check.returncode}: {' / '.join(said[-3:])}")
    failed = any(c.returncode != 0 for c in checks)
    return 1 if stats.breaches or problems or stats.gave_up or failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
