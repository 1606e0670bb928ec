"""The memory service as a Ray Serve application (``timem serve --ray``, docs/cluster.md).

Deployments:

- ``timem-shard<i>`` (:class:`ShardService`, one replica each): the ordinary one-process service app
  (:func:`timem.service.create_app`) over its own shard file (:func:`timem.service.shards.shard_paths`), of which it
  is the only writer. It is driven in its own process by ASGI calls (:func:`call_app`), so every rule of the service
  (keys, tenants, errors, idempotency, the queue worker) holds unchanged on a shard.
- ``timem-router`` (:class:`ShardRouter`, the HTTP ingress): checks the API key as the service does (401 without a
  valid one, nothing forwarded), finds the tenant, then sends the request as it came to the shard owning its user
  (:func:`timem.service.shards.route`), or to every shard for a tenant-wide route, merging their answers
  (:func:`timem.service.shards.merge`). A streamed chat completion is streamed through.

Needs ``ray[serve]`` (the ``[cluster]`` extra); this module imports Ray, so import it only for ``--ray``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import signal
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from ray import serve
from ray.exceptions import RayError
from ray.serve.exceptions import RayServeException
from ray.serve.handle import DeploymentHandle, DeploymentResponseGenerator
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from timem.cluster import ClusterError, connect
from timem.config import Config
from timem.errors import AuthError
from timem.service.context import STATUS
from timem.service.keys import NO_KEY, KeyFile, request_key
from timem.service.shards import Route, check_layout, merge, route, shard_of, shard_paths

_log = logging.getLogger(__name__)

APP_NAME = "timem"


class ShardServeError(ClusterError):
    """The Ray Serve application did not start (a shard replica failed to open its file, or Serve failed)."""


def _request_dict(method: str, path: str, query: bytes, headers: list[tuple[bytes, bytes]], body: bytes
                  ) -> dict[str, Any]:
    return {"method": method, "path": path, "query": query, "headers": headers, "body": body}


async def call_app(app: Any, req: dict[str, Any], state: dict[str, Any] | None = None
                   ) -> AsyncIterator[dict[str, Any]]:
    """Run one HTTP request ``req`` (:func:`_request_dict`) through the ASGI ``app`` in this process; yields the
    app's ``http.response.start`` and ``http.response.body`` messages as it sends them. When the caller stops
    early (a client that went away), the app is told ``http.disconnect``. ``state``: what the app's lifespan
    yielded, given to each request as a server does (a shallow copy)."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": req["method"],
             "scheme": "http", "path": req["path"], "raw_path": req["path"].encode(), "query_string": req["query"],
             "root_path": "", "headers": req["headers"], "client": ("127.0.0.1", 0), "server": ("127.0.0.1", 80),
             "state": dict(state or {})}
    sent: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    gone = asyncio.Event()
    body_given = False

    async def receive() -> dict[str, Any]:
        nonlocal body_given
        if not body_given:
            body_given = True
            return {"type": "http.request", "body": req["body"], "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        await sent.put(message)

    task = asyncio.ensure_future(app(scope, receive, send))
    done = False
    try:
        while not done:
            getter = asyncio.ensure_future(sent.get())
            await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            if not getter.done():  # the app returned (or raised: logged below) with nothing more to send
                getter.cancel()
                break
            message = getter.result()
            done = message["type"] == "http.response.body" and not message.get("more_body", False)
            yield message
    finally:
        if not task.done():
            gone.set()
            await asyncio.wait({task}, timeout=30)
        elif not task.cancelled() and task.exception() is not None:  # after its 500 was sent (Starlette re-raises)
            _log.error("a shard request failed: %s %s", req["method"], req["path"], exc_info=task.exception())


async def whole_answer(app: Any, req: dict[str, Any], state: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole answer of the ASGI ``app`` to ``req``: ``{"status", "headers", "body"}`` (:func:`call_app`)."""
    status, headers, chunks = 500, [], []
    async for m in call_app(app, req, state):
        if m["type"] == "http.response.start":
            status, headers = m["status"], list(m.get("headers", []))
        else:
            chunks.append(m.get("body", b""))
    return {"status": status, "headers": headers, "body": b"".join(chunks)}


async def streamed_answer(app: Any, req: dict[str, Any], state: dict[str, Any] | None = None
                          ) -> AsyncIterator[dict[str, Any] | bytes]:
    """The answer of the ASGI ``app`` to ``req`` as it comes: first ``{"status", "headers"}``, then the body's
    chunks (:func:`call_app`)."""
    async for m in call_app(app, req, state):
        if m["type"] == "http.response.start":
            yield {"status": m["status"], "headers": list(m.get("headers", []))}
        elif m.get("body"):
            yield m["body"]


class ShardService:
    """One shard: the one-process service app over ``config.store.db_path`` (the shard file), started at replica
    start (its lifespan opens the engine) and stopped at replica shutdown."""

    async def __init__(self, config: Config, keys: str, shard: int) -> None:  # type: ignore[misc]  # Ray awaits it
        from timem.service.app import create_app

        self.shard = shard
        self.app = create_app(config, keys)
        self._life: AbstractAsyncContextManager[Any] | None = self.app.router.lifespan_context(self.app)
        self.state = dict(await self._life.__aenter__() or {})  # a lifespan's state, if it yields one

    async def call(self, req: dict[str, Any]) -> dict[str, Any]:
        """The whole answer to ``req``: ``{"status", "headers", "body"}`` (:func:`whole_answer`)."""
        return await whole_answer(self.app, req, self.state)

    async def stream(self, req: dict[str, Any]) -> AsyncIterator[dict[str, Any] | bytes]:
        """The answer to ``req`` as it comes (:func:`streamed_answer`)."""
        async for part in streamed_answer(self.app, req, self.state):
            yield part

    async def __del__(self) -> None:
        """Close the engine (the shard file) when Ray Serve stops the replica (once)."""
        life, self._life = getattr(self, "_life", None), None
        if life is not None:
            await life.__aexit__(None, None, None)


def _response(status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> Response:
    out = Response(content=body, status_code=status)
    out.raw_headers = [(k, v) for k, v in headers if k.lower() != b"content-length"] + [
        (b"content-length", str(len(body)).encode())]
    return out


def _json(status: int, data: Any) -> Response:
    return _response(status, [(b"content-type", b"application/json")], json.dumps(data).encode())


class ShardRouter:
    """The ingress: the key's tenant (checked here as in the service), then the shard(s) of the request."""

    def __init__(self, shards: list[DeploymentHandle[Any]], keys: str) -> None:
        self.shards = shards
        self.keys = KeyFile(keys)

    async def _tenant(self, request: Request) -> str | None:
        # scrypt (once per key): off the event loop
        return await asyncio.to_thread(self.keys.tenant_of, request_key(request.headers))

    async def __call__(self, request: Request) -> Response:
        """Route one HTTP request (see the module docstring); a shard that cannot be reached (its replica died
        and is being restarted, or is overloaded) is 503 ``{"error": ...}``."""
        try:
            return await self._route(request)
        except (RayError, RayServeException) as exc:
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            _log.warning("a shard did not answer %s %s: %s: %s", request.method, request.url.path,
                         type(exc).__name__, first)
            return _json(503, {"error": f"a shard of the memory service is not available ({type(exc).__name__}: "
                                        f"{first}); Ray Serve restarts it, retry in a few seconds"})

    async def _route(self, request: Request) -> Response:
        path, body = request.url.path, await request.body()
        req = _request_dict(request.method, path, request.scope.get("query_string", b""),
                            list(request.scope["headers"]), body)
        where: Route = route(request.method, path, dict(request.headers), body)
        tenant = None
        if path.startswith("/v1/") and path != "/v1/health":
            tenant = await self._tenant(request)
            if tenant is None:
                return _json(STATUS[AuthError], {"error": NO_KEY})
        if where.fanout is not None:
            answers = await asyncio.gather(*(h.call.remote(req) for h in self.shards))
            parsed: list[tuple[int, Any]] = []
            for a in answers:
                try:
                    parsed.append((a["status"], json.loads(a["body"])))
                except ValueError:  # not JSON (never from the service's routes): that shard's answer as it is
                    return _response(a["status"], a["headers"], a["body"])
            status, data = merge(where.fanout, parsed)
            return _json(status, data)
        shard = self.shards[shard_of(tenant, where.user, len(self.shards)) if tenant and where.user else 0]
        if path == "/v1/chat/completions" and _streams(body):
            return await self._stream(shard, req)
        a = await shard.call.remote(req)
        return _response(a["status"], a["headers"], a["body"])

    async def _stream(self, shard: DeploymentHandle[Any], req: dict[str, Any]) -> Response:
        chunks = shard.options(stream=True).stream.remote(req)
        assert isinstance(chunks, DeploymentResponseGenerator)  # stream=True
        head = await chunks.__anext__()

        async def body() -> AsyncIterator[bytes]:
            async for chunk in chunks:
                yield chunk

        out = StreamingResponse(body(), status_code=head["status"])
        out.raw_headers = [(k, v) for k, v in head["headers"] if k.lower() != b"content-length"]
        return out


def _streams(body: bytes) -> bool:
    """Whether a chat completion request asks for a stream (``"stream": true``)."""
    try:
        data = json.loads(body) if body else {}
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("stream") is True


def build(config: Config, keys: str, replicas: int, shard_cpus: float = 1.0) -> Any:
    """The bound Ray Serve application: ``replicas`` shard deployments over the shard files of
    ``config.store.db_path`` (each reserving ``shard_cpus`` CPUs) behind the router."""
    retries: dict[str, Any] = {"max_constructor_retry_count": 1} if "max_constructor_retry_count" in inspect.signature(
        serve.deployment).parameters else {}  # a file that does not open will not open on the 20th try either
    shards = [serve.deployment(name=f"timem-shard{i}", max_ongoing_requests=64,
                               ray_actor_options={"num_cpus": shard_cpus}, **retries)(ShardService)
              .bind(config.with_overrides(db_path=str(p.resolve())), keys, i)
              for i, p in enumerate(shard_paths(config.store.db_path, replicas))]
    router = serve.deployment(name="timem-router", max_ongoing_requests=256,
                              ray_actor_options={"num_cpus": 0})(ShardRouter)
    return router.bind(shards, keys)


def start(config: Config, keys: str, replicas: int, host: str, port: int) -> None:
    """Deploy the application on the connected Ray cluster (``ray.init`` ran), HTTP on ``host:port``; returns once
    every shard has opened its file. Each shard reserves one CPU, or an equal part of the cluster's CPUs if they
    are fewer than the shards."""
    import ray

    cpus = float(ray.cluster_resources().get("CPU", 1.0))  # type: ignore[no-untyped-call]
    serve.start(http_options={"host": host, "port": port})
    try:
        serve.run(build(config, keys, replicas, min(1.0, cpus / replicas)), name=APP_NAME, route_prefix="/")
    except RuntimeError as exc:  # Serve's "Deploying application timem failed: <the replica's traceback>"
        why = _failures(shard_paths(config.store.db_path, replicas)) or _last_line(str(exc))
        raise ShardServeError(f"the Ray Serve application did not start: {why}; fix what it names, or see the "
                              "replica logs in /tmp/ray/session_latest/logs/serve/") from exc


def _failures(paths: list[Path]) -> str:
    """What failed in each deployment of the application that did not start: its name, its shard file, the last
    line of its error."""
    app = serve.status().applications.get(APP_NAME)
    if app is None:
        return ""
    files = {f"timem-shard{i}": p for i, p in enumerate(paths)}
    return "; ".join(f"{name}" + (f" ({files[name]})" if name in files else "") + f": {_last_line(d.message)}"
                     for name, d in sorted(app.deployments.items()) if d.message)


def _last_line(text: str) -> str:
    """The last non-empty line of a traceback (the error itself)."""
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    return lines[-1] if lines else text


def stop() -> None:
    """Delete the application (each shard closes its file)."""
    serve.delete(APP_NAME)


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(config: Config, keys: str, replicas: int, host: str, port: int, address: str) -> None:
    """``timem serve --ray``: join (or, with ``address="local"``, start) a Ray cluster, check the shard layout of
    ``config.store.db_path`` (:func:`timem.service.shards.check_layout`), deploy, and serve until interrupted; then
    delete the application (and stop a cluster started here).

    Raises:
        ClusterError: the cluster cannot be reached. ShardLayoutError: the shards were written with another count.
        ShardServeError: a shard did not start (e.g. its file does not open).
    """
    import time

    import ray

    check_layout(config.store.db_path, replicas)
    started = connect(address)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)  # a `kill` stops it as Ctrl-C does: shards close their files
    try:
        start(config, keys, replicas, host, port)
        _log.warning("timem on Ray Serve: %d shard(s) of %s, http://%s:%d (Ctrl-C stops)", replicas,
                     config.store.db_path, host, port)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        _log.warning("stopping the Ray Serve application")
    finally:
        stop()
        if started:
            serve.shutdown()  # type: ignore[no-untyped-call]
            ray.shutdown()
