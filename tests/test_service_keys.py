"""API keys: stored hashed, verified, revoked (also while a service runs: the file is re-read on change)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from timem.cli import app
from timem.errors import ConfigError, ConsolidationIncomplete, InputError, NotFoundError, TextTooLongError
from timem.service import KeyFile, default_keys_path
from timem.service.app import STATUS, status_of


def test_keys_are_stored_hashed_and_verified(tmp_path):
    kf = KeyFile(tmp_path / "k.json")
    key = kf.add("acme")
    raw = (tmp_path / "k.json").read_text()
    assert key not in raw and key.split("_")[-1] not in raw
    assert json.loads(raw)["keys"][0]["tenant"] == "acme"
    assert (tmp_path / "k.json").stat().st_mode & 0o777 == 0o600
    assert kf.tenant_of(key) == "acme"
    assert kf.tenant_of(key[:-1] + ("a" if key[-1] != "a" else "b")) is None
    assert kf.tenant_of("") is None and kf.tenant_of("Bearer nonsense") is None
    other = KeyFile(tmp_path / "k.json")  # a running service's view of the same file
    assert other.tenant_of(key) == "acme"
    assert kf.revoke("acme") == [key.split("_")[1]]
    assert other.tenant_of(key) is None  # noticed without a restart
    with pytest.raises(NotFoundError):
        kf.revoke("acme")
    with pytest.raises(InputError):
        kf.add("Bad/Tenant")


def test_keys_cli_prints_the_key_once(tmp_path):
    db = tmp_path / "x.duckdb"
    r = CliRunner().invoke(app, ["keys", "add", "acme", "--db", str(db)])
    assert r.exit_code == 0, r.output
    key = r.stdout.strip().splitlines()[0]
    assert KeyFile(default_keys_path(db)).tenant_of(key) == "acme"
    listed = CliRunner().invoke(app, ["keys", "list", "--db", str(db)]).stdout
    assert "acme" in listed and key not in listed
    assert CliRunner().invoke(app, ["keys", "revoke", "acme", "--db", str(db)]).exit_code == 0
    assert "REVOKED" in CliRunner().invoke(app, ["keys", "list", "--db", str(db)]).stdout


def test_error_classes_map_to_statuses_in_one_table():
    assert status_of(TextTooLongError("x")) == 413 and status_of(InputError("x")) == 422
    assert status_of(NotFoundError("x")) == 404 and status_of(ConfigError("x")) == 409
    assert status_of(ConsolidationIncomplete([(2, "k", "m")], [])) == 502
    assert all(400 <= s < 600 for s in STATUS.values())
