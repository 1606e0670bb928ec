"""A JSONL turn with an unknown field (a typo such as "speker"): found by trying the product, `timem ingest` ignored
it silently (the turn went in with the speaker "user") while the memory service answers 422 for an unknown field of
the same turn. Both refuse it now: `timem ingest` with one line naming the file, the line and the field (and the field
it may be a typo of), and the store is left as it was.
"""

from __future__ import annotations

import json

import pytest
from service_support import client, two_tenants
from test_import_faults import _amy_store, line, timem


def test_ingest_refuses_a_misspelt_field_naming_line_and_field_and_writes_nothing(tmp_path):
    db, before = _amy_store(tmp_path)
    src = tmp_path / "typo.jsonl"
    src.write_text(line("amy", "I took up pottery.", ts="2024-04-02T10:00:00")
                   + line("amy", "My teacher is called Ines.", ts="2024-04-02T10:01:00").replace('"speaker"',
                                                                                                 '"speker"'))
    res = timem("ingest", str(src), "--l1-only", "--llm", "none", "--db", str(db), cwd=tmp_path)
    assert res.returncode == 1, res
    err = res.stderr.strip().splitlines()[-1]
    assert err.startswith("error: unknown field 'speker' (did you mean 'speaker'?)"), err
    assert "record line 2" in err and "field 'speker'" in err and str(src) in err, err
    assert db.read_bytes() == before  # nothing written, not even the good first line


@pytest.mark.parametrize("key", ["note", "timestmap"])
def test_the_load_refuses_any_other_key(tmp_path, key):
    from zoneinfo import ZoneInfo

    from timem.datasets import load_jsonl
    from timem.errors import InputError

    src = tmp_path / "x.jsonl"
    src.write_text(line("amy", "Fine.", **{key: "x"}))
    with pytest.raises(InputError, match=f"unknown field '{key}'") as exc:
        load_jsonl(src, ZoneInfo("UTC"))
    assert ("did you mean 'timestamp'" in str(exc.value)) == (key == "timestmap")


def test_the_service_refuses_the_same_typo(tmp_path, fake_embedder):
    """The other side of the agreement, over real HTTP on 127.0.0.1: a turn write with an unknown field is 422."""
    with two_tenants(tmp_path, fake_embedder) as (base, keys), client(base, keys["acme"]) as c:
        r = c.post("/v1/users/amy/turns", json={"session_id": "s1", "event_time": "2024-04-02T10:00:00+00:00",
                                                "message": "I took up pottery.", "speker": "Amy"})
        assert r.status_code == 422 and "speker" in json.dumps(r.json()), r.text
        assert c.get("/v1/users").json()["users"] == []  # nothing stored


def test_the_service_names_the_field_meant_and_those_it_takes(tmp_path, fake_embedder):
    """Found by trying: "mesage" got "mesage: Extra inputs are not permitted", with nothing on what to send."""
    with two_tenants(tmp_path, fake_embedder) as (base, keys), client(base, keys["acme"]) as c:
        r = c.post("/v1/users/amy/turns", json={"session_id": "s1", "event_time": "2024-04-02T10:00:00+00:00",
                                                "mesage": "I took up pottery."})
        err = r.json()["error"]
        assert r.status_code == 422 and "'mesage' is not a field" in err and "did you mean 'message'?" in err, err
        assert "It takes: session_id, event_time, message, reply, " in err, err
        r = c.post("/v1/users/amy/consolidate", json={"flsh": True})  # an optional body: its model is found too
        assert r.status_code == 422 and "did you mean 'flush'?" in r.json()["error"], r.text
        assert c.get("/v1/users").json()["users"] == []  # nothing stored
