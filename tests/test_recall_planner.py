"""Recall planners: the centroid classifier's measured accuracy, the LLM planner, plan levels and quotas."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from timem.config import DEFAULT_QUOTAS, Config
from timem.llm.client import LLM
from timem.llm.fake import ScriptedBackend
from timem.recall.planner import (
    COMPLEXITIES,
    CentroidPlanner,
    LLMPlanner,
    evaluate_planner,
    load_eval_set,
    load_examples,
    make_plan,
)

QT = datetime(2023, 5, 25, 15, 0, tzinfo=UTC)

#: Measured on the packaged 90-question held-out set with all-MiniLM-L6-v2: 77/90 = 0.8556
#: (simple 0.90, hybrid 0.90, complex 0.77). The threshold leaves room for float noise only.
CENTROID_MIN_ACCURACY = 0.84


def test_packaged_examples_and_eval_set_are_large_enough_and_disjoint():
    examples = load_examples()
    assert set(examples) == set(COMPLEXITIES)
    assert all(len(qs) >= 30 for qs in examples.values())
    items = load_eval_set()
    assert len(items) >= 60
    assert {it["complexity"] for it in items} == set(COMPLEXITIES)
    seen = {q.lower() for qs in examples.values() for q in qs}
    assert not [it["question"] for it in items if it["question"].lower() in seen]


def test_centroid_planner_accuracy_on_held_out_set(embedder):
    report = evaluate_planner(CentroidPlanner(embedder))
    assert report["n"] == len(load_eval_set())
    assert report["accuracy"] >= CENTROID_MIN_ACCURACY, json.dumps(report, indent=1)
    assert all(report["per_class"][c]["recall"] >= 0.7 for c in COMPLEXITIES)
    total = sum(n for row in report["confusion"].values() for n in row.values())
    assert total == report["n"]
    assert len(report["errors"]) == report["n"] - sum(report["confusion"][c][c] for c in COMPLEXITIES)


def test_centroid_plan_has_levels_keywords_window_and_scores(embedder):
    plan = CentroidPlanner(embedder).plan("How many times did Anna go hiking last month?", QT, Config())
    assert plan.planner == "centroid"
    assert plan.complexity == "hybrid"
    assert plan.levels == DEFAULT_QUOTAS["hybrid"]
    assert plan.keywords == ["hiking"]
    assert plan.time_expression == "last month"
    assert plan.time_window.start == datetime(2023, 4, 1, tzinfo=UTC)
    assert set(plan.scores) == set(COMPLEXITIES) and max(plan.scores, key=plan.scores.get) == "hybrid"


def test_levels_follow_configured_quotas():
    quotas = {"simple": {1: 5, 2: 1, 5: 0}, "hybrid": {1: 10, 3: 1}, "complex": {1: 20, 2: 4, 3: 2, 4: 2, 5: 1}}
    cfg = Config(quotas=quotas)
    assert make_plan("simple", "q", QT, cfg, "override").levels == {1: 5, 2: 1}  # a zero quota drops the level
    assert make_plan("hybrid", "q", QT, cfg, "override").levels == {1: 10, 3: 1}
    assert make_plan("complex", "q", QT, Config(), "override").levels == DEFAULT_QUOTAS["complex"]


def _planner_llm(reply: dict) -> tuple[LLM, ScriptedBackend]:
    backend = ScriptedBackend(lambda req: json.dumps(reply))
    return LLM(backend, None), backend


def test_llm_planner_cleans_keywords_and_resolves_the_named_time_phrase():
    llm, backend = _planner_llm({"complexity": "complex", "keywords": ["Caroline", "painting", "the", "Art"],
                                 "time_expression": "two weeks ago"})
    plan = LLMPlanner(llm).plan("What would Caroline paint, given what she did two weeks ago?", QT, Config(),
                                participants=["Caroline", "Melanie"])
    assert plan.planner == "llm" and plan.complexity == "complex"
    assert plan.keywords == ["painting", "art"]
    assert plan.time_expression == "two weeks ago"
    assert plan.time_window.start == datetime(2023, 5, 8, tzinfo=UTC)
    assert plan.levels == DEFAULT_QUOTAS["complex"]
    request = backend.calls[0]
    assert request.json_schema is not None and "complexity" in request.json_schema["properties"]
    assert "Thursday, 25 May 2023" in request.messages[-1].content


def test_llm_planner_falls_back_to_deterministic_keywords_when_only_names_remain():
    llm, _ = _planner_llm({"complexity": "simple", "keywords": ["Anna"], "time_expression": None})
    plan = LLMPlanner(llm).plan("What is the name of Anna's cat?", QT, Config())
    assert plan.keywords == ["name", "cat"]
    assert plan.time_window is None


def test_evaluate_planner_counts_llm_failures_as_errors():
    def reply(req):
        if "Would" in req.messages[-1].content:
            raise __import__("timem.errors", fromlist=["LLMError"]).LLMError("boom")
        return json.dumps({"complexity": "simple", "keywords": ["x"]})

    llm = LLM(ScriptedBackend(reply), None, max_retries=0)
    items = [{"question": "What is Bo's job?", "complexity": "simple"},
             {"question": "How many cats has Bo had?", "complexity": "hybrid"},
             {"question": "Would Bo like jazz?", "complexity": "complex"}]
    report = evaluate_planner(LLMPlanner(llm), items, question_time=QT)
    assert report["planner"] == "llm"
    assert report["accuracy"] == pytest.approx(1 / 3, abs=1e-4)
    assert report["confusion"]["hybrid"]["simple"] == 1
    assert report["confusion"]["complex"]["error"] == 1
