"""AppTest over every studio page with an injected engine (real MiniLM + DuckDB, scripted LLM; no model load)."""

from __future__ import annotations

import pytest
from helpers import ABSTRACTIVE
from streamlit.testing.v1 import AppTest
from studio_support import DEMO_USER, REPO, SCRIPTED_MODEL, assert_clean, build_demo_db, open_engine, studio_app

from timem.ids import ID_RULE
from timem.models import Level, NodeStatus, Role
from timem.recall import recall
from timem.recall.options import RecallOptions
from timem.ui.state import ENGINE_KEY, USER_KEY

PAGES = {"chat": "Chat", "timeline": "Timeline", "recall_inspector": "Recall inspector", "manifold": "Manifold",
         "memories": "Memories"}


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory, embedder):
    return build_demo_db(tmp_path_factory.mktemp("demo") / "demo.duckdb", embedder)


@pytest.fixture()
def engine(demo_template, tmp_path, embedder):
    eng = open_engine(demo_template, tmp_path, embedder)
    yield eng
    eng.close()


def make_app(engine, user: str = DEMO_USER, page: str | None = None) -> AppTest:
    return studio_app(engine, user, page)


@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_renders(engine, page):
    at = make_app(engine, page=page)
    assert_clean(at)
    assert at.title[0].value == PAGES[page]
    assert any("scripted-studio" in c.value for c in at.sidebar.caption)  # the LLM in use is named


@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_renders_without_llm_and_for_a_new_user(demo_template, tmp_path, embedder, page):
    eng = open_engine(demo_template, tmp_path, embedder, with_llm=False)
    try:
        assert_clean(make_app(eng, page=page))
        at = make_app(eng, user="nobody-yet", page=page)
        assert not at.exception, [e.value for e in at.exception]
    finally:
        eng.close()


def test_chat_round_trip_records_exchange_and_trace(engine):
    at = make_app(engine)
    at.chat_input[0].set_value("What do I drink in the morning now?").run()
    assert_clean(at)
    texts = [m.markdown[0].value for m in at.chat_message if m.markdown]
    assert "What do I drink in the morning now?" in texts
    assert any(t.startswith("Scripted answer to: What do I drink") for t in texts)
    session_id = at.session_state["chat_sessions"][DEMO_USER]
    turns = engine.store.turns(DEMO_USER, session_id)
    assert [t.role for t in turns] == [Role.USER, Role.ASSISTANT]
    assert turns[0].speaker == "Mia"  # the user's speaker name carries over from the imported conversation
    assert engine.store.nodes(DEMO_USER, int(Level.SEGMENT), session_id=session_id)  # L1 written online
    assert engine.store.traces(DEMO_USER)[0]["query"] == "What do I drink in the morning now?"
    assert any(e.label.startswith("Recall trace") for e in at.expander)
    assert any("L1 segment (verbatim)" in c.value for c in at.caption)

    at.button(key="chat_end").click().run()
    assert_clean(at)
    assert at.session_state["chat_sessions"][DEMO_USER] is None
    l2 = engine.store.nodes(DEMO_USER, int(Level.SESSION), session_id=session_id)
    assert l2 and l2[0].model_id == SCRIPTED_MODEL
    assert any(SCRIPTED_MODEL in s.value for s in at.success)  # model named beside the new memory


def test_chat_answers_and_warns_when_a_window_cannot_be_consolidated(engine):
    """A model answer the grounding filter refuses (facts found in no input) for one session's L2:
    ending the session and chatting on both keep everything else and say what is missing."""
    from studio_support import studio_answer

    from timem.llm.client import LLM
    from timem.llm.fake import ScriptedBackend

    def invents(request):
        prompt = request.messages[-1].content
        if "Segments of this session" in prompt and "origami" in prompt.split("\n\nEarlier ")[0]:
            return '{"summary": "They toured the Eiffel Tower and the Louvre, then bought croissants in Paris."}'
        return studio_answer(request)

    engine.llm = engine.consolidator.llm = LLM(ScriptedBackend(invents, model_id=SCRIPTED_MODEL), engine.store)
    at = make_app(engine)
    at.chat_input[0].set_value("I folded an origami crane today").run()
    assert_clean(at)
    first = at.session_state["chat_sessions"][DEMO_USER]
    at.button(key="chat_end").click().run()
    assert not at.exception and at.session_state["chat_sessions"][DEMO_USER] is None
    assert any("could not be consolidated" in w.value and f"session:{first}" in w.value for w in at.warning)
    assert not engine.store.nodes(DEMO_USER, int(Level.SESSION), session_id=first)  # nothing invented stored
    at.chat_input[0].set_value("What do I drink in the morning now?").run()  # the failed window is retried
    assert not at.exception
    texts = [m.markdown[0].value for m in at.chat_message if m.markdown]
    assert any(t.startswith("Scripted answer to: What do I drink") for t in texts)  # answered anyway
    second = at.session_state["chat_sessions"][DEMO_USER]
    assert len(engine.store.turns(DEMO_USER, second)) == 2  # and recorded
    assert any("recorded, but consolidation is incomplete" in w.value for w in at.warning)


def test_forget_typed_in_chat_shows_a_preview_and_acts_only_on_confirm(engine):
    """A new-user trial typed "Forget that I live in Porto." in the chat: it was deleted at once, with no preview, and
    the notice vanished at the next message. Now the chat previews, forgets on Confirm, keeps on Cancel, and lists
    what happened under the chat."""
    def active_teas():
        return [i for i in engine.memory_items(DEMO_USER) if "green tea" in i.value]

    assert active_teas()
    before = len(engine.store.turns(DEMO_USER))
    at = make_app(engine)
    at.chat_input[0].set_value("Forget that I drink green tea.").run()
    assert_clean(at)
    assert active_teas() and len(engine.store.turns(DEMO_USER)) == before  # nothing gone, nothing stored
    box = "\n".join(m.value for m in at.markdown)
    assert "Forget 1 fact(s)" in box and "green tea" in box and "\n- item " in box  # one line per item / segment
    at.button(key="chat_forget_no").click().run()
    assert_clean(at)
    assert active_teas() and any("cancelled, nothing was forgotten" in c.value for c in at.caption)

    at.chat_input[0].set_value("Forget that I drink green tea.").run()
    at.button(key="chat_forget_yes").click().run()
    assert_clean(at)
    assert not active_teas() and len(engine.store.turns(DEMO_USER)) == before
    assert any("forgot 1 fact(s)" in c.value for c in at.caption)
    # the note said "restore them from the Memories page", but a restored segment does not bring back a fact that
    # was forgotten by name (a new-user trial restored "I moved to Corvid" and still got the old employer)
    note = next(c.value for c in at.caption if "forgot 1 fact(s)" in c.value)
    assert "the facts stay forgotten" in note, note
    for node in engine.store.nodes(DEMO_USER, int(Level.SEGMENT), status=NodeStatus.DELETED):
        engine.restore_memory(node.id)
    assert not active_teas()
    at.chat_input[0].set_value("What do I drink in the morning now?").run()  # the log stays after the next message
    assert any("forgot 1 fact(s)" in c.value for c in at.caption)

    at.chat_input[0].set_value("Forget that I keep a pet iguana.").run()  # nothing matches: said so, nothing changes
    said = next(m.value for m in at.markdown if "Nothing in memory matches" in m.value)
    # as `timem forget` and the service: why, what was searched, and where to see what is remembered (a trial saw
    # only "Nothing in memory matches" there)
    assert "no memory holds 'pet' or 'iguana'" in said and "Check the spelling" in said, said
    assert "Searched " in said and "conversation segment(s)" in said and "Memories page" in said, said
    at.button(key="chat_forget_ok").click().run()
    assert any("nothing matched" in c.value for c in at.caption)


def test_a_forget_note_in_a_chat_on_a_simulated_clock_carries_the_chats_time(engine):
    """A trial: the line a "Forget that …" leaves under the chat was stamped with the wall clock ("19:02") in a chat
    whose turns ran on a simulated clock in 2024; it carries the chat's event time now, written as a turn's is."""
    from datetime import date, time

    at = make_app(engine)
    at.radio(key="chat_time_mode").set_value("Simulated").run()
    at.date_input(key="chat_sim_date").set_value(date(2024, 7, 3))
    at.time_input(key="chat_sim_clock").set_value(time(9, 30)).run()
    at.chat_input[0].set_value("Forget that I drink green tea.").run()
    at.button(key="chat_forget_yes").click().run()
    assert_clean(at)
    notes = [c.value for c in at.caption if "you asked to forget" in c.value]
    assert len(notes) == 1, notes
    assert notes[0].startswith("Wed 03 Jul 2024 09:30 · you asked to forget “I drink green tea”: forgot 1 fact(s)")


def test_a_forgotten_exchange_is_not_shown_again_in_the_chat_history(engine):
    """A new-user trial forgot "I keep a parrot named Kiwi" from the chat: recall no longer found it, but the chat
    history above still showed the message and the reply word for word. Now both show a note instead."""
    from timem.ui.chat import FORGOTTEN_NOTE

    at = make_app(engine)
    at.chat_input[0].set_value("I keep a parrot named Kiwi at home.").run()
    at.chat_input[0].set_value("And I play the cello on Sundays.").run()
    assert_clean(at)
    shown = [m.markdown[0].value for m in at.chat_message if m.markdown]
    assert any("parrot named Kiwi" in t for t in shown)
    at.chat_input[0].set_value("Forget that I keep a parrot named Kiwi.").run()
    at.button(key="chat_forget_yes").click().run()
    assert_clean(at)
    shown = [m.markdown[0].value for m in at.chat_message if m.markdown]
    assert not any("parrot" in t or "Kiwi" in t for t in shown), shown
    assert any("cello" in t for t in shown)  # the other exchange stays as it was
    notes = [c.value for m in at.chat_message for c in m.caption if c.value == FORGOTTEN_NOTE]
    assert len(notes) == 2  # the message and its reply
    everywhere = [e.value for kind in (at.markdown, at.caption, at.text, at.code, at.info, at.warning)
                  for e in kind if isinstance(e.value, str) and "parrot" in e.value]
    everywhere += [t for d in at.dataframe if "parrot" in (t := d.value.to_string())]
    assert all("you asked to forget" in v for v in everywhere), everywhere  # only this browser's own forget log
    session_id = at.session_state["chat_sessions"][DEMO_USER]
    assert len(engine.forgotten_turn_ids(DEMO_USER, session_id)) == 2
    insp = make_app(engine, page="recall_inspector")  # its past queries leave out the forgotten message's
    insp.radio(key="insp_source").set_value("Past query").run()
    assert_clean(insp)
    options = insp.selectbox(key="insp_past").options
    assert any("cello" in o for o in options) and not any("parrot" in o for o in options), options
    at.chat_input[0].set_value("I keep a parrot named Kiwi at home.").run()  # said again: this one is listed
    insp.run()
    assert sum("parrot" in o for o in insp.selectbox(key="insp_past").options) == 1
    seg = next(n for n in engine.nodes(DEMO_USER, 1, status=NodeStatus.DELETED) if "parrot" in n.content)
    engine.restore_memory(seg.id)  # restored: shown again
    at.run()
    assert any("parrot named Kiwi" in m.markdown[0].value for m in at.chat_message if m.markdown)


def test_a_blank_chat_message_shows_no_empty_bubble_and_a_refused_one_is_not_shown_as_sent(engine):
    """A trial: a message past max_turn_chars (100,000), refused by the engine (an InputError), stayed in the chat
    as a sent message's bubble (with an answer bubble under it); now the error takes its place, and nothing else."""
    at = make_app(engine)
    at.chat_input[0].set_value("   ").run()
    assert [m for m in at.chat_message if m.markdown and not m.markdown[0].value.strip()] == []
    assert any("it is empty" in e.value for e in at.error)
    bubbles = len(at.chat_message)
    at.chat_input[0].set_value("x" * 100_001).run()
    assert not at.exception
    assert not [m for m in at.chat_message if m.markdown and "xxx" in m.markdown[0].value]
    assert len(at.chat_message) == bubbles  # no answer bubble either
    # the refusal speaks to the person who typed it, not of records and fields (a new-user trial)
    refused = [e.value for e in at.error if "not recorded" in e.value]
    assert len(refused) == 1 and "100,001 characters" in refused[0], refused
    assert not any("record turn" in e or "field '" in e for e in refused), refused
    at.run()  # the next run shows no trace of it either: nothing was stored
    assert not [m for m in at.chat_message if m.markdown and "xxx" in m.markdown[0].value]
    assert all("x" * 100 not in t.text for t in engine.store.turns(DEMO_USER))


def test_chat_simulated_event_time(engine):
    at = make_app(engine)
    at.radio(key="chat_time_mode").set_value("Simulated").run()
    from datetime import date, time

    at.date_input(key="chat_sim_date").set_value(date(2024, 7, 3))
    at.time_input(key="chat_sim_clock").set_value(time(9, 30)).run()
    at.chat_input[0].set_value("I started a new job today").run()
    assert_clean(at)
    session_id = at.session_state["chat_sessions"][DEMO_USER]
    turns = engine.store.turns(DEMO_USER, session_id)
    assert turns[0].event_time.isoformat() == "2024-07-03T09:30:00+00:00"
    # the clock moved on by a minute for the next exchange
    assert at.time_input(key="chat_sim_clock").value == time(9, 31)


def test_a_reload_continues_a_simulated_clock_that_runs_ahead_of_now(engine):
    """A new-user trial moved the simulated clock a month ahead, chatted, reloaded the page: the Chat page came back
    on "Now", so the next exchange was dated before the last one."""
    from datetime import UTC, datetime, timedelta

    at = make_app(engine)
    at.radio(key="chat_time_mode").set_value("Simulated").run()
    ahead = (datetime.now(UTC) + timedelta(days=30)).replace(second=0, microsecond=0)
    local = ahead.astimezone(engine.config.time.tz)
    at.date_input(key="chat_sim_date").set_value(local.date())
    at.time_input(key="chat_sim_clock").set_value(local.time().replace(tzinfo=None)).run()
    at.chat_input[0].set_value("I booked a trip to Lisbon").run()
    assert_clean(at)
    assert engine.store.turns(DEMO_USER)[-1].event_time > datetime.now(UTC) + timedelta(days=29)

    reloaded = make_app(engine)  # a reload: a new browser session over the same store
    assert reloaded.radio(key="chat_time_mode").value == "Simulated"
    last = engine.store.turns(DEMO_USER)[-1].event_time
    # the open chat session goes on a minute later (a trial saw the clock jump an hour at every reload)
    expected = (last + timedelta(minutes=1)).astimezone(engine.config.time.tz).replace(tzinfo=None, second=0,
                                                                                       microsecond=0)
    assert reloaded.session_state["chat_sim_time"] == expected
    assert make_app(engine).session_state["chat_sim_time"] == expected  # and again: no drift


def test_a_simulated_clock_starts_an_hour_after_an_imported_conversation(engine):
    """After an import the last turn is in an imported session: the chat starts a new session an hour later."""
    from datetime import timedelta

    at = make_app(engine)
    last = engine.store.turns(DEMO_USER)[-1]
    assert not last.session_id.startswith("chat-")
    assert at.session_state["chat_sim_time"] == (last.event_time + timedelta(hours=1)).astimezone(
        engine.config.time.tz).replace(tzinfo=None, second=0, microsecond=0)


def test_chat_after_a_pause_starts_a_new_session(engine):
    """A message after the session idled (simulated clock moved on a day) goes to a new session; the engine
    refuses a turn more than a day into a session, so the studio must not send it there."""
    from datetime import date, time

    at = make_app(engine)
    at.radio(key="chat_time_mode").set_value("Simulated").run()
    at.date_input(key="chat_sim_date").set_value(date(2024, 7, 3))
    at.time_input(key="chat_sim_clock").set_value(time(9, 30)).run()
    at.chat_input[0].set_value("I started a new job today").run()
    first = at.session_state["chat_sessions"][DEMO_USER]
    at.time_input(key="chat_sim_clock").set_value(time(10, 0)).run()
    at.chat_input[0].set_value("My desk is by the window").run()
    assert at.session_state["chat_sessions"][DEMO_USER] == first  # half an hour later: the same session
    at.date_input(key="chat_sim_date").set_value(date(2024, 7, 5)).run()
    at.chat_input[0].set_value("The new job is going well").run()
    assert_clean(at)
    second = at.session_state["chat_sessions"][DEMO_USER]
    assert second != first and [t.text for t in engine.store.turns(DEMO_USER, second)][0] == "The new job is going well"
    assert len(engine.store.turns(DEMO_USER, first)) == 4


def table_ids(at: AppTest) -> list[str]:
    """Node ids in the Memories page's table."""
    return list(at.dataframe[0].value["id"])


def timeline_label(node, engine) -> str:
    from timem.ui.timeline import _label

    return _label(node, engine.config.time.tz)


def _espresso_leaf(engine):
    return next(n for n in engine.store.nodes(DEMO_USER, int(Level.SEGMENT)) if "double espresso" in n.content)


def test_soft_delete_disappears_from_memories_timeline_and_recall(engine):
    leaf = _espresso_leaf(engine)
    at = make_app(engine, page="memories")
    at.text_input(key="mem_q").set_value("double espresso").run()
    assert leaf.id in table_ids(at)
    tl = make_app(engine, page="timeline")
    assert timeline_label(leaf, engine) in tl.selectbox(key="tl_node").options

    at.multiselect(key="mem_selected").set_value([leaf.id]).run()
    at.button(key="mem_soft").click().run()
    assert_clean(at)
    assert engine.store.node(leaf.id).status == NodeStatus.DELETED
    assert leaf.id not in table_ids(at)  # gone from the Memories page
    assert any("deleted" in i.value for i in at.info)  # the undo bar

    tl = make_app(engine, page="timeline")
    assert_clean(tl)
    assert timeline_label(leaf, engine) not in tl.selectbox(key="tl_node").options  # gone from the Timeline

    res = recall(engine.store, engine.embedder, None, engine.config, DEMO_USER, "double espresso every morning",
                 options=RecallOptions(persist=False))
    assert leaf.id not in [c.node_id for c in res.trace.candidates]  # gone from recall
    assert leaf.id not in [n.id for n in res.nodes]

    at.button(key="mem_undo_btn").click().run()  # undo
    assert_clean(at)
    assert engine.store.node(leaf.id).status == NodeStatus.ACTIVE


def test_hard_erase_and_bulk_select(engine):
    at = make_app(engine, page="memories")
    at.text_input(key="mem_q").set_value("Pixel").run()
    shown = table_ids(at)
    assert len(shown) >= 2
    at.button(key="mem_all").click().run()  # bulk select everything shown
    assert set(at.multiselect(key="mem_selected").value) == set(shown)
    at.checkbox(key="mem_erase_ok").check().run()
    at.button(key="mem_erase").click().run()
    assert_clean(at)
    assert not engine.store.nodes(ids=shown, status=None)  # erased from the table
    res = recall(engine.store, engine.embedder, None, engine.config, DEMO_USER, "Pixel the cat",
                 options=RecallOptions(persist=False))
    assert not set(shown) & {c.node_id for c in res.trace.candidates}


def test_edit_memory(engine):
    leaf = _espresso_leaf(engine)
    at = make_app(engine, page="memories")
    at.multiselect(key="mem_selected").set_value([leaf.id]).run()
    at.text_area(key=f"mem_edit_text_{leaf.id}").set_value("Mia drinks matcha every morning.")
    at.button[[b.label for b in at.button].index("Save edit")].click().run()
    assert_clean(at)
    assert engine.store.node(leaf.id).content == "Mia drinks matcha every morning."


def test_erase_user(engine):
    at = make_app(engine, page="memories")
    at.text_input(key="mem_erase_user_typed").set_value(DEMO_USER).run()
    at.button(key="mem_erase_user").click().run()
    assert_clean(at)
    assert DEMO_USER not in engine.store.users()
    # a trial: the sidebar still offered and kept the erased user, and the notice was a raw dump of table counts
    assert at.session_state[USER_KEY] != DEMO_USER and DEMO_USER not in at.sidebar.selectbox(key="sb_user").options
    note = " ".join(m.value for kind in (at.success, at.info, at.markdown, at.toast) for m in kind)
    assert f"Erased user {DEMO_USER}:" in note and " turns" in note and "no erased text remains" in note, note
    assert "llm_cache" not in note and "audit_redacted" not in note


def test_no_erase_is_offered_for_a_user_with_nothing_stored(engine):
    """Found by a new user: ?user=nobody offered "Erase a whole user" for a user that does not exist."""
    at = make_app(engine, user="nobody", page="memories")
    assert_clean(at)
    assert "mem_erase_user" not in [b.key for b in at.button]
    assert "mem_erase_user" in [b.key for b in make_app(engine, page="memories").button]


def test_timeline_node_details(engine):
    l2 = engine.store.nodes(DEMO_USER, int(Level.SESSION))[0]
    at = make_app(engine, page="timeline")
    at.selectbox(key="tl_node").set_value(l2.id).run()
    assert_clean(at)
    assert at.subheader[0].value.startswith("L2 session")
    assert any(SCRIPTED_MODEL in m.value for m in at.markdown)  # the model that wrote it
    assert any(e.label.startswith("Source turns") for e in at.expander)
    at.multiselect(key="tl_levels").set_value([5]).run()
    options = at.selectbox(key="tl_node").options
    assert len(options) == 3 and all(o.startswith("L5 profile") for o in options)


def test_timeline_draws_the_segment_tree(engine):
    at = make_app(engine, page="timeline")
    at.toggle(key="tl_segtree").set_value(True).run()
    assert_clean(at)
    caption = next(c.value for c in at.caption if c.value.startswith("Segment tree (SegTreeMem)"))
    n = len(engine.store.nodes(DEMO_USER, int(Level.SEGMENT)))
    assert f"{n} utterances" in caption
    assert at.get("plotly_chart") and "tl_node" not in [s.key for s in at.selectbox]  # instead of the TiMem tree


def test_recall_inspector_compares_two_configurations(engine):
    at = make_app(engine, page="recall_inspector")
    at.text_input(key="insp_query").set_value("What did Mia drink before she switched to tea?").run()
    at.button(key="insp_run").click().run()
    assert_clean(at)
    results = at.session_state["insp_results"]["results"]
    assert len(results) == 2 and results[1].plan.complexity == "complex" and results[1].gate.applied == "off"
    assert results[0].candidates and results[0].context_tokens > 0
    # A is the chat's configuration: the configured gate (score without an endpoint), even though an LLM is there
    assert engine.has_llm and results[0].gate.applied == engine.config.recall.gate == "score"
    assert len(engine.store.traces(DEMO_USER)) == 1  # A is saved, B is a comparison only
    at.radio(key="insp_source").set_value("Past query").run()
    assert_clean(at)


def test_a_new_inspector_query_is_asked_at_the_chats_clock_not_todays_date(engine):
    """A new-user trial asked "What did I drink in the morning in April?" over the 2024 demo: the inspector's "now"
    was today's date, so the time window was April 2026 and espresso was missing; the chat used April 2024."""
    at = make_app(engine, page="recall_inspector")
    at.text_input(key="insp_query").set_value("What did Mia drink in the morning in April?").run()
    at.button(key="insp_run").click().run()
    assert_clean(at)
    trace = at.session_state["insp_results"]["results"][0]
    last = engine.store.turns(DEMO_USER)[-1].event_time
    assert trace.question_time.year == last.year == 2024 and trace.question_time > last
    assert trace.plan.time_window is not None and trace.plan.time_window.start.year == 2024
    assert any("chat's simulated clock" in c.value for c in at.caption)


def test_recall_inspector_compares_two_databases_built_in_different_modes(engine, tmp_path, embedder):
    """B recalls the same user and question from the demo consolidated extractively; the Gate tab names
    each memory's mode, and a database without that user is refused in B's column only."""
    other = build_demo_db(tmp_path / "extractive.duckdb", embedder, consolidation_mode="extractive")
    at = make_app(engine, page="recall_inspector")
    at.text_input(key="insp_query").set_value("What did Mia drink before she switched to tea?").run()
    at.selectbox(key="insp_B_db").set_value("another file …").run()
    at.text_input(key="insp_B_db_path").set_value(str(other)).run()
    assert at.selectbox(key="insp_B_gate").options == ["score", "off"]  # no LLM on the other database
    for name in "AB":  # let L2-L5 into both contexts, so that the modes show
        at.selectbox(key=f"insp_{name}_levels").set_value("L1–L5 (TiMem paper quotas)").run()
    at.selectbox(key="insp_A_gate").set_value("score").run()
    at.button(key="insp_run").click().run()
    assert_clean(at)
    shown = at.session_state["insp_results"]
    a, b = shown["results"]
    assert shown["dbs"] == [None, str(other)] and str(other) in shown["setups"][1]
    from timem.store import Store

    with Store(other, embedder.model_id, embedder.dim) as st_other:
        assert set(b.node_ids) <= {n.id for n in st_other.nodes(DEMO_USER)}  # recalled from the other file
    gate_tables = [t.value for t in at.dataframe if "mode" in t.value.columns]
    assert len(gate_tables) == 2
    modes_a, modes_b = (set(t.loc[t["kept"], "mode"]) for t in gate_tables)
    assert "abstractive" in modes_a and "extractive" not in modes_a, modes_a
    assert "extractive" in modes_b and "abstractive" not in modes_b, modes_b
    assert len(engine.store.traces(DEMO_USER)) == 1  # only A is saved, in the studio's database

    empty = tmp_path / "nobody.duckdb"
    Store(empty, embedder.model_id, embedder.dim).close()
    at.text_input(key="insp_B_db_path").set_value(str(empty)).run()
    at.button(key="insp_run").click().run()
    assert any("no user 'demo-mia'" in e.value for e in at.error), [e.value for e in at.error]
    at.text_input(key="insp_B_db_path").set_value(str(tmp_path / "typo.duckdb")).run()
    at.button(key="insp_run").click().run()
    assert any("no database at" in e.value for e in at.error) and not (tmp_path / "typo.duckdb").exists()


def test_manifold_metrics_per_level(engine):
    at = make_app(engine, page="manifold")
    assert_clean(at)
    metrics = at.dataframe[0].value
    assert list(metrics["level"]) == ["L1", "L2", "L3", "L4", "L5"]
    # one user: grouped by months, every level but L5 (one profile a month) gets numbers (issue 27 #10: by
    # sessions, L2-L5 got None)
    assert at.selectbox(key="mf_label").value == "month"
    numbers = metrics["silhouette"] != "—"
    assert list(numbers) == [True, True, True, True, False], metrics
    assert metrics.loc[4, "note"] == "every point is its own group"
    # a trial saw "None" in the table's cells: a score a level lacks is "—" (its note says why), never None / NaN
    assert not metrics.isna().any().any() and "None" not in metrics.astype(str).to_numpy(), metrics
    assert list(metrics.loc[4, ["silhouette", "davies_bouldin"]]) == ["—", "—"]


def test_import_demo_from_sidebar(tmp_path, embedder):
    from studio_support import studio_llm

    from timem.config import load_config
    from timem.engine import MemoryEngine
    from timem.store import Store

    cfg = load_config(env={}, db_path=tmp_path / "empty.duckdb", llm_backend="none")
    store = Store(cfg.store.db_path, embedder.model_id, embedder.dim)
    eng = MemoryEngine(cfg, store, embedder, studio_llm(store)[0])
    try:
        at = make_app(eng, user="me")
        at.button(key="sb_imp_go").click().run()
        assert_clean(at)
        assert eng.store.users() == [DEMO_USER]
        assert at.session_state[USER_KEY] == DEMO_USER
        assert len(eng.store.nodes(DEMO_USER, int(Level.PROFILE))) == 3  # April, May, June
        assert any("Imported demo-mia" in s.value for s in at.success)
    finally:
        eng.close()


def test_import_l1_only_then_consolidate_now(empty_abstractive_engine):
    """Unticking 'Consolidate L2-L5' writes L1 only; 'Consolidate now' (with flush) builds the rest later.
    (The checkbox is offered when the LLM writes L2-L5; extractive imports take seconds and have none.)"""
    eng = empty_abstractive_engine
    at = make_app(eng, user="me")
    at.checkbox(key="sb_imp_upper").uncheck().run()
    at.button(key="sb_imp_go").click().run()
    assert_clean(at)
    levels = {int(n.level) for n in eng.store.nodes(DEMO_USER)}
    assert levels == {1}
    at.checkbox(key="sb_flush").check().run()
    at.button(key="sb_consolidate").click().run()  # LLM consolidation: a background job (timem.ui.jobs)
    assert_clean(at)
    from timem.ui import jobs

    assert jobs.current_job(eng).join(300)
    at.run()
    assert_clean(at)
    assert any("Consolidating demo-mia: finished" in s.value for s in at.success), [s.value for s in at.success]
    assert {int(n.level) for n in eng.store.nodes(DEMO_USER)} == {1, 2, 3, 4, 5}
    assert len(eng.store.nodes(DEMO_USER, int(Level.PROFILE))) == 3
    assert {n.mode for n in eng.store.nodes(DEMO_USER) if n.level > 1} == {"abstractive"}


def _empty_engine(tmp_path, embedder, **overrides):
    from studio_support import studio_llm

    from timem.config import load_config
    from timem.engine import MemoryEngine
    from timem.store import Store

    cfg = load_config(env={}, db_path=tmp_path / "empty.duckdb", llm_backend="none", **overrides)
    store = Store(cfg.store.db_path, embedder.model_id, embedder.dim)
    return MemoryEngine(cfg, store, embedder, studio_llm(store)[0])


@pytest.fixture()
def empty_engine(tmp_path, embedder):
    eng = _empty_engine(tmp_path, embedder)
    yield eng
    eng.close()


@pytest.fixture()
def empty_abstractive_engine(tmp_path, embedder):
    """An empty store whose L2-L5 the scripted LLM writes."""
    eng = _empty_engine(tmp_path, embedder, **ABSTRACTIVE)
    yield eng
    eng.close()


ZOE_LINE = ('{"user_id": "zoe", "session_id": "s1", "role": "user", "text": "I adopted a dog called Rex.", '
            '"timestamp": "2024-05-01T10:00:00"}\n')


def _upload_zoe(at) -> None:
    """Import one JSONL turn of user "zoe" through the sidebar's upload box."""
    at.radio(key="sb_imp_source").set_value("Upload a file").run()
    at.selectbox(key="sb_imp_fmt").set_value("TiMem JSONL").run()
    at.file_uploader(key="sb_imp_file_0").set_value(("chat.jsonl", ZOE_LINE.encode(), "application/jsonl")).run()
    at.button(key="sb_imp_go").click().run()


def test_import_upload_jsonl_and_a_bad_file(empty_engine):
    at = make_app(empty_engine, user="me")
    _upload_zoe(at)
    assert_clean(at)
    assert empty_engine.store.users() == ["zoe"] and at.session_state[USER_KEY] == "zoe"

    at.file_uploader(key="sb_imp_file_0").set_value(("bad.jsonl", b'{"user_id": "x"}\n', "application/jsonl")).run()
    at.button(key="sb_imp_go").click().run()
    assert not at.exception
    assert any("Import failed" in e.value and "missing field" in e.value for e in at.error)  # actionable words
    assert empty_engine.store.users() == ["zoe"]  # nothing written from the bad file
    at.run()  # the refused upload is no longer listed: a new, empty upload box
    keys = [u.key for u in at.get("file_uploader")]
    assert keys == ["sb_imp_file_1"], keys


def test_a_jsonl_file_under_the_default_locomo_format_is_told_which_format_to_pick(empty_engine, tmp_path):
    """A new-user trial: a .jsonl path with Format left at LoCoMo failed with CLI advice ('use --format jsonl'),
    and the sample ids box came filled with conv-30 (a full LoCoMo file would import one conversation)."""
    chat = tmp_path / "chat.jsonl"
    chat.write_text(ZOE_LINE + ZOE_LINE.replace("10:00", "10:05"), encoding="utf-8")
    at = make_app(empty_engine, user="me")
    at.radio(key="sb_imp_source").set_value("File on this machine").run()
    assert at.selectbox(key="sb_imp_fmt").value == "LoCoMo (JSON)"
    assert at.text_input(key="sb_imp_ids").value == ""  # empty = all samples
    at.text_input(key="sb_imp_path").set_value(str(chat)).run()
    assert any("chat.jsonl ends in .jsonl" in i.value and "TiMem JSONL" in i.value for i in at.sidebar.info)
    at.button(key="sb_imp_go").click().run()
    errors = [e.value for e in at.error]
    assert any("Import failed" in e and "Format 'TiMem JSONL'" in e for e in errors), errors
    assert empty_engine.store.users() == []
    at.selectbox(key="sb_imp_fmt").set_value("TiMem JSONL").run()
    assert not any("ends in .jsonl" in i.value for i in at.sidebar.info)
    at.button(key="sb_imp_go").click().run()
    assert_clean(at)
    assert empty_engine.store.users() == ["zoe"]


def test_import_locomo_conv30_from_a_file_on_this_machine(empty_engine, locomo_dev):
    at = make_app(empty_engine, user="me")
    at.radio(key="sb_imp_source").set_value("File on this machine").run()
    at.selectbox(key="sb_imp_fmt").set_value("LoCoMo (JSON)").run()
    at.text_input(key="sb_imp_path").set_value(str(locomo_dev))
    at.text_input(key="sb_imp_ids").set_value("conv-30").run()
    at.button(key="sb_imp_go").click().run()
    assert_clean(at)
    assert empty_engine.store.users() == ["conv-30"] and at.session_state[USER_KEY] == "conv-30"
    at.run()  # the next interaction keeps the imported user (the user box once switched back to the old one)
    assert at.session_state[USER_KEY] == "conv-30" and at.selectbox(key="sb_user").value == "conv-30"
    # a form ("New user", submitted by Enter or its button): the typed id goes with the submit
    at.text_input(key="sb_new_user").set_value("acme/bob")  # '/' is the service's tenant separator
    at.button(key="sb_new_user_go").click().run()
    assert at.session_state[USER_KEY] == "conv-30" and any("'/' is refused: it separates the tenant" in e.value
                                                            for e in at.sidebar.error)
    at.text_input(key="sb_new_user").set_value("bob")
    at.button(key="sb_new_user_go").click().run()
    assert at.session_state[USER_KEY] == "bob" and at.selectbox(key="sb_user").value == "bob"
    at.selectbox(key="sb_user").set_value("conv-30").run()  # picking a user in the box still switches
    assert at.session_state[USER_KEY] == "conv-30"
    for page in ("timeline", "manifold", "memories"):
        assert_clean(make_app(empty_engine, user="conv-30", page=page))


def test_a_new_user_id_the_memory_service_refuses_is_refused_and_not_switched_to(empty_engine):
    """A trial: "New user" took 'alice smith' and a 200-character id, which the memory service refuses (422). The
    studio now applies the service's rule (:func:`timem.ids.check_service_id`, one validator for both): an error
    saying what a user id may hold, and the current user stays; so does a bad ``?user=`` in the URL."""
    at = make_app(empty_engine, user="me")
    for bad in ("alice smith", "a" * 200, "mia:2", "zoë"):
        at.text_input(key="sb_new_user").set_value(bad)
        at.button(key="sb_new_user_go").click().run()
        errors = [e.value for e in at.sidebar.error]
        assert at.session_state[USER_KEY] == "me", bad
        assert len(errors) == 1 and ID_RULE in errors[0] and "field" not in errors[0], (bad, errors)
        assert not at.exception
    at.text_input(key="sb_new_user").set_value("alice.smith_2")
    at.button(key="sb_new_user_go").click().run()
    assert at.session_state[USER_KEY] == "alice.smith_2" and not at.sidebar.error
    url = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    url.session_state[ENGINE_KEY] = empty_engine
    url.query_params["user"] = "alice smith"
    url.run()
    assert url.session_state[USER_KEY] == "me"
    assert any("'alice smith' is not valid" in e.value and "Opened user 'me' instead" in e.value for e in url.error)


def test_studio_opens_its_own_engine_from_config_and_switches_database(tmp_path, monkeypatch):
    """No injection: settings from TIMEM_* once, the engine per DuckDB file, a broken LLM setup shown, not fatal."""
    import streamlit as st

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TIMEM_DB_PATH", str(tmp_path / "a.duckdb"))
    monkeypatch.setenv("TIMEM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TIMEM_LLM_BACKEND", "openai")  # no key, no base URL: the LLM cannot be set up
    for var in ("TIMEM_OPENAI_API_KEY", "TIMEM_OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "TIMEM_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    st.cache_resource.clear()
    try:
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180).run()
        assert not at.exception, [e.value for e in at.exception]
        assert any("TIMEM_OPENAI_API_KEY" in w.value for w in at.sidebar.warning)  # what to do about it
        assert any("running without an LLM" in c.value for c in at.sidebar.caption)
        assert (tmp_path / "a.duckdb").exists()
        at.text_input(key="sb_db_other").set_value(str(tmp_path / "b.duckdb")).run()
        assert not at.exception, [e.value for e in at.exception]
        assert (tmp_path / "b.duckdb").exists()
        assert str(tmp_path / "b.duckdb") in at.session_state["timem_db_path"]
    finally:
        st.cache_resource.clear()


def test_extractive_mode_from_the_sidebar_without_an_llm(tmp_path, embedder):
    """The sidebar's mode select drives the import; the Memories table and the Timeline hover show the mode."""
    from datetime import UTC

    from timem.config import load_config
    from timem.engine import MemoryEngine
    from timem.store import Store
    from timem.viz import timeline as tl

    # configured abstractive, which needs an LLM: the sidebar's select switches to extractive
    cfg = load_config(env={}, db_path=tmp_path / "none.duckdb", llm_backend="none", **ABSTRACTIVE)
    eng = MemoryEngine(cfg, Store(cfg.store.db_path, embedder.model_id, embedder.dim), embedder, None)
    try:
        at = make_app(eng, user="me")
        assert at.button(key="sb_consolidate").disabled  # abstractive needs an LLM
        at.selectbox(key="sb_mode").set_value("extractive").run()
        assert eng.config.consolidation.consolidation_mode == "extractive"
        assert not at.button(key="sb_consolidate").disabled
        at.button(key="sb_imp_go").click().run()
        assert_clean(at)
        nodes = eng.store.nodes(DEMO_USER)
        assert {int(n.level) for n in nodes} == {1, 2, 3, 4, 5}
        assert {n.mode for n in nodes if n.level > 1} == {"extractive"}
        at.switch_page("timem/studio/views/memories.py").run()
        assert_clean(at)
        table = at.dataframe[0].value
        assert set(table["mode"]) == {"verbatim", "extractive"}
        fig = tl.timeline_figure(tl.timeline_frame(nodes, UTC))
        assert any("mode: extractive" in h for trace in fig.data if trace.hovertext for h in trace.hovertext)
    finally:
        eng.close()


# ---------------------------------------------------------------- issue 15 item 16: a new user's browser walk
def _llm_answering(engine, reply):
    """Swap the engine's LLM for the scripted one, except that chat answers come from ``reply(question)``."""
    from studio_support import answer_request, studio_answer

    from timem.llm.client import LLM
    from timem.llm.fake import ScriptedBackend

    def answer(request):
        asked = answer_request(request)
        return reply(asked) if asked is not None else studio_answer(request)

    engine.llm = engine.consolidator.llm = LLM(ScriptedBackend(answer, model_id=SCRIPTED_MODEL), engine.store)


def test_chat_assistant_answers_stay_the_assistants_and_out_of_the_users_facts(demo_template, tmp_path, embedder):
    """A (wrong) multi-line chat answer is stored as the assistant's turn and never becomes a fact of the
    session memory (extractive: assistant lines are left out of L2+, continuation lines keep their speaker)."""
    eng = open_engine(demo_template, tmp_path, embedder, consolidation_mode="extractive")
    try:
        _llm_answering(eng, lambda q: "Noted.\nYou drink a double espresso with whisky every morning.")
        at = make_app(eng)
        at.chat_input[0].set_value("I switched to green tea and I love my new bike.").run()
        assert_clean(at)
        session_id = at.session_state["chat_sessions"][DEMO_USER]
        turns = eng.store.turns(DEMO_USER, session_id)
        assert [(t.role, t.speaker) for t in turns] == [(Role.USER, "Mia"), (Role.ASSISTANT, "Assistant")]
        at.button(key="chat_end").click().run()
        assert_clean(at)
        l2 = eng.store.nodes(DEMO_USER, int(Level.SESSION), session_id=session_id)[0]
        assert "green tea" in l2.content
        assert "whisky" not in l2.content and "Noted" not in l2.content
    finally:
        eng.close()


def test_chat_abstractive_prompt_says_assistant_lines_are_not_facts(engine):
    _llm_answering(engine, lambda q: "You drink whisky every morning.")
    at = make_app(engine)
    at.chat_input[0].set_value("I switched to green tea.").run()
    at.button(key="chat_end").click().run()
    assert_clean(at)
    prompts = [c.messages[-1].content for c in engine.llm.backend.calls
               if "Segments of this session" in c.messages[-1].content]
    assert prompts and "Lines by Assistant are the chat assistant's replies" in prompts[-1]


def test_chat_message_is_kept_when_the_answer_fails(engine):
    from timem.errors import LLMError

    def fails(question):
        raise LLMError("the endpoint is unreachable; start it or pick another backend")

    _llm_answering(engine, fails)
    at = make_app(engine)
    at.chat_input[0].set_value("Remember that my passport expires in March.").run()
    assert not at.exception
    assert any("recorded, but answering it failed" in e.value for e in at.error)
    session_id = at.session_state["chat_sessions"][DEMO_USER]
    turns = engine.store.turns(DEMO_USER, session_id)
    assert [(t.role, t.text) for t in turns] == [(Role.USER, "Remember that my passport expires in March.")]
    at.run()  # the next run (or another page and back) shows the message and says its answer is missing
    assert not at.exception
    texts = [m.markdown[0].value for m in at.chat_message if m.markdown]
    assert texts == ["Remember that my passport expires in March."]
    assert any("No answer was recorded" in w.value for w in at.warning)


def test_reload_resumes_the_open_chat_session(engine):
    at = make_app(engine)
    at.chat_input[0].set_value("I folded an origami crane today").run()
    session_id = at.session_state["chat_sessions"][DEMO_USER]
    again = make_app(engine)  # a new browser session (reload)
    assert_clean(again)
    assert again.session_state["chat_sessions"][DEMO_USER] == session_id
    assert "I folded an origami crane today" in [m.markdown[0].value for m in again.chat_message if m.markdown]
    again.button(key="chat_end").click().run()
    assert make_app(engine).session_state["chat_sessions"][DEMO_USER] is None  # an ended session is not resumed


def test_recall_inspector_shows_the_selected_stored_trace_by_id(engine):
    at = make_app(engine, page="recall_inspector")
    question = "What did Mia drink before she switched to tea?"
    at.text_input(key="insp_query").set_value(question).run()
    at.toggle(key="insp_compare").set_value(False).run()
    at.number_input(key="insp_A_k").set_value(3).run()
    at.button(key="insp_run").click().run()
    at.number_input(key="insp_A_k").set_value(7).run()
    at.button(key="insp_run").click().run()  # a later run of the same question
    assert_clean(at)
    traces = engine.store.traces(DEMO_USER)
    assert len(traces) == 2
    from timem.recall import load_traces

    first = min(load_traces(engine.store, DEMO_USER), key=lambda t: t.created_at)
    at.radio(key="insp_source").set_value("Past query").run()
    at.selectbox(key="insp_past").set_value(first.trace_id).run()
    assert_clean(at)
    assert any(first.trace_id in c.value for c in at.caption)  # the stored trace itself, by its id
    assert not any("Re-run of this stored trace" in m.value for m in at.markdown)  # not the later run
    assert len(engine.store.traces(DEMO_USER)) == 2  # nothing re-run


def test_bad_database_path_errors_on_that_page_only(tmp_path, monkeypatch):
    """A folder, a file that is not DuckDB, a path under a file: an error in the sidebar, the studio stays
    on its store, and every page (and the next interaction) keeps working."""
    import streamlit as st

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TIMEM_DB_PATH", str(tmp_path / "a.duckdb"))
    monkeypatch.setenv("TIMEM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TIMEM_LLM_BACKEND", "none")
    monkeypatch.delenv("TIMEM_CONFIG", raising=False)
    (tmp_path / "notes.txt").write_text("not a database\n")
    st.cache_resource.clear()
    try:
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180).run()
        assert not at.exception, [e.value for e in at.exception]
        for bad in (tmp_path / "folder", tmp_path / "notes.txt", tmp_path / "notes.txt" / "x.duckdb",
                    tmp_path / "typo" / "dir" / "x.duckdb"):
            if bad.name == "folder":
                bad.mkdir()
            at.text_input(key="sb_db_other").set_value(str(bad)).run()
            assert not at.exception, (bad, [e.value for e in at.exception])
            assert any(f"Cannot open {bad}" in e.value for e in at.sidebar.error), bad
            assert "timem_db_path" not in at.session_state or at.session_state["timem_db_path"] == str(
                tmp_path / "a.duckdb")
            at.run()  # the next interaction: no error left, the store still open
            assert not at.exception and not at.error
            for page in ("chat", "memories"):
                at.switch_page(f"timem/studio/views/{page}.py").run()
                assert not at.exception and not at.error, page
        assert not (tmp_path / "typo").exists()  # a mistyped path creates no folder and no file
    finally:
        st.cache_resource.clear()


def test_import_moves_the_chat_event_time_to_the_imported_conversation(empty_engine):
    from datetime import datetime, timedelta

    at = make_app(empty_engine, user="me")
    assert at.session_state["chat_time_mode"] == "Now"  # nothing stored yet
    at.button(key="sb_imp_go").click().run()  # the bundled demo (April-June 2024)
    assert_clean(at)
    assert at.radio(key="chat_time_mode").value == "Simulated"
    last = empty_engine.store.turns(DEMO_USER)[-1].event_time
    expected = (last + timedelta(hours=1)).astimezone(empty_engine.config.time.tz).replace(tzinfo=None, second=0)
    assert at.session_state["chat_sim_time"] == expected
    assert at.session_state["chat_sim_time"] < datetime(2024, 7, 1)


def test_uploads_are_deleted_and_errors_name_the_uploaded_file(empty_engine, tmp_path, monkeypatch):
    from timem.ui import sidebar

    uploads = tmp_path / "uploads"
    monkeypatch.setattr(sidebar, "UPLOAD_DIR", uploads)
    at = make_app(empty_engine, user="me")
    _upload_zoe(at)
    assert_clean(at)
    assert empty_engine.store.users() == ["zoe"]
    assert not uploads.exists() or not any(uploads.iterdir())  # the staged copy is gone

    at.file_uploader(key="sb_imp_file_0").set_value(("my-bad.jsonl", b'{"user_id": "x"}\n', "application/jsonl")).run()
    at.button(key="sb_imp_go").click().run()
    errors = [e.value for e in at.error]
    assert any("file my-bad.jsonl" in e for e in errors), errors  # the user's own file name
    assert not any(str(uploads) in e or "/tmp" in e for e in errors), errors  # not the temporary copy
    assert not uploads.exists() or not any(uploads.iterdir())

    (uploads / "leftover").mkdir(parents=True)  # e.g. from a process killed mid-import
    (uploads / "leftover" / "old.jsonl").write_text(ZOE_LINE)
    at.switch_page("timem/studio/views/memories.py").run()
    at.text_input(key="mem_erase_user_typed").set_value("zoe").run()
    at.button(key="mem_erase_user").click().run()
    assert not at.exception
    assert not uploads.exists()


def test_timeline_replay_inspects_only_memories_that_exist_at_that_date(engine):
    """Issue 27 #10: moved back in time, the inspect box and the details named memories written later."""
    from timem.ui.timeline import NODE_KEY

    leaf = min(engine.store.nodes(DEMO_USER, int(Level.SEGMENT)), key=lambda n: n.span_end)  # the first memory
    (parent,) = [p for p in engine.store.nodes(DEMO_USER, int(Level.SESSION)) if leaf.id in p.child_ids]
    at = make_app(engine, page="timeline")
    at.selectbox(key=NODE_KEY).set_value(parent.id).run()
    slider = next(s for s in at.slider if s.key.startswith("tl_until_"))
    tz = engine.config.time.tz
    first = leaf.span_end.astimezone(tz).replace(tzinfo=None, second=0, microsecond=0)  # the slider's minimum
    assert first < parent.span_end.astimezone(tz).replace(tzinfo=None)
    slider.set_value(first).run()  # the leaf exists, its session memory not yet
    assert_clean(at)
    box = at.selectbox(key=NODE_KEY)
    labels = " ".join(box.options)
    assert box.value != parent.id and "L2 session" not in labels and "L5 profile" not in labels
    box.set_value(leaf.id).run()
    assert_clean(at)
    assert at.subheader[0].value.startswith("L1 segment")
    assert "tl_up" not in [b.key for b in at.button]  # its parent is not written yet at that date
    assert any("not written yet" in c.value for c in at.caption)


def test_timeline_after_a_user_switch_inspects_the_new_users_memory_and_replays_a_short_chat(engine):
    """A new-user trial switched the sidebar user from a chat user to demo-mia: the inspect box still read the other
    user's memory (its state was dropped, not set, so the browser kept showing it). And the replay slider stepped by
    hours over a chat of six minutes, so its thumb sat at the start while its label said the end."""
    from datetime import UTC, datetime, timedelta

    from timem.ui.timeline import NODE_KEY

    at0 = datetime(2024, 7, 1, 17, 12, tzinfo=UTC)
    engine.add_exchange("sam", "chat-1", "I have a cat named Miso.", "Noted.", at0, user_name="Sam")
    engine.add_exchange("sam", "chat-1", "I play the cello.", "Lovely.", at0 + timedelta(minutes=6), user_name="Sam")
    at = make_app(engine, user="sam", page="timeline")
    assert_clean(at)
    sams = at.session_state[NODE_KEY]
    slider = next(s for s in at.slider if s.key.startswith("tl_until_"))
    assert slider.proto.step == 60_000_000  # a minute (microseconds), not an hour
    at.session_state[USER_KEY] = DEMO_USER
    at.run()
    assert_clean(at)
    box = at.selectbox(key=NODE_KEY)
    assert box.value == at.session_state[NODE_KEY] != sams and engine.node(box.value).user_id == DEMO_USER
    assert box.proto.set_value  # the value is sent to the browser's box, which otherwise keeps showing sam's
