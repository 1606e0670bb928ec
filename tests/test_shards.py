"""Users over shards (timem.service.shards, no Ray): the stable hash, the shard files and their layout, which
shard(s) each request goes to and how tenant-wide answers merge; and the tenant-wide routes of the one-process
service (export and erase of every user of a tenant) over real HTTP."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from service_support import client, two_tenants
from test_cli import cli_env  # noqa: F401  (fixture)

from timem.errors import ConfigError
from timem.service.shards import (
    Route,
    ShardLayoutError,
    check_layout,
    layout_path,
    merge,
    route,
    shard_of,
    shard_paths,
)

AT = "2024-05-02T09:00:00+00:00"


@pytest.fixture(scope="module")
def embedder(fake_embedder):
    return fake_embedder


def test_shard_of_is_the_sha256_of_the_stored_user_id_and_stable_across_processes():
    want = int.from_bytes(hashlib.sha256(b"acme/mia").digest()[:8], "big") % 7
    assert shard_of("acme", "mia", 7) == want
    # another interpreter (another hash seed) gives the same shards
    code = "from timem.service.shards import shard_of; print([shard_of('acme', f'u{i}', 5) for i in range(50)])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123", "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert json.loads(out.stdout) == [shard_of("acme", f"u{i}", 5) for i in range(50)]


def test_shard_of_spreads_users_and_separates_tenants():
    counts = [0, 0]
    for i in range(400):
        counts[shard_of("acme", f"user{i}", 2)] += 1
    assert min(counts) > 150  # roughly even
    assert [shard_of("acme", f"u{i}", 4) for i in range(40)] != [shard_of("beta", f"u{i}", 4) for i in range(40)]
    assert {shard_of("acme", "mia", 1)} == {0}
    with pytest.raises(ConfigError, match="--replicas 1 or more"):
        shard_of("acme", "mia", 0)


def test_shard_files_sit_beside_the_db(tmp_path):
    assert shard_paths(tmp_path / "memory.duckdb", 2) == [tmp_path / "memory.shard0.duckdb",
                                                          tmp_path / "memory.shard1.duckdb"]
    assert layout_path(tmp_path / "memory.duckdb") == tmp_path / "memory.shards.json"


def test_the_layout_refuses_another_shard_count(tmp_path):
    db = tmp_path / "memory.duckdb"
    assert check_layout(db, 2) == tmp_path / "memory.shards.json"
    check_layout(db, 2)  # the same count again: fine
    with pytest.raises(ShardLayoutError, match="--replicas 2"):
        check_layout(db, 3)
    layout_path(db).write_text("not json")
    with pytest.raises(ShardLayoutError, match="cannot read the shard layout"):
        check_layout(db, 2)


@pytest.mark.parametrize(("method", "path", "headers", "body", "want"), [
    ("POST", "/v1/users/mia/turns", {}, b"{}", Route(user="mia")),
    ("GET", "/v1/users/mia", {}, b"", Route(user="mia")),
    ("DELETE", "/v1/users/mia", {}, b"", Route(user="mia")),
    ("GET", "/v1/users/mia.b/export", {}, b"", Route(user="mia.b")),
    ("GET", "/v1/users", {}, b"", Route(fanout="users")),
    ("GET", "/v1/users/", {}, b"", Route(fanout="users")),
    ("DELETE", "/v1/users", {}, b"", Route(fanout="erase_tenant")),
    ("GET", "/v1/export", {}, b"", Route(fanout="export")),
    ("GET", "/v1/about", {}, b"", Route(fanout="about")),
    ("GET", "/v1/queue", {}, b"", Route(fanout="queue")),
    ("POST", "/v1/queue/retry", {}, b"", Route(fanout="queue")),
    ("GET", "/v1/health", {}, b"", Route(fanout="health")),
    ("POST", "/v1/chat/completions", {}, b'{"user": "bob", "messages": []}', Route(user="bob")),
    ("POST", "/v1/chat/completions", {"x-timem-user": "ann"}, b'{"messages": []}', Route(user="ann")),
    ("POST", "/v1/chat/completions", {}, b"not json", Route()),
    ("POST", "/v1/chat/completions", {}, b'{"user": 3}', Route()),
    ("GET", "/v1/models", {}, b"", Route()),
    ("GET", "/openapi.json", {}, b"", Route()),
])
def test_route(method, path, headers, body, want):
    assert route(method, path, headers, body) == want


def test_merge_of_tenant_wide_answers():
    assert merge("users", [(200, {"users": ["b", "d"]}), (200, {"users": ["a", "c"]})]) == (
        200, {"users": ["a", "b", "c", "d"]})
    assert merge("users", [(200, {"users": []}), (401, {"error": "no key"})]) == (401, {"error": "no key"})
    assert merge("export", [(200, {"tenant": "acme", "users": {"a": {"turns": [1]}}}),
                            (200, {"tenant": "acme", "users": {"b": {"turns": [2]}}})]) == (
        200, {"tenant": "acme", "users": {"a": {"turns": [1]}, "b": {"turns": [2]}}})
    assert merge("erase_tenant", [(200, {"tenant": "acme", "erased": ["b"], "counts": {"turns": 2}}),
                                  (200, {"tenant": "acme", "erased": ["a"], "counts": {"turns": 3, "nodes": 1}})]) == (
        200, {"tenant": "acme", "erased": ["a", "b"], "counts": {"turns": 5, "nodes": 1}})
    q = merge("queue", [(200, {"pending": 1, "running": 0, "done": 4, "failed": 1, "worker": True, "retried": 0,
                               "failed_jobs": [{"id": 3, "enqueued_at": "2026-01-01"}]}),
                        (200, {"pending": 2, "running": 1, "done": 0, "failed": 1, "worker": True, "retried": 0,
                               "failed_jobs": [{"id": 1, "enqueued_at": "2026-02-01"}]})])[1]
    assert (q["pending"], q["running"], q["done"], q["failed"], q["worker"]) == (3, 1, 4, 2, True)
    assert [j["enqueued_at"] for j in q["failed_jobs"]] == ["2026-02-01", "2026-01-01"]
    about = merge("about", [(200, {"tenant": "acme", "queue": {"pending": 1}}),
                            (200, {"tenant": "acme", "queue": {"pending": 2}})])[1]
    assert about == {"tenant": "acme", "queue": {"pending": 3}, "shards": 2}
    with pytest.raises(ConfigError, match="no merge"):
        merge("nope", [(200, {})])


def _turn(c, user, text):
    r = c.post(f"/v1/users/{user}/turns", json={"session_id": "s1", "event_time": AT, "message": text,
                                                 "reply": "Noted."})
    assert r.status_code == 200, r.text


def test_tenant_export_and_erase_on_one_process(tmp_path, embedder):
    with two_tenants(tmp_path, embedder) as (base, keys), client(base, keys["acme"]) as a, \
            client(base, keys["beta"]) as b:
        _turn(a, "mia", "I adopted a grey cat called Pixel.")
        _turn(a, "leo", "I play the cello on Sundays.")
        _turn(b, "mia", "Beta's mia likes chess.")
        data = a.get("/v1/export").json()
        assert data["tenant"] == "acme" and sorted(data["users"]) == ["leo", "mia"]
        assert [t["text"] for t in data["users"]["mia"]["turns"]][0] == "I adopted a grey cat called Pixel."
        assert "beta" not in json.dumps(data)  # no other tenant's data, no prefixes
        r = a.delete("/v1/users")
        assert r.status_code == 422 and "confirm=true" in r.json()["error"]
        r = a.delete("/v1/users", params={"confirm": "true"})
        assert r.status_code == 200, r.text
        assert r.json()["erased"] == ["leo", "mia"] and r.json()["counts"]["turns"] == 4
        assert a.get("/v1/users").json() == {"users": []}
        assert b.get("/v1/users").json() == {"users": ["mia"]}  # the other tenant keeps its user


def test_serve_ray_refuses_another_shard_count_before_starting_ray(cli_env):  # noqa: F811
    from test_cli import run

    db = cli_env / "memory.duckdb"
    check_layout(db, 2)
    code, out = run("serve", "--ray", "--replicas", "3", "--db", str(db), "--llm", "none")
    assert code == 1
    assert "spread over 2 shard(s)" in out and "--replicas 2" in out


def test_serve_ray_without_ray_names_the_cluster_extra(tmp_path):
    code = ("import sys; sys.modules['ray'] = None  # as if Ray were not installed\n"
            "from typer.testing import CliRunner\nfrom timem.cli import app\n"
            "print(CliRunner().invoke(app, ['serve', '--ray', '--db', 'm.duckdb', '--llm', 'none']).exception)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert "timem serve --ray needs the optional 'cluster' packages (ray is not installed)" in out.stdout, out
    assert "pip install 'timem[cluster]'" in out.stdout
