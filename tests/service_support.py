"""Start the memory service on a free 127.0.0.1 port in a thread (real uvicorn, real DuckDB file)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn

from timem.config import load_config
from timem.engine import MemoryEngine
from timem.llm.client import LLM
from timem.llm.fake import ScriptedBackend
from timem.service import KeyFile, create_app
from timem.store import Store


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def engine_factory(db: Path, embedder, answer: Callable | None = None, **cfg) -> Callable[[], MemoryEngine]:
    """Build the engine over ``db`` with the shared embedder; ``answer`` scripts the LLM (else none). Writes
    consolidate in the request (``online_queue=False``) unless the test asks for the queue (tests/test_queue.py):
    these tests read the memories a write reports."""
    cfg.setdefault("online_queue", False)

    def make() -> MemoryEngine:
        config = load_config(env={}, db_path=db, llm_backend="none", cache_dir=db.parent / "cache",
                             consolidation_mode="extractive", **cfg)
        store = Store(db, embedder.model_id, embedder.dim)
        llm = LLM(ScriptedBackend(answer), store) if answer is not None else None
        return MemoryEngine(config, store, embedder, llm)
    return make


@contextmanager
def serving(app) -> Iterator[tuple[str, uvicorn.Server]]:
    """Serve any ASGI ``app`` on a free 127.0.0.1 port until the block ends; yields the base URL and the server."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the service did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.should_exit = True
        thread.join(30)


@contextmanager
def running(factory: Callable[[], MemoryEngine], keys: KeyFile) -> Iterator[str]:
    """Serve the app until the block ends; yields the base URL."""
    with serving(create_app(factory, keys)) as (base, _):
        yield base


@contextmanager
def two_tenants(folder: Path, embedder) -> Iterator[tuple[str, dict[str, str]]]:
    """A service over ``folder/timem.duckdb`` (no LLM, rule-based memory items) with tenants ``acme`` and ``beta``;
    yields the base URL and each tenant's key."""
    kf = KeyFile(folder / "timem.duckdb.keys.json")
    keys = {t: kf.add(t) for t in ("acme", "beta")}
    with running(engine_factory(folder / "timem.duckdb", embedder, memory_extractor="rules"), kf) as base:
        yield base, keys


def client(base: str, key: str | None) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"} if key else {}, timeout=60)
