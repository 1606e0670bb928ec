"""Nested settings: one typed section per concern, TOML tables to match, plain names everywhere else."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from timem.bench.manifest import config_record
from timem.bench.recipes import Recipe
from timem.config import Config, load_config
from timem.engine import MemoryEngine
from timem.errors import ConfigError

SECTIONED = """
[store]
db_path = "x.duckdb"

[time]
timezone = "Europe/Berlin"

[time.user_timezones]
kaito = "Asia/Tokyo"

[llm]
llm_backend = "none"

[consolidation]
l1_unit = "exchange"

[consolidation.level_modes]
5 = "hybrid"

[recall]
token_budget = 700
recall_lambda = 0.4

[recall.quotas.simple]
1 = 30

[memory]
memory_item_limit = 3
"""

FLAT = """
db_path = "x.duckdb"
timezone = "Europe/Berlin"
llm_backend = "none"
l1_unit = "exchange"
token_budget = 700
recall_lambda = 0.4
memory_item_limit = 3

[user_timezones]
kaito = "Asia/Tokyo"

[level_modes]
5 = "hybrid"

[quotas.simple]
1 = 30
"""


@pytest.fixture()
def embedder(fake_embedder):
    return fake_embedder


def test_a_sectioned_file_fills_each_section_and_a_flat_file_gives_the_same_config(tmp_path):
    (tmp_path / "s.toml").write_text(SECTIONED)
    (tmp_path / "f.toml").write_text(FLAT)
    cfg = load_config(tmp_path / "s.toml", env={})
    assert cfg.store.db_path.name == "x.duckdb" and cfg.time.timezone == "Europe/Berlin"
    assert str(cfg.time.tz_for("kaito")) == "Asia/Tokyo" and cfg.llm.llm_backend == "none"
    assert cfg.consolidation.l1_unit == "exchange" and cfg.consolidation.mode_for(5) == "hybrid"
    assert cfg.consolidation.mode_for(2) == "extractive"  # unset: by backend
    assert (cfg.recall.token_budget, cfg.recall.recall_lambda, cfg.recall.quotas["simple"]) == (700, 0.4, {1: 30})
    assert cfg.recall.gate == "score" and cfg.memory.memory_item_limit == 3
    assert load_config(tmp_path / "f.toml", env={}) == cfg


def test_environment_and_flags_name_settings_without_their_section(tmp_path):
    (tmp_path / "s.toml").write_text(SECTIONED)
    cfg = load_config(tmp_path / "s.toml", env={"TIMEM_TOKEN_BUDGET": "900", "TIMEM_GATE": "off"}, recall_lambda=0.7)
    assert (cfg.recall.token_budget, cfg.recall.gate, cfg.recall.recall_lambda) == (900, "off", 0.7)
    assert cfg.with_overrides(token_budget=300).recall.token_budget == 300
    assert Config(recall={"token_budget": 5}) == Config(token_budget=5)


@pytest.mark.parametrize(("text", "message"), [
    ("[llm]\ntoken_budget = 5\n", "token_budget belongs in [recall], not [llm]"),
    ("token_budget = 5\n[recall]\ntoken_budget = 6\n", "token_budget is set twice"),
    ("[recall]\ntoken_budgt = 5\n", "unknown setting token_budgt (from {FILE}) (did you mean token_budget?)"),
    ("[recal]\ntoken_budget = 5\n", "unknown setting recal (from {FILE}) (did you mean recall?)"),
    ("recall = 5\n", "invalid TiMem setting: [recall] must be a table of settings, not 5"),
    ("[recall]\nrecall_lambda = 3\n", "recall_lambda must lie in [0, 1]"),
    ("[time]\ntimezone = \"Mars/Base\"\n", "unknown time zone 'Mars/Base'"),
])
def test_a_misplaced_repeated_unknown_or_invalid_setting_is_one_error_naming_it(tmp_path, text, message):
    (tmp_path / "bad.toml").write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message).replace(re.escape("{FILE}"), ".*bad.toml")):
        load_config(tmp_path / "bad.toml", env={})
    with pytest.raises(ConfigError, match="unknown_thing"):
        Config().with_overrides(unknown_thing=1)


def test_the_backend_sets_the_unset_gate_and_consolidation_mode():
    remote = Config(llm={"llm_backend": "openai"})
    assert (remote.recall.gate, remote.consolidation.consolidation_mode) == ("llm", "abstractive")
    assert Config(llm_backend="openai", gate="score").recall.gate == "score"


def test_a_recipe_override_is_checked_against_its_section_when_the_recipe_is_made():
    ok = Recipe(name="x", method="timem", group="g", description="d", overrides={"token_budget": 300})
    assert Config().with_overrides(**ok.overrides).recall.token_budget == 300
    with pytest.raises(ValueError, match="unknown setting"):
        Recipe(name="x", method="timem", group="g", description="d", overrides={"token_budgt": 300})
    with pytest.raises(ValueError, match="recall_lambda"):
        Recipe(name="x", method="timem", group="g", description="d", overrides={"recall_lambda": 2})


def test_the_run_manifest_records_the_sections_with_the_key_masked():
    rec = config_record(Config(llm_backend="openai", openai_api_key="sk-secret", token_budget=400))
    assert rec["llm"]["openai_api_key"] == "***" and rec["recall"]["token_budget"] == 400
    assert "sk-secret" not in json.dumps(rec)


def test_every_recall_trace_records_the_recall_section_whole(tmp_path, store, embedder):
    cfg = load_config(env={}, db_path=store.path, llm_backend="none", cache_dir=tmp_path / "cache",
                      token_budget=321, recall_lambda=0.35)
    eng = MemoryEngine(cfg, store, embedder, None)
    at = datetime(2024, 5, 2, 9, 0, tzinfo=UTC)
    eng.add_exchange("u", "s1", "I moved to Porto in March.", "Nice!", at)
    res = eng.recall("u", "Where did I move?", at)
    (stored,) = eng.traces("u")
    recall = json.loads(json.dumps(cfg.recall.model_dump(mode="json")))
    for settings in (res.trace.settings, stored.settings):
        got = json.loads(json.dumps(settings, default=str))
        assert {k: got[k] for k in recall} == recall
        assert got["timezone"] == "UTC" and got["l1_unit"] == "turn" and got["memory_items"] is True


@pytest.mark.parametrize(("env", "message"), [
    ({"TIMEM_TOKEN_BUDGET": "abc"}, "recall.token_budget (from TIMEM_TOKEN_BUDGET): Input should be a valid integer"),
    ({"TIMEM_TOKEN_BUDGT": "5"}, "TIMEM_TOKEN_BUDGT is not a TiMem setting; did you mean TIMEM_TOKEN_BUDGET?"),
    ({"TIMEM_QUOTAS": "x"}, "TIMEM_QUOTAS: quotas is a table; set it in the TOML file ([recall.quotas])"),
])
def test_a_bad_or_misspelt_variable_is_an_error_naming_it(env, message):
    """Misspelt TIMEM_* variables and table settings given in the environment were ignored without a word."""
    with pytest.raises(ConfigError) as err:
        load_config(None, env=env)
    assert message in str(err.value)


def test_variables_that_are_not_settings_are_left_alone():
    assert load_config(None, env={"TIMEM_CONFIG": "", "TIMEM_SCREENSHOT_DB": "x"}).recall.token_budget == 1000

