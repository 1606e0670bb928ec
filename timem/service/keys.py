"""API keys of the memory service: one or more per tenant, stored hashed in a JSON file next to the DB.

A key looks like ``tmk_<key_id>_<secret>``: ``key_id`` (8 hex characters) finds the record, the secret
(32 random bytes, URL-safe base64) is checked against its scrypt hash (RFC 7914; n=2**14, r=8, p=1,
16-byte salt). Only the hash is stored; the key is shown once, by :meth:`KeyFile.add`. A verified key
is remembered in memory (by its SHA-256) so that scrypt runs once per key and process, not per request;
that memory is dropped whenever the file changes (e.g. ``timem keys revoke`` while the service runs).

File layout (``<db>.keys.json`` unless given)::

    {"version": 1, "keys": [{"key_id": "1a2b3c4d", "tenant": "acme", "salt": "<hex>", "hash": "<hex>",
      "kdf": "scrypt:16384:8:1", "created_at": "2026-...Z", "revoked_at": null}]}
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict

from timem.errors import ConfigError, InputError, NotFoundError

#: a tenant name: lower-case letters, digits, ``-`` and ``_``, up to 32 characters, starting alphanumeric
TENANT_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
_KEY_RE = re.compile(r"^tmk_([0-9a-f]{8})_([A-Za-z0-9_-]{20,100})$")
_N, _R, _P = 2**14, 8, 1
KDF = f"scrypt:{_N}:{_R}:{_P}"


#: what a request without a valid key is told (the one-process service and the Ray Serve router)
NO_KEY = "missing or invalid API key; send 'Authorization: Bearer <key>' with a key from `timem keys add TENANT`"


def request_key(headers: Mapping[str, str]) -> str | None:
    """The API key a request carries (``headers`` case-insensitive, e.g. Starlette's): ``Authorization: Bearer
    <key>``, else ``X-API-Key``; ``None`` if neither."""
    header = headers.get("authorization", "")
    return header[7:].strip() if header.lower().startswith("bearer ") else headers.get("x-api-key")


def default_keys_path(db_path: str | Path) -> Path:
    """The keys file beside a DuckDB file: ``timem.duckdb`` -> ``timem.duckdb.keys.json``."""
    p = Path(db_path)
    return p.with_name(p.name + ".keys.json")


def _hash(secret: str, salt: bytes) -> bytes:
    return hashlib.scrypt(secret.encode(), salt=salt, n=_N, r=_R, p=_P, maxmem=64 * 1024 * 1024, dklen=32)


class KeyRecord(TypedDict):
    """One key as the file stores it (see the module docstring); times are ISO 8601 UTC."""

    key_id: str  #: 8 hex characters
    tenant: str
    salt: str  #: hex
    hash: str  #: hex, the scrypt hash of the secret
    kdf: str  #: :data:`KDF`
    created_at: str
    revoked_at: str | None


@dataclass(frozen=True)
class KeyInfo:
    """One stored key, without its secret."""

    key_id: str
    tenant: str
    created_at: str
    revoked_at: str | None


class KeyFile:
    """The keys file: add / list / revoke (CLI) and verify (service). Thread-safe.

    Raises (constructor): nothing; a missing file means no keys (every request is refused).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: tuple[float, int] | None = None
        self._records: list[KeyRecord] = []
        self._verified: dict[bytes, str] = {}  # sha256(key) -> tenant, for keys that passed scrypt

    # ----------------------------------------------------------------- file
    def _load(self) -> list[KeyRecord]:
        """Read the file if it changed since the last read (mtime, size); forget verified keys then."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self._records, self._verified, self._stamp = [], {}, None
            return self._records
        stamp = (st.st_mtime, st.st_size)
        if stamp != self._stamp:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                records: list[KeyRecord] = list(data["keys"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise ConfigError(f"cannot read the keys file {self.path}: {exc}; fix it or create keys with "
                                  "`timem keys add TENANT`") from exc
            self._records, self._verified, self._stamp = records, {}, stamp
        return self._records

    def _save(self, records: list[KeyRecord]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"version": 1, "keys": records}, indent=2) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    # ----------------------------------------------------------------- management
    def add(self, tenant: str) -> str:
        """Create a key for ``tenant`` and return it (the only time it is shown).

        Raises:
            InputError: the tenant name does not match :data:`TENANT_RE`.
        """
        if not TENANT_RE.match(tenant):
            raise InputError(f"tenant {tenant!r} is not a valid name; use lower-case letters, digits, '-' and '_' "
                             "(up to 32 characters)", field="tenant")
        with self._lock:
            records = list(self._load())
            key_id = secrets.token_hex(4)
            while any(r["key_id"] == key_id for r in records):
                key_id = secrets.token_hex(4)
            secret, salt = secrets.token_urlsafe(32), secrets.token_bytes(16)
            records.append({"key_id": key_id, "tenant": tenant, "salt": salt.hex(), "hash": _hash(secret, salt).hex(),
                            "kdf": KDF, "created_at": datetime.now(UTC).isoformat(), "revoked_at": None})
            self._save(records)
            self._stamp = None
        return f"tmk_{key_id}_{secret}"

    def list(self) -> list[KeyInfo]:
        """Every key (revoked ones too), oldest first."""
        with self._lock:
            return [KeyInfo(r["key_id"], r["tenant"], r["created_at"], r.get("revoked_at")) for r in self._load()]

    def revoke(self, key_id_or_tenant: str) -> builtins.list[str]:
        """Revoke one key (by key id) or every key of a tenant; returns the revoked key ids.

        Raises:
            NotFoundError: no active key has that id or tenant.
        """
        with self._lock:
            records = [r.copy() for r in self._load()]
            hit = [r for r in records if r.get("revoked_at") is None
                   and key_id_or_tenant in (r["key_id"], r["tenant"])]
            if not hit:
                raise NotFoundError(f"no active key with id or tenant {key_id_or_tenant!r} in {self.path}; "
                                    "see `timem keys list`")
            now = datetime.now(UTC).isoformat()
            for r in hit:
                r["revoked_at"] = now
            self._save(records)
            self._stamp = None
        return [r["key_id"] for r in hit]

    # ----------------------------------------------------------------- service
    def tenant_of(self, key: str | None) -> str | None:
        """The tenant a presented key belongs to, or ``None`` (missing, malformed, unknown, revoked or wrong)."""
        if not key:
            return None
        m = _KEY_RE.match(key)
        if not m:
            return None
        digest = hashlib.sha256(key.encode()).digest()
        with self._lock:
            records = self._load()
            if digest in self._verified:
                return self._verified[digest]
            rec = next((r for r in records if r["key_id"] == m.group(1) and r.get("revoked_at") is None), None)
            stamp = self._stamp
        if rec is None or rec.get("kdf") != KDF:
            return None
        if not hmac.compare_digest(_hash(m.group(2), bytes.fromhex(rec["salt"])), bytes.fromhex(rec["hash"])):
            return None
        with self._lock:
            if self._stamp == stamp:  # not revoked meanwhile
                self._verified[digest] = rec["tenant"]
        return rec["tenant"]
