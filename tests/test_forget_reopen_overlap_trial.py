"""A new-user trial with no LLM: Bob's home cities went Manchester -> Bristol -> 上海 -> Bristol -> Cardiff; ``timem
forget "I live in Bristol"`` left Manchester, 上海 and Cardiff all holding "now" (and, over the service, two current
home cities after forgetting one in the middle). A value that holds again after a forget ends where the next value
that stays begins (:func:`timem.item_holding.as_held`); only the last one is open, and the preview says until when.
``timem check`` finds two open items of one single-valued attribute. Real DuckDB file, the rules, no LLM."""

from __future__ import annotations

from datetime import timedelta

import pytest
from service_support import client, engine_factory, running
from trial_support import T0, fixtures

from timem.models import MemoryItem
from timem.service import KeyFile
from timem.store.check import check_store

EXCHANGES = [
    ("I live in Manchester.", "Nice."),
    ("I work as a nurse.", "Great."),
    ("I moved to Bristol.", "Lovely city."),
    ("I work as a teacher now.", "Good luck."),
    ("我住在上海。", "好的。"),
    ("I moved back to Bristol.", "Welcome back."),
    ("I've moved to Cardiff yesterday.", "Exciting!"),
    ("I like jazz.", "Me too."),
    ("I like tennis.", "Fun."),
    ("I work as a baker now.", "Tasty."),
]

embedder, eng = fixtures(EXCHANGES)


def _cities(eng) -> list[MemoryItem]:
    return sorted((i for i in eng.memory_items("mia") if i.attribute == "home city"), key=lambda i: i.valid_from)


def _no_overlap(items: list[MemoryItem]) -> None:
    """At most one open, and each ends where (or before) the next begins."""
    assert sum(i.is_open for i in items) <= 1, [(i.value, i.valid_to) for i in items]
    for a, b in zip(items, items[1:], strict=False):
        assert a.valid_to is not None and a.valid_to <= b.valid_from, [(i.value, i.valid_from, i.valid_to)
                                                                      for i in items]


def test_the_history_is_as_said(eng):
    assert [i.value for i in _cities(eng)] == ["Manchester", "Bristol", "上海", "Bristol", "Cardiff"]
    _no_overlap(_cities(eng))


def test_forgetting_a_value_twice_in_the_middle_leaves_one_current_city(eng):
    plan = eng.forget("mia", "I live in Bristol")
    assert sorted(i.value for i in plan.items) == ["Bristol", "Bristol"], plan.describe()
    text = plan.describe()
    shanghai_from = next(i.valid_from for i in _cities(eng) if i.value == "上海")
    cardiff_from = next(i.valid_from for i in _cities(eng) if i.value == "Cardiff")
    assert f"holds again until {shanghai_from:%Y-%m-%d}: Mia's home city: Manchester" in text, text
    assert f"holds again until {cardiff_from:%Y-%m-%d}: Mia's home city: 上海" in text, text

    eng.forget("mia", "I live in Bristol", confirm=True)
    cities = _cities(eng)
    assert [(i.value, i.valid_to) for i in cities] == [
        ("Manchester", shanghai_from), ("上海", cardiff_from), ("Cardiff", None)]
    _no_overlap(cities)
    assert {i.value for i in eng.memory_items("mia") if i.attribute == "likes"} == {"jazz", "tennis"}
    assert not check_store(eng.store, eng.config, "mia")


def test_forgetting_the_middle_job_leaves_one_current_job(eng):
    eng.forget("mia", "I work as a teacher", confirm=True)
    jobs = sorted((i for i in eng.memory_items("mia") if i.attribute == "job"), key=lambda i: i.valid_from)
    assert [i.value for i in jobs] == ["nurse", "baker"]
    _no_overlap(jobs)
    assert jobs[0].valid_to == jobs[1].valid_from


def test_forgetting_the_chinese_value_ends_manchester_at_the_next_bristol(eng):
    eng.forget("mia", "上海", confirm=True)
    cities = _cities(eng)
    assert [i.value for i in cities] == ["Manchester", "Bristol", "Bristol", "Cardiff"]
    _no_overlap(cities)
    assert cities[1].valid_to == cities[2].valid_from  # the first Bristol holds again until the second begins


def test_a_new_statement_after_the_forget_ends_the_value_that_held_again(eng):
    eng.forget("mia", "I live in Cardiff", confirm=True)
    eng.remember("mia", "s-late", "I live in Leeds.", T0 + timedelta(days=20), reply="Ok.", user_name="Mia")
    eng.extract_items(["mia"])
    cities = _cities(eng)
    assert [i.value for i in cities][-2:] == ["Bristol", "Leeds"]
    _no_overlap(cities)


def test_check_finds_two_open_items_of_one_single_valued_attribute(eng):
    manchester = _cities(eng)[0]
    eng.store.update_item(manchester.id, valid_to=None, superseded_by=None)  # as a faulty write would leave it
    found = [v for v in check_store(eng.store, eng.config, "mia") if v.rule == "item-open"]
    assert len(found) == 1 and "home city" in found[0].detail and "Manchester" in found[0].detail, found
    assert not [v for v in check_store(eng.store, eng.config, "mia") if "likes" in v.detail]


def test_recall_ends_the_value_that_holds_again(eng):
    """Asked of a day when Manchester held, recall gives it as ended when 上海 began, not as holding now."""
    eng.forget("mia", "I live in Bristol", confirm=True)
    context = eng.recall("mia", "Where did I live on 4 May 2024?", question_time=T0 + timedelta(days=30)).context
    cities = [line for line in context.splitlines() if "home city" in line]
    assert cities and "valid 2024-05-01 – 2024-05-05] Mia's home city: Manchester" in cities[0], context
    now = eng.recall("mia", "Where do I live?", question_time=T0 + timedelta(days=30)).context
    assert [line for line in now.splitlines() if "home city" in line and "– now]" in line] == [
        line for line in now.splitlines() if "home city: Cardiff" in line], now


def test_the_facts_view_ends_the_value_that_holds_again(eng):
    from datetime import UTC

    from timem.ui.facts import facts_table

    eng.forget("mia", "I live in Bristol", confirm=True)
    everything = eng.memory_items("mia", status=None, reopen=False)
    table = facts_table(everything, UTC, T0 + timedelta(days=30), None)
    valid = dict(zip(table["value"], table["valid"], strict=True))
    assert valid["Manchester"] == "2024-05-01 – 2024-05-05" and valid["Cardiff"].endswith("– now"), valid


@pytest.fixture()
def service(tmp_path, embedder):
    kf = KeyFile(tmp_path / "svc.duckdb.keys.json")
    key = kf.add("acme")
    factory = engine_factory(tmp_path / "svc.duckdb", embedder, answer=lambda req: "Noted.", memory_extractor="rules")
    with running(factory, kf) as base, client(base, key) as c:
        yield c


def test_over_the_service_forgetting_vienna_leaves_one_current_home_city(service):
    """The trial over the service: Berlin -> Vienna -> 杭州 -> Vienna, then forget "Vienna": Berlin and 杭州 were both
    current in ``GET …/items``."""
    for k, line in enumerate(["I live in Berlin.", "I moved to Vienna.", "我住在杭州。", "I moved back to Vienna."]):
        r = service.post("/v1/users/kai/turns", json={"session_id": f"s{k}", "message": line, "reply": "Noted.",
                                                      "event_time": f"2024-05-0{k + 1}T09:00:00+00:00"})
        assert r.status_code == 200, r.text
    done = service.post("/v1/users/kai/forget", json={"text": "Vienna", "confirm": True}).json()
    assert done["forgotten"] is True and {i["value"] for i in done["reopened"]} == {"Berlin", "杭州"}, done
    cities = [i for i in service.get("/v1/users/kai/items").json()["items"] if i["attribute"] == "home city"]
    assert [(i["value"], i["valid_to"] is None) for i in cities] == [("Berlin", False), ("杭州", True)], cities
    hangzhou = next(i for i in cities if i["value"] == "杭州")
    assert next(i for i in cities if i["value"] == "Berlin")["valid_to"] == hangzhou["valid_from"]


def test_a_hard_erase_in_the_middle_leaves_one_current_city(eng):
    """A hard erase deleted the Bristol rows and cleared the end of what each had superseded: Manchester and 上海
    both open beside Cardiff in the stored rows (`timem check`: item-open). What an erased value superseded now
    holds until the first value after it that stays."""
    from timem import editing

    shanghai_from = next(i.valid_from for i in _cities(eng) if i.value == "上海")
    cardiff_from = next(i.valid_from for i in _cities(eng) if i.value == "Cardiff")
    bristol = [n.id for n in eng.store.nodes("mia", 1) if "Bristol" in n.content]
    assert len(bristol) == 2
    editing.erase(eng.store, eng.consolidator, bristol)
    rows = sorted((i for i in eng.store.items("mia") if i.attribute == "home city"), key=lambda i: i.valid_from)
    assert [(i.value, i.valid_to) for i in rows] == [
        ("Manchester", shanghai_from), ("上海", cardiff_from), ("Cardiff", None)]  # as stored, not only as read
    assert not check_store(eng.store, eng.config, "mia")
