"""The benchmark runner end to end on a tiny LoCoMo-format conversation and the LongMemEval fixture.

Real DuckDB files and the real MiniLM embedder; the LLM is a scripted fake behind the real cached
client, so the re-run check exercises the actual DuckDB response cache.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import consolidation_answer

from timem.bench import manifest as manifest_mod
from timem.bench.recipes import get_recipe
from timem.bench.runner import BenchError, RunSpec, run_benchmark
from timem.config import load_config
from timem.llm.client import LLM
from timem.llm.fake import ScriptedBackend
from timem.recall import load_traces
from timem.store import Store

FIXTURES = Path(__file__).parent / "fixtures"
DETERMINISTIC = ("questions.jsonl", "summary.csv", "summary.md", "manifest.json", "plots.html")


def _turns(n: int, lines: list[tuple[str, str]]) -> list[dict]:
    return [{"speaker": s, "dia_id": f"D{n}:{i}", "text": t} for i, (s, t) in enumerate(lines, start=1)]


CONVERSATION = {
    "sample_id": "conv-t",
    "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": _turns(1, [("Ann", "I adopted a beagle from the shelter yesterday!"),
                                ("Bob", "Congratulations! What is the beagle called?"),
                                ("Ann", "His name is Max and he howls at night."),
                                ("Bob", "Beagles are vocal, give him time.")]),
        "session_2_date_time": "10:00 am on 15 May, 2023",
        "session_2": _turns(2, [("Bob", "I started guitar lessons this week."),
                                ("Ann", "Nice, which guitar did you buy?"),
                                ("Bob", "A used acoustic guitar from a friend."),
                                ("Ann", "Max chewed my shoes again.")]),
        "session_3_date_time": "9:00 am on 2 June, 2023",
        "session_3": _turns(3, [("Ann", "We went hiking in the mountains with Max."),
                                ("Bob", "I played my first song on the guitar for my sister.")]),
    },
    "qa": [
        {"question": "When did Ann adopt the beagle?", "answer": "7 May 2023", "evidence": ["D1:1"], "category": 2},
        {"question": "What instrument does Bob play?", "answer": "guitar", "evidence": ["D2:1"], "category": 4},
        {"question": "What did Ann and Bob do in June?", "answer": "hiking, played a song",
         "evidence": ["D3:1", "D3:2"], "category": 1},
        {"question": "Would Ann rather have a dog or a cat?", "answer": "a dog", "evidence": ["D1:1"], "category": 3},
        {"question": "What did Bob adopt?", "adversarial_answer": "a beagle", "evidence": [], "category": 5},
    ],
}


def reply(request) -> str:
    """Scripted answers for every prompt the harness sends (consolidation, gate, answer, judge)."""
    system = request.messages[0].content
    last = request.messages[-1].content
    if system.startswith("You select"):
        return json.dumps({"keep": [int(n) for n in re.findall(r"^\[(\d+)\]", last, re.MULTILINE)]})
    if system.startswith("You plan"):
        return json.dumps({"complexity": "hybrid", "keywords": [], "time_expression": None})
    if request.json_schema is not None:
        return consolidation_answer(request)
    if system.startswith("You answer"):
        return "7 May 2023" if "beagle" in last.rsplit("Question:", 1)[-1] else "I don't know."
    if system.startswith("You grade"):
        if "Generated answer: 7 May 2023" in last or "Response: 7 May 2023" in last:
            return '{"label": "CORRECT"}'
        return "Hmm, hard to say." if "instrument" in last else '{"label": "WRONG"}'
    raise AssertionError(f"unexpected prompt: {system[:60]}")


def forbid(request) -> str:
    raise AssertionError("no LLM call expected here: " + request.messages[0].content[:60])


def factory(fn):
    def make(cfg, store):
        return LLM(ScriptedBackend(fn, model_id="scripted-bench"), store, max_retries=0)
    return make


@pytest.fixture()
def locomo_file(tmp_path) -> Path:
    p = tmp_path / "locomo-tiny.json"
    p.write_text(json.dumps([CONVERSATION]), encoding="utf-8")
    return p


@pytest.fixture()
def cfg(tmp_path):
    return load_config(None, env={}, cache_dir=tmp_path / "cache", llm_backend="openai", openai_model="scripted-bench",
                       openai_base_url="http://127.0.0.1:9/v1")


@pytest.fixture(autouse=True)
def fixed_git(monkeypatch):
    # other sessions commit concurrently; the manifest's git record must not change between the two runs
    monkeypatch.setattr(manifest_mod, "git_info", lambda: {"commit": "0" * 40, "dirty": False})


def _run(tmp_path, cfg, embedder, data, recipe, out, fn, **kw):
    spec = RunSpec(dataset=kw.pop("dataset", "locomo"), data_file=data, recipe=get_recipe(recipe),
                   out_dir=tmp_path / out, **kw)
    return run_benchmark(spec, cfg, embedder=embedder, llm_factory=factory(fn), progress=False)


def test_end_to_end_then_byte_identical_rerun_from_cache(tmp_path, cfg, embedder, locomo_file):
    db = tmp_path / "bench.duckdb"
    first = _run(tmp_path, cfg, embedder, locomo_file, "timem", "run1", reply, db=db)
    rows = [json.loads(line) for line in (first.out_dir / "questions.jsonl").read_text().splitlines()]
    assert [r["category"] for r in rows] == [2, 4, 1, 3]  # category 5 excluded by default
    by = {r["question_id"]: r for r in rows}
    q0 = by["conv-t:q0"]
    assert (q0["hypothesis"], q0["judge_label"], q0["judge_correct"], q0["f1"]) == ("7 May 2023", "CORRECT", True, 1.0)
    assert q0["evidence"] == ["D1:1"] and q0["covered"] == ["D1:1"] and q0["evidence_recall"] == 1.0
    assert q0["mem_len"] > 0 and "beagle" in q0["context"] and q0["llm_calls"] == 2  # gate + answer
    assert q0["judge_calls"] == 1 and q0["judge_tokens"] > 0 and q0["rouge_l"] == 1.0
    assert by["conv-t:q1"]["judge_label"] == "UNPARSEABLE" and by["conv-t:q1"]["judge_correct"] is False
    overall = first.table[-1]
    assert overall["group"] == "overall" and overall["n"] == 4 and overall["unparseable"] == 1
    assert overall["judge_acc"] == 0.25
    man = json.loads((first.out_dir / "manifest.json").read_text())
    assert man["data_sha256"] == manifest_mod.sha256_file(locomo_file)
    assert man["models"]["answer_llm"] == "scripted-bench" and man["prompt_versions"]["judge"] == "judge-v2"
    assert man["git"]["commit"] == "0" * 40 and man["recipe"]["name"] == "timem"
    assert any(m.startswith("L2 scripted-bench") for m in man["models"]["memory_nodes"])
    assert (first.out_dir / "latency.csv").exists() and (first.out_dir / "plotly.min.js").exists()

    # the same run again: every LLM answer must come from the cache (the backend now refuses to answer)
    second = _run(tmp_path, cfg, embedder, locomo_file, "timem", "run2", forbid, db=db)
    for name in DETERMINISTIC:
        assert (first.out_dir / name).read_bytes() == (second.out_dir / name).read_bytes(), name

    store = Store(db, embedder.model_id, embedder.dim)
    try:
        traces = {t.trace_id: t for t in load_traces(store, "conv-t")}
    finally:
        store.close()
    assert q0["trace_id"] in traces and traces[q0["trace_id"]].query == q0["question"]


def test_adversarial_flag(tmp_path, cfg, embedder, locomo_file):
    res = _run(tmp_path, cfg, embedder, locomo_file, "l1-flat", "adv", reply, include_adversarial=True,
               db=tmp_path / "adv.duckdb")
    adv = res.rows[-1]
    assert adv["category"] == 5 and adv["gold"] == "Not mentioned in the conversation"
    assert adv["adversarial_answer"] == "a beagle" and adv["judge_rule"] == "locomo-adversarial"
    assert adv["answer_in_context"] is None


@pytest.mark.parametrize("recipe", ["l1-flat", "l1-hier", "lambda-0.5-l1", "bm25-turns", "dense-turns",
                                    "hybrid-turns", "gran-2-l1"])
def test_retrieval_only_needs_no_llm(tmp_path, cfg, embedder, locomo_file, recipe):
    no_llm = cfg.with_overrides(llm_backend="none")
    res = _run(tmp_path, no_llm, embedder, locomo_file, recipe, recipe, forbid, retrieval_only=True)
    assert len(res.rows) == 4
    for r in res.rows:
        assert r["hypothesis"] is None and r["judge_label"] is None and r["llm_calls"] == 0
        assert 0 <= r["mem_len"] <= no_llm.recall.token_budget  # BM25 returns nothing when no query term matches
    assert res.rows[0]["evidence_recall"] == 1.0  # the beagle turn is found by every method
    md = (res.out_dir / "summary.md").read_text()
    assert "judge_acc" not in md and "evidence_recall" in md
    assert json.loads((res.out_dir / "manifest.json").read_text())["mode"] == "retrieval-only"


def test_hierarchical_recipes_reuse_an_ingested_db(tmp_path, cfg, embedder, locomo_file):
    db = tmp_path / "tree.duckdb"
    _run(tmp_path, cfg, embedder, locomo_file, "l1-flat", "ingest", reply, db=db)  # e2e: answers through the LLM
    none = cfg.with_overrides(llm_backend="none")
    with pytest.raises(BenchError, match="needs L2-L5"):
        _run(tmp_path, none, embedder, locomo_file, "l2l5-hier", "x", forbid, retrieval_only=True, db=db)
    _run(tmp_path, cfg, embedder, locomo_file, "timem", "tree", reply, db=db)  # consolidates L2-L5
    for recipe in ("l2l5-hier", "l1l5-flat", "timem", "gate-llm", "fixed-complex"):
        res = _run(tmp_path, none, embedder, locomo_file, recipe, f"r-{recipe}", forbid, retrieval_only=True, db=db)
        levels = {k for r in res.rows for k in r["level_counts"]}
        if recipe == "l2l5-hier":
            assert "L1" not in levels and levels and all(r["evidence_recall"] in (0.0, None) for r in res.rows)
            assert any(r["tree_evidence_recall"] for r in res.rows)
        else:
            assert "L1" in levels
    gate = json.loads((tmp_path / "r-gate-llm" / "manifest.json").read_text())
    assert gate["config"]["recall"]["gate"] == "score" and any("score gate" in n for n in gate["notes"])
    with pytest.raises(BenchError, match="another granularity"):
        _run(tmp_path, none, embedder, locomo_file, "gran-2-l1", "g2", forbid, retrieval_only=True, db=db)


def test_extractive_mode_builds_the_tree_for_hierarchical_recipes_without_an_llm(tmp_path, cfg, embedder, locomo_file):
    from timem.bench.runner import default_db_path

    ext = cfg.with_overrides(llm_backend="none", consolidation_mode="extractive")
    assert default_db_path(ext, "locomo", "ab" * 20, False).name.endswith("-none-extractive.duckdb")
    assert default_db_path(cfg, "locomo", "ab" * 20, True).name.endswith("-scripted-bench.duckdb")  # unchanged
    for recipe in ("l2l5-hier", "timem"):
        res = _run(tmp_path, ext, embedder, locomo_file, recipe, f"x-{recipe}", forbid, retrieval_only=True)
        assert any(r["level_counts"] for r in res.rows)
    man = json.loads((tmp_path / "x-timem" / "manifest.json").read_text())
    assert man["config"]["consolidation"]["consolidation_mode"] == "extractive"
    assert any(m.startswith("L2 extractive extractive-v1 extractive") for m in man["models"]["memory_nodes"])


def test_full_context_truncates_to_the_window(tmp_path, cfg, embedder, locomo_file):
    small = _run(tmp_path, cfg, embedder, locomo_file, "full-context", "fc", forbid, retrieval_only=True,
                 window=1500)
    # window 1500 - 1024 answer tokens - prompt overhead leaves room for a few turns only
    r = small.rows[0]
    assert r["truncated"] == 1.0 and 0 < r["kept_turns"] < 10 and "Max" not in r["context"].split("\n")[0]
    big = _run(tmp_path, cfg, embedder, locomo_file, "full-context", "fc2", forbid, retrieval_only=True, window=8192)
    assert big.rows[0]["truncated"] == 0.0 and big.rows[0]["kept_turns"] == 10
    assert all(r["evidence_recall"] == 1.0 for r in big.rows)


def test_full_context_gives_every_question_of_a_user_the_same_context(tmp_path, cfg, embedder, locomo_file):
    """One user's answer prompts then share their prefix, which llama.cpp evaluates once (a question's tokens come
    out of a fixed allowance, not out of the memories)."""
    from timem.bench.baselines import QUESTION_ALLOWANCE, window_budget
    from timem.tokens import count_tokens

    mid = "Which places did Caroline and Melanie say they had visited on their trips " * 3
    assert count_tokens("When?") < count_tokens(mid) < QUESTION_ALLOWANCE < count_tokens(mid * 4)
    assert window_budget(4000, cfg, "When?") == window_budget(4000, cfg, mid) > window_budget(4000, cfg, mid * 4)
    small = _run(tmp_path, cfg, embedder, locomo_file, "full-context", "fc", forbid, retrieval_only=True,
                 window=1500)
    assert len({len(r["question"]) for r in small.rows}) > 1 and len({r["context"] for r in small.rows}) == 1


def test_longmemeval_fixture(tmp_path, cfg, embedder):
    data = FIXTURES / "longmemeval_tiny.json"
    ret = _run(tmp_path, cfg, embedder, data, "l1-flat", "lme", forbid, dataset="longmemeval", retrieval_only=True)
    assert [r["abstention"] for r in ret.rows] == [False, True, False]
    assert ret.rows[0]["session_recall"] == 1.0 and ret.rows[0]["evidence_recall"] == 1.0
    groups = [r["group"] for r in ret.table]
    assert "abstention" in groups and groups[-1] == "overall"
    e2e = _run(tmp_path, cfg, embedder, data, "bm25-turns", "lme-e2e", reply, dataset="longmemeval", limit=2)
    assert [r["judge_rule"] for r in e2e.rows] == ["default", "abstention"]
