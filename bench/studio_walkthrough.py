"""Issue 4's "done when", run once on real input: a new user in the studio, embedded model, LoCoMo conv-30.

Drives the real pages with Streamlit's AppTest (the studio's own engine, built from TIMEM_* settings):
imports conv-30 from the sidebar (file on this machine), asks one question in the chat (answer from
the embedded model), then checks the Timeline, the recall trace, the Manifold (UMAP) and a soft
delete that disappears from the Memories page, the Timeline and recall. Prints what it saw.

    TIMEM_DB_PATH=/path/studio.duckdb .venv/bin/python bench/studio_walkthrough.py

Pointing TIMEM_DB_PATH at a copy of a database where conv-30 was already ingested with the same
model makes the import answer from the LLM cache (seconds instead of about half an hour).
Not a test: it needs the embedded model and minutes of CPU.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[1]
LOCOMO = REPO / "tests" / "data" / "locomo-dev.json"  # the two LoCoMo dev conversations the repository ships
QUESTION = "When did Gina launch an ad campaign for her store?"


def step(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def fail_on_errors(at: AppTest, where: str) -> None:
    problems = [e.value for e in at.exception] + [e.value for e in at.error]
    if problems:
        sys.exit(f"{where}: {problems}")


def main() -> None:
    from timem.models import Level, NodeStatus

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=3600).run()
    fail_on_errors(at, "start")
    step("sidebar: " + " | ".join(c.value for c in at.sidebar.caption)[:300])
    at.radio(key="sb_imp_source").set_value("File on this machine").run()
    at.selectbox(key="sb_imp_fmt").set_value("LoCoMo (JSON)").run()
    at.text_input(key="sb_imp_path").set_value(str(LOCOMO))
    at.text_input(key="sb_imp_ids").set_value("conv-30").run()
    t = time.perf_counter()
    at.button(key="sb_imp_go").click().run()
    fail_on_errors(at, "import")
    step(f"import took {time.perf_counter() - t:.0f} s: " + " ".join(s.value for s in at.success))
    from timem.ui import state  # the studio's own cached engine for this DuckDB file (one per process)

    db = str(Path(state.base_config().store.db_path).expanduser().resolve())
    engine = state._open_engine(db, state.base_config().with_overrides(db_path=Path(db))).engine
    per = {lv.label: len(engine.nodes("conv-30", int(lv))) for lv in Level}
    step(f"conv-30 nodes per level: {per}")

    t = time.perf_counter()
    at.chat_input[0].set_value(QUESTION).run()
    fail_on_errors(at, "chat")
    answer = [m.markdown[0].value for m in at.chat_message if m.markdown][-1]
    step(f"chat answer ({time.perf_counter() - t:.0f} s): {answer}")
    step("trace expanders: " + ", ".join(e.label for e in at.expander if e.label.startswith("Recall trace")))

    for page in ("timeline", "recall_inspector", "manifold", "memories"):
        t = time.perf_counter()
        at.switch_page(f"timem/studio/views/{page}.py").run()
        fail_on_errors(at, page)
        step(f"{page}: rendered in {time.perf_counter() - t:.0f} s; title {at.title[0].value!r}")

    leaf = next(n for n in engine.nodes("conv-30", int(Level.SEGMENT)) if "ad campaign" in n.content.lower())
    at.text_input(key="mem_q").set_value("ad campaign").run()
    at.multiselect(key="mem_selected").set_value([leaf.id]).run()
    at.button(key="mem_soft").click().run()
    fail_on_errors(at, "delete")
    node = engine.node(leaf.id)
    assert node is not None and node.status == NodeStatus.DELETED
    at.switch_page("timem/studio/views/timeline.py").run()
    from timem.ui.timeline import _label

    gone_tl = _label(leaf, engine.config.time.tz) not in at.selectbox(key="tl_node").options
    res = engine.recall("conv-30", QUESTION, persist=False)
    gone_recall = leaf.id not in [c.node_id for c in res.trace.candidates]
    step(f"soft-deleted {leaf.id}: gone from timeline={gone_tl}, gone from recall={gone_recall}")
    engine.restore_memory(leaf.id)
    step("restored it again (undo)")


if __name__ == "__main__":
    main()
