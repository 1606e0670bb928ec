"""Ray clusters for the jobs TiMem spreads over machines: benchmark runs (:mod:`timem.bench.distributed`) and
bulk ingest (:mod:`timem.ingest_cluster`), one task per conversation (or LongMemEval instance).

Addresses (``--ray``): ``local`` starts a small cluster in this process (``ray.init(num_cpus=2)``) and
stops it afterwards; ``auto`` joins the cluster this machine belongs to (``ray start --head`` /
``ray start --address …`` ran before); anything else is a cluster address (``ray://host:10001`` or
``host:6379``). Workers must be able to import ``timem`` and read the data file at the same path.
"""

from __future__ import annotations

from pathlib import Path

from timem.errors import ConfigError


class ClusterError(ConfigError):
    """Ray is missing or the cluster cannot be reached (the message says how to fix it)."""


def connect(address: str) -> bool:
    """``ray.init`` for ``address`` (``local``, ``auto`` or a cluster address); returns whether a local
    cluster was started here (stop it with ``ray.shutdown()``).

    Raises:
        ClusterError: Ray is not installed (``pip install 'timem[cluster]'``) or the cluster cannot be reached.
    """
    try:
        import ray
    except ImportError as exc:
        raise ClusterError("--ray needs Ray: pip install 'timem[cluster]' (or pip install ray)") from exc
    if ray.is_initialized():
        return False
    pkg_root = str(Path(__file__).resolve().parents[1])
    try:
        if address == "local":
            ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024 * 1024,
                     runtime_env={"env_vars": {"PYTHONPATH": pkg_root}}, log_to_driver=False)
            return True
        ray.init(address=address, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ClusterError(f"cannot reach the Ray cluster at {address!r} ({exc}); start one with `ray start --head` "
                           "or use --ray local") from exc
    return False
