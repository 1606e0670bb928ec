"""A hard erase leaves the text nowhere: not in the tables, not in recall traces or audit details, and
not in the bytes of the closed DuckDB file (case c03_erase in tests/data/cases)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import CASES
from helpers import EXCHANGE

from timem import editing
from timem.config import load_config
from timem.datasets import load_jsonl
from timem.engine import MemoryEngine
from timem.recall.options import RecallOptions
from timem.recall.pipeline import recall
from timem.recall.trace_store import load_traces
from timem.store import Store
from timem.store.check import check_store


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    """Logic tests: the deterministic hashing embedder instead of MiniLM (tests/conftest.py)."""
    return fake_embedder

CASE = CASES / "c03_erase.jsonl"
SECRETS = ("Quillfeather", "bank card PIN is 5519")


def file_bytes(path: Path) -> bytes:
    """The database file and any WAL beside it, as a reader of the disk sees them."""
    wal = Path(str(path) + ".wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def open_engine(path: Path, embedder, **overrides) -> MemoryEngine:
    cfg = load_config(env={}, db_path=path, llm_backend="none", gate="score", **overrides)
    return MemoryEngine(cfg, Store(path, embedder.model_id, embedder.dim), embedder, None)


def test_erase_removes_traces_audit_quotes_and_file_bytes(tmp_path, embedder):
    db = tmp_path / "erase.duckdb"
    eng = open_engine(db, embedder, **EXCHANGE)  # the secret and its reply are one segment
    eng.ingest(load_jsonl(CASE, eng.config.time.tz), upper_levels=False)
    store = eng.store
    (secret,) = [n for n in store.nodes("ines") if "Quillfeather" in n.content]
    res = recall(store, embedder, None, eng.config, "ines", "What is my secret nickname?",
                 datetime(2024, 3, 6, tzinfo=UTC), options=RecallOptions(gate="score"))
    assert secret.id in res.trace.node_ids
    (doc,) = store.traces("ines")  # the stored trace names the memory by id; its text is rebuilt from the store
    assert secret.id in json.dumps(doc) and "Quillfeather" not in json.dumps(doc)
    assert "Quillfeather" in load_traces(store, "ines")[0].context
    # model sentences about the secret, as the grounding filter logs them: one quoting the turn, and one
    # paraphrase logged on the node itself (for an L2-L5 node: on its parent; both are redacted)
    store.audit("grounding-drop", "ines", "L2-x", {"sentence": "Please remember my bank card PIN is 5519 and my "
                                                               "secret nickname is Quillfeather.", "reason": "test"})
    store.audit("grounding-drop", "ines", secret.id, {"sentence": "Her nickname: Quillfeather.", "reason": "test"})
    store.con.execute("CHECKPOINT")
    store.close()
    assert all(s.encode() in file_bytes(db) for s in SECRETS)  # the scan sees stored text

    eng = open_engine(db, embedder, **EXCHANGE)
    store = eng.store
    cost = editing.erase(store, eng.consolidator, [secret.id])
    assert cost["seconds"] > 0 and cost["bytes_after"] > 0
    assert store.traces("ines") == []  # the trace named the node: deleted
    audit = store.con.execute("SELECT action, detail FROM audit").fetchall()
    assert not any("Quillfeather" in d for _, d in audit)
    assert [d for a, d in audit if a == "grounding-drop"] == [json.dumps({"redacted": "hard erase"})] * 2
    erase_rows = [json.loads(d) for a, d in audit if a == "erase-traces"]
    assert erase_rows == [{"actor": "user", "recall_traces": 1, "audit_redacted": 2}]
    assert any(a == "compact" for a, _ in audit)
    # the store still works after the file was swapped under it (the erase consolidated the due L2-L5
    # windows too: extractive needs no LLM)
    assert [n.id for n in store.nodes("ines")] and "pottery" in store.nodes("ines", 1)[0].content
    assert store.search_bm25("ines", "pottery class", 1, 5)
    assert check_store(store, eng.config) == []
    store.close()
    raw = file_bytes(db)
    for s in SECRETS:
        assert s.encode() not in raw, f"{s!r} is still in the bytes of {db}"
    assert b"pottery class" in raw
    assert not Path(str(db) + ".compact").exists()


def test_erase_user_leaves_no_bytes_and_keeps_other_users(tmp_path, embedder):
    path = tmp_path / "two.jsonl"
    rows = [("ada", "My locker code is 8842 at the Westbrook gym.", "2024-03-01T10:00:00"),
            ("ada", "我的护照号码是 E12345678，放在蓝色抽屉里。", "2024-03-01T10:01:00"),
            ("ada", "What is my locker code?", "2024-03-01T10:02:00"),
            ("bo", "I am learning the cello with a teacher called Marguerite.", "2024-03-01T11:00:00")]
    path.write_text("".join(json.dumps({"user_id": u, "session_id": "s1", "speaker": u, "role": "user", "text": t,
                                        "timestamp": ts}, ensure_ascii=False) + "\n" for u, t, ts in rows),
                    encoding="utf-8")
    db = tmp_path / "users.duckdb"
    eng = open_engine(db, embedder)
    eng.ingest(load_jsonl(path, eng.config.time.tz), upper_levels=False)
    recall(eng.store, embedder, None, eng.config, "ada", "What is my locker code?",
           options=RecallOptions(gate="score"))
    # a trial: erasing one user deleted another user's trace that asked what the erased user had said
    recall(eng.store, embedder, None, eng.config, "bo", "What is my locker code?",
           options=RecallOptions(gate="score"))
    eng.store.audit("grounding-drop", "ada", "L2-y", {"sentence": "Ada uses the Westbrook gym."})
    counts = eng.erase_user("ada")
    assert counts["turns"] == 3 and counts["recall_traces"] == 1 and counts["audit_redacted"] == 1
    assert eng.store.users() == ["bo"]
    assert [t.query for t in load_traces(eng.store, "bo")] == ["What is my locker code?"]
    eng.close()
    raw = file_bytes(db)
    for s in ("Westbrook", "8842 at the", "护照号码", "蓝色抽屉"):
        assert s.encode() not in raw, f"{s!r} is still in the bytes of {db}"
    assert b"Marguerite" in raw


def test_compact_keeps_everything_and_refuses_inside_a_transaction(store):
    from timem.errors import StoreError

    store.audit("note", None, None, {"x": 1})
    with store.transaction(), pytest.raises(StoreError, match="inside a transaction"):
        store.compact()
    before = store.con.execute("SELECT count(*) FROM audit").fetchone()[0]
    version = store.schema_version
    store.compact()
    assert store.con.execute("SELECT count(*) FROM audit").fetchone()[0] == before
    assert store.con.execute("SELECT max(version) FROM schema_version").fetchone()[0] == version
    # constraints survive the copy
    store.con.execute("INSERT INTO meta VALUES ('k', 'v')")
    with pytest.raises(Exception, match="(?i)constraint|duplicate"):
        store.con.execute("INSERT INTO meta VALUES ('k', 'w')")


def test_erasing_a_forgotten_memory_also_erases_the_versions_that_summarised_it(tmp_path, embedder):
    """Found by a new user: forget, then hard-erase the same L1 memory. The forget had re-consolidated its
    day, week and month, so the versions quoting it were superseded and no longer reachable by parent links;
    the erase left them (and the text) in the file. All of them go now."""
    from memory_scenario import EN, write

    db = tmp_path / "forget-erase.duckdb"
    eng = open_engine(db, embedder, consolidation_mode="extractive", memory_extractor="rules")
    eng.ingest(load_jsonl(write(tmp_path / "mia.jsonl", "mia", EN), eng.config.time.tz))
    assert any("Blue Harbor" in n.content for n in eng.store.nodes("mia") if n.level > 1)
    eng.forget("mia", "I work at Blue Harbor", confirm=True)
    (seg,) = [n for n in eng.store.nodes("mia", 1, status=None) if "Blue Harbor" in n.content]
    superseded = [n for n in eng.store.nodes("mia", status=None) if n.level > 1 and "Blue Harbor" in n.content]
    assert superseded and all(n.status != "active" for n in superseded)  # the forget left these behind
    eng.delete_memories([seg.id], hard=True)
    assert not [n.id for n in eng.store.nodes("mia", status=None) if "Blue Harbor" in n.content]
    assert check_store(eng.store, eng.config) == []
    eng.store.close()
    assert b"Blue Harbor" not in file_bytes(db)
