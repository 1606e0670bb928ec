"""``timem serve``, ``timem mcp`` and ``timem keys …``: the memory service from the command line (and the check
behind ``timem studio --service``)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from timem.cli_common import ConfigOpt, DbOpt, LlmOpt, UserOpt, _config
from timem.cli_options import OptionValueError, SetOpt, setting_overrides
from timem.config import Config
from timem.errors import ConfigError, MissingExtraError

if TYPE_CHECKING:
    from timem.service.keys import KeyFile

KeysOpt = Annotated[Path | None, typer.Option("--keys", help="API keys file (default: <db>.keys.json beside the DB)")]


def _keyfile(cfg: Config, keys: Path | None) -> KeyFile:
    from timem.service.keys import KeyFile, default_keys_path

    return KeyFile(keys or default_keys_path(cfg.store.db_path))


RayOpt = Annotated[bool, typer.Option("--ray", help="run as a Ray Serve application: --replicas shards of --db, "
                                          "users by a hash of tenant and user (docs/cluster.md)")]
ReplicasOpt = Annotated[int, typer.Option("--replicas", min=1, metavar="N", help="with --ray: shards (one replica "
                                          "each, the only writer of <db stem>.shard<i>.duckdb)")]
AddressOpt = Annotated[str, typer.Option("--ray-address", help="with --ray: local (a cluster in this process), auto "
                                         "(this machine's `ray start` cluster) or HOST:6379")]


def serve(db: DbOpt = None,
          host: Annotated[str, typer.Option("--host", help="address to listen on (0.0.0.0: every interface)")] =
          "127.0.0.1",
          port: Annotated[int, typer.Option("--port", min=1, max=65535, metavar="PORT",
                                            help="TCP port to listen on (1-65535)")] = 8600,
          keys: KeysOpt = None, llm: LlmOpt = None,
          config: ConfigOpt = None, ray: RayOpt = False, replicas: ReplicasOpt = 2,
          ray_address: AddressOpt = "local", set_: SetOpt = None) -> None:
    """Serve the memory HTTP API (docs/service.md) over --db; the service is the file's one writer while it runs
    (with --ray: each shard replica is the one writer of its shard file)."""
    try:
        import uvicorn

        from timem.engine import MemoryEngine
        from timem.service import create_app
    except ImportError as exc:
        raise MissingExtraError("timem serve", "service", (exc.name or "").split(".")[0] or None) from exc

    cfg = _config(config, db, setting_overrides(set_), llm_backend=llm)
    kf = _keyfile(cfg, keys)
    if ray:
        _warn_no_keys(kf, keys, cfg)
        try:
            from timem.service import ray_serve
        except ImportError as exc:
            raise MissingExtraError("timem serve --ray", "cluster", (exc.name or "").split(".")[0] or None) from exc
        if Path(cfg.store.db_path).exists():
            typer.echo(f"warning: {cfg.store.db_path} is not served with --ray (only its shard files beside it); "
                       "its users are not moved to the shards", err=True)
        ray_serve.run(cfg, str(kf.path.resolve()), replicas, host, port, ray_address)
        return
    # opened here, not in the app's startup: a file that is locked by another process or cannot be opened is one
    # error line (as for `timem stats`), not uvicorn's startup traceback, and before any warning
    _check_port(host, port)  # a port in use: one error line, before any file is opened or created
    new_file = not Path(cfg.store.db_path).exists()  # a mistyped --db: say so before serving an empty file
    engine = MemoryEngine.open(cfg, with_llm=cfg.llm.llm_backend != "none")
    _warn_no_keys(kf, keys, cfg)
    if new_file:
        typer.echo(f"warning: {cfg.store.db_path} did not exist; the service starts on a new, empty database there",
                   err=True)
    try:
        uvicorn.run(create_app(lambda: engine, kf), host=host, port=port, log_level="info")
    finally:
        engine.close()


def _check_port(host: str, port: int) -> None:
    """Bind ``host``:``port`` once and let it go, as uvicorn will bind it (SO_REUSEADDR set).

    Raises:
        ConfigError: the host does not resolve, or the port is taken (uvicorn said only "[Errno 98] ... address
            already in use" and exited with code 3, after the database file was opened, or created).
    """
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host!r} is not an address of this machine ({exc.strerror}); use e.g. "
                          "127.0.0.1 (this machine only) or 0.0.0.0 (every interface)") from exc
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(addr)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror}): another process (a running "
                              "`timem serve`?) uses that port; stop it or pass another --port") from exc


def _warn_no_keys(kf: KeyFile, keys: Path | None, cfg: Config) -> None:
    if not kf.list():
        where = f" --keys {kf.path}" if keys is not None else ""  # following the hint must write to this file
        typer.echo(f"warning: no API keys in {kf.path}; every request will get 401. Add one with "
                   f"`timem keys add TENANT --db {cfg.store.db_path}{where}`", err=True)


def mcp(user: UserOpt, db: DbOpt = None, llm: LlmOpt = None, config: ConfigOpt = None) -> None:
    """Serve one user's memory to an agent as MCP tools (remember / recall / forget / facts / list) over stdio."""
    try:
        from timem.service.mcp_server import run_stdio
    except ImportError as exc:
        raise MissingExtraError("timem mcp", "service", (exc.name or "").split(".")[0] or None) from exc

    run_stdio(_config(config, db, llm_backend=llm or "none"), user)


keys_app = typer.Typer(no_args_is_help=True, help="API keys of the memory service (stored hashed beside the DB).")


@keys_app.command("add")
def keys_add(tenant: Annotated[str, typer.Argument(help="the tenant the key belongs to, e.g. acme: lower-case "
                                                  "letters, digits, - and _ (its users are stored as acme/USER)")],
             db: DbOpt = None, keys: KeysOpt = None, config: ConfigOpt = None) -> None:
    """Create a key for TENANT and print it once (only its scrypt hash is stored)."""
    kf = _keyfile(_config(config, db), keys)
    key = kf.add(tenant)
    typer.echo(key)
    typer.echo(f"(key for tenant {tenant} saved hashed in {kf.path}; it is not shown again)", err=True)


@keys_app.command("list")
def keys_list(db: DbOpt = None, keys: KeysOpt = None, config: ConfigOpt = None) -> None:
    """Key ids, tenants, creation and revocation times (never the keys)."""
    for k in _keyfile(_config(config, db), keys).list():
        typer.echo(f"{k.key_id}  {k.tenant:<20} created {k.created_at}"
                   + (f"  REVOKED {k.revoked_at}" if k.revoked_at else ""))


@keys_app.command("revoke")
def keys_revoke(key_id_or_tenant: Annotated[str, typer.Argument(
                    help="a key id (see `timem keys list`), or a tenant to revoke all its keys")],
                db: DbOpt = None, keys: KeysOpt = None, config: ConfigOpt = None) -> None:
    """Revoke one key (by id) or every key of a tenant; a running service refuses it from the next request."""
    ids = _keyfile(_config(config, db), keys).revoke(key_id_or_tenant)
    typer.echo(f"revoked {', '.join(ids)}")




def register(app: typer.Typer) -> None:
    """Add ``serve``, ``mcp`` and ``keys`` to the ``timem`` app."""
    app.command()(serve)
    app.command()(mcp)
    app.add_typer(keys_app, name="keys")


def studio_service_env(url: str, key: str | None, db: Path | None, env: dict[str, str]) -> dict[str, str]:
    """The studio's environment for ``--service URL``: the URL and key, after checking that the service answers
    and takes the key (the key is never printed).

    Raises:
        ConfigError: ``--db`` given too, or no key. ServiceUnreachableError, AuthError: see ServiceClient.
    """
    from timem.config import load_config
    from timem.service.client import ServiceClient

    if db is not None:
        raise OptionValueError("give --service URL or --db FILE, not both: over a service the studio opens no file")
    key = key or env.get("TIMEM_SERVICE_KEY")
    if not key:
        raise ConfigError(f"no API key for the service at {url}; pass --key KEY or set TIMEM_SERVICE_KEY "
                          "(a key from `timem keys add TENANT --db FILE`)")
    cfg = load_config(env={**env, "TIMEM_SERVICE_URL": url, "TIMEM_SERVICE_KEY": key})
    with ServiceClient.from_config(cfg) as client:
        typer.echo(f"studio over the memory service at {client.url} as tenant {client.tenant!r}")
    return {"TIMEM_SERVICE_URL": url, "TIMEM_SERVICE_KEY": key}
