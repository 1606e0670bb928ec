"""A recall trace's six headline metrics sit three to a row (two in a side-by-side comparison): six to a row, a value
of seven characters ("complex", a first recall's "15785.8" ms) was cut to "com…", in the chat's message and in the
Recall inspector at 1280 px (seen in headless Chromium screenshots). AppTest with an injected engine (real MiniLM +
DuckDB, scripted LLM)."""

from __future__ import annotations

import pytest
from studio_support import DEMO_USER, assert_clean, build_demo_db, open_engine, studio_app

#: the metrics by column: three columns of two
COLUMNS = [["complexity", "Mem Len (tokens)"], ["gate", "total ms"], ["memories", "LLM tokens"]]
#: in a comparison's half of the page: two columns of three
COMPACT = [["complexity", "memories", "total ms"], ["gate", "Mem Len (tokens)", "LLM tokens"]]


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory, embedder):
    return build_demo_db(tmp_path_factory.mktemp("demo") / "demo.duckdb", embedder)


def _metric_columns(block) -> list[list[str]]:
    return [[m.label for m in c.metric] for c in block.columns if c.metric]


def test_trace_metrics_sit_three_to_a_row_in_the_chat_and_the_inspector(demo_template, tmp_path, embedder):
    eng = open_engine(demo_template, tmp_path, embedder)
    try:
        at = studio_app(eng, DEMO_USER, None)
        at.chat_input[0].set_value("What do I drink in the morning now?").run()
        assert_clean(at)
        (trace,) = [e for e in at.expander if e.label.startswith("Recall trace")]
        assert _metric_columns(trace) == COLUMNS
        at = studio_app(eng, DEMO_USER, "recall_inspector")  # the stored trace of that message
        assert_clean(at)
        assert _metric_columns(at.main) == COLUMNS
    finally:
        eng.close()


def test_a_comparisons_trace_metrics_sit_two_to_a_row(demo_template, tmp_path, embedder):
    eng = open_engine(demo_template, tmp_path, embedder)
    try:
        at = studio_app(eng, DEMO_USER, "recall_inspector")
        at.text_input(key="insp_query").set_value("What did Mia drink before she switched to tea?").run()
        at.button(key="insp_run").click().run()
        assert_clean(at)
        found = [_metric_columns(c) for c in at.main.columns]
        assert found.count(COMPACT) == 2, found  # configuration A and B, side by side
    finally:
        eng.close()
