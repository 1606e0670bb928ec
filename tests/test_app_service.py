"""The studio connected to a live memory service (``timem studio --service URL --key KEY``), every page in AppTest:
the working pages show the service's data and write through it; the others show one line and no exception; the
studio process opens no DuckDB file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
import streamlit as st
from service_support import two_tenants
from streamlit.testing.v1 import AppTest
from studio_support import REPO, assert_clean, studio_app

from timem.ids import ID_RULE
from timem.models import NodeStatus, Role
from timem.service.client import ServiceClient
from timem.ui.state import USER_KEY

T0 = datetime(2024, 5, 2, 9, 0, tzinfo=UTC)
USER = "mia"
CHAT = "chat-20240504-0900-ab12"  #: an open studio chat session: the Chat page resumes it
MESSAGES = ["I live in Lisbon and I adopted a grey cat called Pixel.", "My sister Ana is a doctor in Porto.",
            "I drink green tea every morning now."]


@pytest.fixture(scope="module")
def embedder(fake_embedder):
    return fake_embedder


@pytest.fixture(scope="module")
def svc(tmp_path_factory, embedder):
    with two_tenants(tmp_path_factory.mktemp("svc-studio"), embedder) as (base, keys):
        yield base, keys


@pytest.fixture()
def client(svc):
    """The acme tenant with a fresh user ``mia`` (two sessions, the first ended) and a stored recall trace."""
    base, keys = svc
    c = ServiceClient(base, keys["acme"])
    if USER in c.users():
        c.erase_user(USER)
    for i, text in enumerate(MESSAGES):
        c.chat_turn(USER, "s1", text, T0 + timedelta(minutes=10 * i), user_name="Mia")
    c.end_session(USER, "s1")
    c.chat_turn(USER, CHAT, "I started swimming on Tuesdays.", T0 + timedelta(days=2), user_name="Mia")
    yield c
    c.close()


def make_app(client, page: str | None = None, user: str = USER) -> AppTest:
    return studio_app(client, user, page, timeout=120)


def infos(at: AppTest) -> list[str]:
    return [i.value for i in at.info] + [i.value for i in at.sidebar.info]


@pytest.mark.parametrize("page", ["chat", "timeline", "recall_inspector", "memories"])
def test_working_pages_show_the_services_data_and_say_where_it_is(client, page):
    at = make_app(client, page)
    assert_clean(at)
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert f"Connected to `{client.url}` as tenant `acme`" in captions
    assert f"L1 {len(MESSAGES) + 1}" in captions  # the messages (no LLM: no reply is stored), from the service
    assert not any("DuckDB file" in s.label for s in at.sidebar.selectbox)  # no database picker
    n = len(client.nodes(USER))
    if page == "chat":  # the open chat session, read from the service
        assert [m.markdown[0].value for m in at.chat_message][0] == "I started swimming on Tuesdays."
        assert any(f"**session** `{CHAT}`" in m.value for m in at.markdown)
    if page == "timeline":
        assert len(at.selectbox(key="tl_node").options) == n  # the memories to inspect, from the service
    if page == "recall_inspector":  # the stored traces, newest first
        assert at.selectbox(key="insp_past").options[0].endswith("I started swimming on Tuesdays.")
    if page == "memories":
        assert any(c.value == f"{n} of {n} active memories" for c in at.caption)


@pytest.mark.parametrize("page, line", [("manifold", "The manifold"), ("timeline", "The segment tree")])
def test_pages_that_need_a_local_file_say_so_in_one_line(client, page, line):
    at = make_app(client, page)
    if page == "timeline":
        at.toggle(key="tl_segtree").set_value(True).run()
    assert_clean(at)
    shown = [i for i in infos(at) if i.startswith(line)]
    assert len(shown) == 1 and "not available when the studio is connected to a memory service" in shown[0]
    assert "timem studio --db FILE" in shown[0]
    sidebar = " ".join(c.value for c in at.sidebar.caption)  # quiet lines there
    assert not at.sidebar.info
    assert "Importing a file is not available" in sidebar and "Changing the mode is not available" in sidebar
    assert "Switching databases is not available" in sidebar


def test_chat_over_the_service_stores_the_turns_and_shows_the_recalled_context(client):
    at = make_app(client)
    at.chat_input[0].set_value("Where does my sister live?").run()
    assert_clean(at)
    session_id = at.session_state["chat_sessions"][USER]
    turns = client.turns(USER, session_id)
    assert [t.text for t in turns if t.role == Role.USER][-1] == "Where does my sister live?"
    assert turns[-1].role == Role.USER  # no LLM on the service: its note is shown, not stored
    assert client.traces(USER)[0].query == "Where does my sister live?"
    assert any(e.label.startswith("Recall trace") for e in at.expander)
    assert any("Porto" in c.value for c in at.code)  # the recalled context, without an LLM on the service
    at.button(key="chat_end").click().run()
    assert_clean(at)
    assert next(s for s in client.sessions(USER) if s.session_id == session_id).ended


def test_a_new_user_id_is_checked_by_the_services_own_rule_before_the_studio_switches(svc, client):
    """A trial: over a service, "New user" took 'alice smith' and a 200-character id, and every later request for
    that user failed (422). The studio applies the service's rule (:func:`timem.ids.check_service_id`) first: the
    same ids the service refuses are refused in the sidebar with its words, and the user stays."""
    base, keys = svc
    at = make_app(client)
    for bad in ("alice smith", "a" * 200):
        sent = httpx.get(f"{base}/v1/users/{bad}/memories", headers={"Authorization": f"Bearer {keys['acme']}"})
        assert sent.status_code == 422 and ID_RULE in sent.text, (bad, sent.text)  # the service's own verdict
        at.text_input(key="sb_new_user").set_value(bad)
        at.button(key="sb_new_user_go").click().run()
        assert at.session_state[USER_KEY] == USER, bad
        errors = [e.value for e in at.sidebar.error]
        assert len(errors) == 1 and errors[0].startswith("user id ") and ID_RULE in errors[0], (bad, errors)
        assert not at.exception
    at.text_input(key="sb_new_user").set_value("alice.smith")
    at.button(key="sb_new_user_go").click().run()
    assert at.session_state[USER_KEY] == "alice.smith" and not at.sidebar.error


def test_recall_inspector_runs_a_query_on_the_service(client):
    at = make_app(client, "recall_inspector")
    at.radio(key="insp_source").set_value("New query").run()
    at.text_input(key="insp_query").set_value("Which pet did Mia adopt?").run()
    assert "Recalling from another database is not available" in " ".join(infos(at))
    at.button(key="insp_run").click().run()
    assert_clean(at)
    assert any("Pixel" in c.value for c in at.code)
    assert client.traces(USER)[0].query == "Which pet did Mia adopt?"  # A is stored, as on a local file


def test_memories_edit_delete_restore_and_forget_items_over_the_service(client):
    at = make_app(client, "memories")
    target = next(n for n in client.nodes(USER, 1) if "Pixel" in n.content)
    at.multiselect(key="mem_selected").set_value([target.id]).run()
    at.button(key="mem_soft").click().run()
    assert_clean(at)
    assert client.nodes(USER, ids=[target.id], status=None)[0].status == NodeStatus.DELETED
    at.button(key="mem_undo_btn").click().run()
    assert_clean(at)
    assert client.nodes(USER, ids=[target.id], status=None)[0].status == NodeStatus.ACTIVE
    at.multiselect(key="mem_selected").set_value([target.id]).run()
    at.text_area(key=f"mem_edit_text_{target.id}").set_value("Mia: I adopted a black cat called Pixel.")
    at.button(key=f"FormSubmitter:mem_edit_{target.id}-Save edit").click().run()
    assert_clean(at)
    assert "black cat" in client.nodes(USER, ids=[target.id])[0].content
    at.radio(key="mem_view").set_value("Facts").run()
    assert_clean(at)
    city = next(i for i in client.memory_items(USER) if i.value == "Lisbon")
    at.multiselect(key="facts_selected").set_value([city.id]).run()
    at.button(key="facts_forget").click().run()  # the preview, over the service
    assert_clean(at)
    assert city.id in {i.id for i in client.memory_items(USER)}
    at.button(key="facts_forget_yes").click().run()
    assert_clean(at)
    assert city.id not in {i.id for i in client.memory_items(USER)}
    assert all(n.status != NodeStatus.ACTIVE for n in client.nodes(USER, ids=city.source_ids, status=None))


PAGES = (None, "timeline", "recall_inspector", "manifold", "memories")  #: None: the default page (Chat)


def _from_settings(page: str | None) -> AppTest:
    """The studio run once as `timem studio --service` starts it: nothing injected, settings from TIMEM_*."""
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.session_state[USER_KEY] = USER
    if page:
        at.switch_page(f"timem/studio/views/{page}.py")
    return at.run()


def test_studio_from_settings_opens_no_duckdb_file(svc, client, tmp_path, monkeypatch):
    """No injection: TIMEM_SERVICE_URL / TIMEM_SERVICE_KEY as `timem studio --service` sets them; the configured
    DuckDB path is never created, and a service that stops answering is one error line in the sidebar."""
    base, keys = svc
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "never.duckdb"
    for var, value in {"TIMEM_DB_PATH": str(db), "TIMEM_SERVICE_URL": base, "TIMEM_SERVICE_KEY": keys["acme"],
                       "TIMEM_LLM_BACKEND": "none", "TIMEM_CACHE_DIR": str(tmp_path / "cache")}.items():
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("TIMEM_CONFIG", raising=False)
    st.cache_resource.clear()
    try:
        for page in PAGES:
            at = _from_settings(page)
            assert not at.exception, [e.value for e in at.exception]
            assert any(f"Connected to `{base}` as tenant `acme`" in c.value for c in at.sidebar.caption)
        assert not db.exists() and not list(tmp_path.glob("*.duckdb*"))
        st.cache_resource.clear()
        monkeypatch.setenv("TIMEM_SERVICE_KEY", "tmk_00000000_wrong")
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120).run()
        assert not at.exception, [e.value for e in at.exception]
        assert any("refused the API key" in e.value for e in at.sidebar.error)
        assert "tmk_00000000_wrong" not in " ".join(e.value for e in at.sidebar.error)
        assert not db.exists()
    finally:
        st.cache_resource.clear()


def test_a_service_that_stops_after_the_studio_connected_is_one_line_on_every_page(embedder, tmp_path, monkeypatch):
    """The client is connected once per server process; when the service then stopped, every page was a
    ServiceUnreachableError traceback without the sidebar."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TIMEM_CONFIG", raising=False)
    st.cache_resource.clear()
    try:
        (tmp_path / "svc").mkdir()
        with two_tenants(tmp_path / "svc", embedder) as (base, keys):
            for var, value in {"TIMEM_SERVICE_URL": base, "TIMEM_SERVICE_KEY": keys["acme"],
                               "TIMEM_LLM_BACKEND": "none", "TIMEM_CACHE_DIR": str(tmp_path / "cache")}.items():
                monkeypatch.setenv(var, value)
            ServiceClient(base, keys["acme"]).chat_turn(USER, "s1", MESSAGES[0], T0, user_name="Mia")
            assert_clean(_from_settings(None))
        for page in PAGES:
            at = _from_settings(page)
            assert not at.exception, (page, [e.value for e in at.exception])
            assert any("not reachable" in e.value for e in at.sidebar.error), (page, at.sidebar.error)
    finally:
        st.cache_resource.clear()
