"""The chat's recall trace puts its six headline metrics three to a row: in six columns of a chat message a value of
seven characters ("complex", a first recall's "15785.8" ms) was cut to "com…" (seen in a studio screenshot). AppTest
with an injected engine (real MiniLM + DuckDB, scripted LLM)."""

from __future__ import annotations

import pytest
from studio_support import DEMO_USER, assert_clean, build_demo_db, open_engine, studio_app


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory, embedder):
    return build_demo_db(tmp_path_factory.mktemp("demo") / "demo.duckdb", embedder)


def test_chat_trace_metrics_sit_three_to_a_row(demo_template, tmp_path, embedder):
    eng = open_engine(demo_template, tmp_path, embedder)
    try:
        at = studio_app(eng, DEMO_USER, None)
        at.chat_input[0].set_value("What do I drink in the morning now?").run()
        assert_clean(at)
        (trace,) = [e for e in at.expander if e.label.startswith("Recall trace")]
        cols = [[m.label for m in c.metric] for c in trace.columns if c.metric]  # the columns holding the metrics
        assert cols == [["complexity", "Mem Len (tokens)"], ["gate", "total ms"], ["memories", "LLM tokens"]], cols
    finally:
        eng.close()
