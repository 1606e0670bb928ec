"""Re-importing turns whose text changed is never silent: reported, and updated with --update-changed
(cases c12_dup_v1 / c12_dup_v2_corrected)."""

from __future__ import annotations

import json

import pytest
from conftest import CASES
from helpers import ABSTRACTIVE, EXCHANGE, scripted_llm
from typer.testing import CliRunner

from timem.cli import app
from timem.config import load_config
from timem.datasets import load_jsonl
from timem.engine import MemoryEngine
from timem.models import NodeStatus
from timem.store import Store
from timem.store.check import check_store

V1, V2 = CASES / "c12_dup_v1.jsonl", CASES / "c12_dup_v2_corrected.jsonl"


@pytest.fixture()
def cli_env(tmp_path, monkeypatch):
    for var in [v for v in __import__("os").environ if v.startswith(("TIMEM_", "OPENAI_"))]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("TIMEM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_changed_turns_are_reported_then_updated_with_the_flag(cli_env, embedder, monkeypatch):
    monkeypatch.setenv("TIMEM_L1_UNIT", "exchange")  # the changed turn and its reply are one segment
    db = str(cli_env / "t.duckdb")
    runner = CliRunner()
    args = ["--format", "jsonl", "--l1-only", "--llm", "none", "--db", db]
    assert runner.invoke(app, ["ingest", str(V1), *args]).exit_code == 0
    res = runner.invoke(app, ["ingest", str(V2), *args])
    assert res.exit_code == 0, res.output
    assert "0 new turns" in res.output
    assert "2 stored turn(s) have a different text" in res.output and "orla:s1:0, orla:s1:1" in res.output
    assert "--update-changed" in res.output and "tomas" not in res.output.split("warning:")[1]

    store = Store(db, embedder.model_id, embedder.dim)
    assert "Pebble" in store.nodes("orla", 1)[0].content  # not updated without the flag
    store.close()

    res = runner.invoke(app, ["ingest", str(V2), *args, "--update-changed"])
    assert res.exit_code == 0 and "updated 2 turn(s) whose text changed: orla:s1:0, orla:s1:1" in res.output, res.output
    store = Store(db, embedder.model_id, embedder.dim)
    (l1,) = store.nodes("orla", 1)
    assert "Biscuit" in l1.content and "9034" in l1.content and "Pebble" not in l1.content
    assert store.search_bm25("orla", "Biscuit", 1, 3)[0][0] == l1.id  # re-indexed
    assert not store.search_bm25("orla", "Pebble", 1, 3)
    assert [t.text for t in store.turns("orla")][0].startswith("My gym locker code is 9034")
    audit = [json.loads(d) for a, d in store.con.execute("SELECT action, detail FROM audit").fetchall()
             if a == "turn-updated"]
    assert [a["turn_id"] for a in audit] == ["orla:s1:0", "orla:s1:1"]
    assert "Pebble" in audit[0]["old_text"]
    assert "sourdough" in store.nodes("tomas", 1)[0].content
    assert check_store(store, load_config(env={}, db_path=db, **EXCHANGE)) == []
    store.close()
    res = runner.invoke(app, ["ingest", str(V2), *args])  # now nothing differs
    assert res.exit_code == 0 and "warning" not in res.output and "updated" not in res.output


def test_update_reconsolidates_the_ancestors(tmp_path, embedder):
    # one segment per exchange; the ancestors are written (and rewritten) by the scripted LLM
    cfg = load_config(env={}, db_path=tmp_path / "t.duckdb", llm_backend="none", **EXCHANGE, **ABSTRACTIVE)
    store = Store(cfg.store.db_path, embedder.model_id, embedder.dim)
    llm, _ = scripted_llm(store)
    eng = MemoryEngine(cfg, store, embedder, llm)
    eng.ingest(load_jsonl(V1, cfg.time.tz))
    old_l2 = store.nodes("orla", 2)[0]
    report = eng.ingest(load_jsonl(V2, cfg.time.tz), update_changed=True)
    assert report.changed_turns == ["orla:s1:0", "orla:s1:1"] and report.turns_updated == 2
    (l1,) = store.nodes("orla", 1)
    (l2,) = store.nodes("orla", 2)
    assert l2.id != old_l2.id and store.node(old_l2.id).status == NodeStatus.SUPERSEDED
    assert l1.id in l2.child_ids and store.parent_ids([l1.id])[l1.id] == l2.id
    assert not any(n.stale for n in store.nodes("orla"))
    assert check_store(store, cfg) == []
    eng.close()


def test_update_rereads_the_memory_items_of_the_changed_turn(tmp_path, embedder):
    """Found by a new user: after --update-changed the tree said "cortado" but the memory items still said
    "espresso", read from the old text (here: espresso, then green tea). The items of a rewritten segment go
    and it is read again."""
    from memory_scenario import write

    cfg = load_config(env={}, db_path=tmp_path / "t.duckdb", llm_backend="none", memory_extractor="rules",
                      consolidation_mode="extractive")
    store = Store(cfg.store.db_path, embedder.model_id, embedder.dim)
    eng = MemoryEngine(cfg, store, embedder, None)
    rows = [("s1", "Mia", "I live in Lisbon now.", "2024-04-01T09:00:00"),
            ("s1", "Mia", "I drink black coffee every morning.", "2024-04-01T09:05:00"),
            ("s2", "Mia", "I drink espresso every morning.", "2024-04-10T08:00:00")]
    eng.ingest(load_jsonl(write(tmp_path / "v1.jsonl", "mia", rows), cfg.time.tz))
    assert {i.value for i in eng.memory_items("mia")} == {"Lisbon", "black coffee", "espresso"}
    rows[2] = ("s2", "Mia", "I drink green tea every morning.", "2024-04-10T08:00:00")
    report = eng.ingest(load_jsonl(write(tmp_path / "v2.jsonl", "mia", rows), cfg.time.tz), update_changed=True)
    assert report.turns_updated == 1
    items = {i.value: i for i in eng.memory_items("mia")}
    assert set(items) == {"Lisbon", "black coffee", "green tea"}
    # the history stays linked: black coffee is superseded by the rewritten statement (found by a new user)
    assert items["black coffee"].superseded_by == items["green tea"].id and items["green tea"].is_open
    assert check_store(store, cfg) == []
    store.close()
