"""Benchmark metrics, the strict judge parser, recipes and the summary tables (pure, no model)."""

from __future__ import annotations

import json

import pytest

from timem.bench import report
from timem.bench.judge import judge_answer
from timem.bench.metrics import coverage, normalize_squad, rouge_l, token_f1, tokens_for_f1
from timem.bench.recipes import RECIPES, SUITES, get_recipe
from timem.datasets.base import Question
from timem.errors import ConfigError
from timem.prompts import judge as jp


def test_normalisation_and_stemming():
    assert normalize_squad("The Beagle, a dog!") == "beagle dog"
    assert tokens_for_f1("Running in the parks") == ["run", "in", "park"]


@pytest.mark.parametrize(("pred", "gold", "f1"), [
    ("7 May 2023", "7 May 2023", 1.0),
    ("On 7 May, 2023.", "7 May 2023", 2 * 0.75 * 1 / 1.75),  # "on" is extra: P = 3/4, R = 1
    ("She paints sunsets", "painting sunset", 0.8),  # stems: paint, sunset match; P = 2/3, R = 1
    ("", "", 1.0),
    ("something", "", 0.0),
    ("the", "a", 1.0),  # both normalise to nothing
    ("cat", "dog", 0.0),
])
def test_token_f1(pred, gold, f1):
    assert token_f1(pred, gold) == pytest.approx(f1)


def test_rouge_l():
    assert rouge_l("7 May 2023", "7 May 2023") == pytest.approx(1.0)
    assert rouge_l("On 7 May, 2023", "7 May 2023") == pytest.approx(2 * 0.75 / 1.75)
    assert rouge_l("", "x") == 0.0 and rouge_l("x", None) == 0.0


def test_coverage():
    assert coverage(["D1:3", "D2:1"], ["D2:1", "D9:9"]) == (["D2:1"], 0.5)
    assert coverage([], ["D1:1"]) == ([], None)


@pytest.mark.parametrize(("text", "label"), [
    ('{"label": "CORRECT"}', "CORRECT"),
    ('  {"reason": "same date", "label": "wrong"}\n', "WRONG"),
    ('```json\n{"label": "CORRECT"}\n```', "CORRECT"),
    ("CORRECT", None),
    ('The answer is right. {"label": "CORRECT"}', None),
    ('{"label": "PARTIAL"}', None),
    ('{"label": "CORRECT", "score": 1}', None),
    ('{"label": "CORRECT"} {"label": "WRONG"}', None),
    ("", None),
])
def test_parse_verdict_is_strict(text, label):
    v = jp.parse_verdict(text)
    assert (v.label if v else None) == label


def test_judge_prompts_per_type():
    assert jp.lme_rule_key("temporal-reasoning", False) == "temporal-reasoning"
    assert jp.lme_rule_key("temporal-reasoning", True) == "abstention"
    assert jp.lme_rule_key("single-session-user", False) == "default"
    temporal = jp.build_longmemeval_messages("How many days?", "19", "18 days", "temporal-reasoning")
    assert "off-by-one" in temporal[0].content
    pref = jp.build_longmemeval_messages("Any tips?", "likes jazz", "Try jazz", "single-session-preference")
    assert "rubric" in pref[0].content and "Rubric: likes jazz" in pref[1].content
    update = jp.build_longmemeval_messages("Where?", "Paris", "Paris", "knowledge-update")
    assert "latest value" in update[0].content
    abst = jp.build_longmemeval_messages("Q?", "never said", "I don't know", "multi-session", abstention=True)
    assert "does not know" in abst[0].content
    loc = jp.build_locomo_messages("When?", "7 May 2023", "May 7th")
    assert "Gold answer: 7 May 2023" in loc[1].content


class _Fixed:
    model_id = "fixed"

    def __init__(self, text):
        self.text, self.calls = text, []

    def complete(self, messages, *, purpose, user_id=None, max_tokens=None):
        self.calls.append((messages, purpose))
        return self.text


@pytest.mark.parametrize(("reply", "label", "correct"), [
    ('{"label": "CORRECT"}', "CORRECT", True), ('{"label": "WRONG"}', "WRONG", False),
    ("Yes, this is correct.", "UNPARSEABLE", False)])
def test_judge_answer_labels(reply, label, correct):
    q = Question(question_id="q", question="When?", answer="7 May 2023", category=2)
    llm = _Fixed(reply)
    j = judge_answer(llm, "locomo", q, "May 7")
    assert (j.label, j.correct, j.rule) == (label, correct, "locomo")
    assert llm.calls[0][1] == "judge"


def test_judge_routes_adversarial_and_longmemeval():
    adv = Question(question_id="q", question="What did Melanie adopt?", answer="a cat", category=5)
    assert judge_answer(_Fixed('{"label":"CORRECT"}'), "locomo", adv, "Not mentioned").rule == "locomo-adversarial"
    lme = Question(question_id="x_abs", question="Q?", answer="never said", category="multi-session",
                   extra={"abstention": True, "question_type": "multi-session"})
    assert judge_answer(_Fixed('{"label":"CORRECT"}'), "longmemeval", lme, "I don't know").rule == "abstention"


def test_recipes_cover_the_ablations():
    names = set(RECIPES)
    for n in ["planner-llm", "fixed-simple", "fixed-hybrid", "fixed-complex", "gate-llm", "gate-off", "l1-flat",
              "l1-hier", "l2l5-hier", "l1l5-flat", "l1l5-hier", "bm25-turns", "dense-turns", "hybrid-turns",
              "full-context", *[f"lambda-{x / 10:.1f}" for x in range(5, 11)], *[f"gran-{g}" for g in (1, 2, 4, 8)]]:
        assert n in names
    assert all(s in names for suite in SUITES.values() for s in suite)
    assert not get_recipe("l1-flat").needs_upper_levels and not get_recipe("l1-hier").needs_upper_levels
    assert get_recipe("l2l5-hier").needs_upper_levels and get_recipe("timem").needs_upper_levels
    assert all(not get_recipe(n).needs_upper_levels for n in SUITES["no-llm"])
    with pytest.raises(ConfigError, match="unknown recipe"):
        get_recipe("nope")


def test_summary_counts_unparseable_as_wrong():
    rows = [
        {"category": 1, "judge_label": "CORRECT", "judge_correct": True, "f1": 1.0, "mem_len": 10,
         "evidence_recall": 1.0},
        {"category": 1, "judge_label": "UNPARSEABLE", "judge_correct": False, "f1": 0.0, "mem_len": 20,
         "evidence_recall": None},
        {"category": 2, "judge_label": "WRONG", "judge_correct": False, "f1": 0.5, "mem_len": 30,
         "evidence_recall": 0.0},
    ]
    table = report.summarize(rows, "locomo")
    assert [r["group"] for r in table] == ["1 multi-hop", "2 temporal", "overall"]
    cat1 = table[0]
    assert (cat1["n"], cat1["judge_acc"], cat1["unparseable"], cat1["evidence_recall"]) == (2, 0.5, 1, 1.0)
    assert table[-1]["judge_acc"] == pytest.approx(1 / 3, abs=1e-4)
    md = report.to_markdown(table)
    assert "| 1 multi-hop | 2 | 50.0 | 1 |" in md and "session_recall" not in md
    assert report.to_csv(table).splitlines()[0].startswith("group,n,judge_acc,unparseable")


def test_publish_copies_summaries_and_tabulates(tmp_path):
    runs = []
    for name, val in (("locomo-a-retrieval", 0.5), ("locomo-b-retrieval", 0.25)):
        d = tmp_path / "runs" / name
        d.mkdir(parents=True)
        table = report.summarize([{"category": 1, "evidence_recall": val, "mem_len": 100},
                                  {"category": 4, "evidence_recall": 1.0, "mem_len": 300}], "locomo")
        (d / "summary.csv").write_text(report.to_csv(table))
        (d / "summary.md").write_text("x")
        (d / "questions.jsonl").write_text("{}\n")
        (d / "manifest.json").write_text(json.dumps({"recipe": {"name": name[7:8], "group": "g"},
                                                     "mode": "retrieval-only"}))
        runs.append(d)
    readme = report.publish(runs, tmp_path / "results", "T", ["evidence_recall"])
    text = readme.read_text()
    assert "| [a](locomo-a-retrieval/summary.md) | g | retrieval-only | 50.0 | 100.0 | 75.0 | 200.0 |" in text
    assert "1 multi-hop | 4 single-hop | overall | Mem Len" in text
    assert not (tmp_path / "results" / "locomo-a-retrieval" / "questions.jsonl").exists()
