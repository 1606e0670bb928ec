"""The memory layer in the studio: the Facts view of the Memories page, and the bundled demo's question
"What do I usually drink in the morning these days?" in the chat (scripted LLM; AppTest)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from studio_support import DEMO_USER, build_demo_db, open_engine
from test_app_pages import assert_clean, make_app

from timem.recall.render import render_trace


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory, embedder):
    return build_demo_db(tmp_path_factory.mktemp("facts") / "demo.duckdb", embedder)


@pytest.fixture()
def engine(demo_template, tmp_path, embedder):
    eng = open_engine(demo_template, tmp_path, embedder)
    yield eng
    eng.close()


def test_facts_view_shows_validity_and_supersession_and_pins(engine):
    at = make_app(engine, page="memories")
    at.radio(key="mem_view").set_value("Facts").run()
    assert_clean(at)
    table = at.dataframe[0].value
    rows = {r["value"]: r for r in table.to_dict("records")}
    # "I switched from coffee to green tea last week" (Sun 21 April): tea holds from that week's Monday, 8 April
    assert rows["espresso"]["superseded by"] == "green tea" and rows["espresso"]["valid"] == "2024-04-02 – 2024-04-08"
    assert rows["green tea"]["valid"].endswith("– now") and rows["green tea"]["sources"] >= 2
    tea = rows["green tea"]["id"]
    at.multiselect(key="facts_selected").set_value([tea]).run()
    at.button(key="facts_pin").click().run()
    assert_clean(at)
    assert engine.store.item(tea).pinned
    espresso = engine.store.item(rows["espresso"]["id"])
    at.multiselect(key="facts_selected").set_value([espresso.id]).run()
    at.button(key="facts_forget").click().run()  # a preview first: nothing goes yet
    assert_clean(at)
    assert engine.store.item(espresso.id).status == "active"
    preview = " ".join(c.value for c in at.code)
    assert espresso.id in preview and all(s in preview for s in espresso.source_ids)
    at.button(key="facts_forget_yes").click().run()
    assert_clean(at)
    assert engine.store.item(espresso.id).status == "deleted"
    # its source segments go too, so that recall no longer finds the fact in the conversation
    assert {n.status.value for n in engine.nodes(DEMO_USER, ids=espresso.source_ids, status=None)} == {"deleted"}
    context = engine.recall(DEMO_USER, "What did my mornings start with?", persist=False).trace.context
    assert "double espresso" not in context


def test_facts_view_forget_can_be_cancelled(engine):
    at = make_app(engine, page="memories")
    at.radio(key="mem_view").set_value("Facts").run()
    item = next(i for i in engine.memory_items(DEMO_USER) if i.value == "green tea")
    at.multiselect(key="facts_selected").set_value([item.id]).run()
    at.button(key="facts_forget").click().run()
    at.button(key="facts_forget_no").click().run()
    assert_clean(at)
    assert engine.store.item(item.id).status == "active" and not at.code


def test_demo_question_is_answered_from_the_open_item_addressed_to_the_user(engine):
    turn = engine.chat_turn(DEMO_USER, "chat-evening", "What do I usually drink in the morning these days?",
                            datetime(2024, 6, 18, 21, tzinfo=UTC), user_name="Mia")
    first = turn.trace.items[0]
    assert (first.value, first.valid_to) == ("green tea", None)
    assert [s.value for s in first.superseded] == ["espresso"]  # the coffee memory, shown as superseded
    assert turn.trace.context.startswith("[preference, valid 2024-04-08 – now] Mia's morning drink: green tea")
    system = engine.llm.backend.calls[-1].messages[0].content
    assert 'address them as "you"' in system
    text = render_trace(turn.trace)
    assert "memory items (1, first in the context)" in text and "espresso (" in text
    assert "superseded 2024-04-08 by" in text
    at = make_app(engine, page="chat")  # the chat page shows the stored exchange's trace with its items table
    assert_clean(at)
