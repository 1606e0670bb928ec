"""Whom a memory item is about (a new-user trial, no LLM): written through the library (``timem.open(path).remember``)
the items read "User's likes: jazz", through a JSONL file without speakers "user's likes: jazz", and the docs show
"Mia's". An item names the speaker's name when the conversation gives one, else the user id as written; the month's
profile lists those items still."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import timem
from timem.datasets import load_dataset

T0 = datetime(2024, 3, 18, 19, tzinfo=UTC)


def _labels(m, user: str) -> list[str]:
    return sorted(i.label() for i in m.memory_items(user))


def test_the_library_names_the_user_id_or_the_name_given(tmp_path, monkeypatch):
    monkeypatch.setenv("TIMEM_CACHE_DIR", str(tmp_path / "cache"))
    with timem.open(str(tmp_path / "m.duckdb"), llm_backend="none") as m:
        m.remember("Mia_R", "s1", "I love jazz.", T0)
        m.remember("ana", "s1", "I love techno.", T0, user_name="Ana")
        assert _labels(m, "Mia_R") == ["Mia_R's likes: jazz"]
        assert _labels(m, "ana") == ["Ana's likes: techno"]


def test_jsonl_without_speakers_names_the_user_id_and_the_profile_lists_it(tmp_path, monkeypatch):
    monkeypatch.setenv("TIMEM_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "c.jsonl"
    rows = [{"user_id": "zoe", "session_id": "s1", "role": "user", "text": "I love jazz.",
             "timestamp": "2024-03-18T19:00:00"},
            {"user_id": "kim", "session_id": "s1", "speaker": "Kim", "role": "user", "text": "I love soul.",
             "timestamp": "2024-03-18T19:00:00"}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with timem.open(str(tmp_path / "j.duckdb"), llm_backend="none") as m:
        eng = m.engine if hasattr(m, "engine") else m
        cfg = eng.config
        eng.ingest(load_dataset(f, "jsonl", tz=cfg.time.tz, user_tz=cfg.time.user_tz), flush=True)
        assert _labels(m, "zoe") == ["zoe's likes: jazz"]
        assert _labels(m, "kim") == ["Kim's likes: soul"]
        profiles = [n.content for n in eng.nodes(user_id="zoe", level=5)]
        assert profiles and any("zoe's likes: jazz" in p for p in profiles), profiles


def test_a_file_written_before_keeps_superseding_its_placeholder_items(tmp_path, monkeypatch):
    """Items written before the subject rule say "User's …": a new statement of the same person still closes them."""
    from timem.memory import writer

    monkeypatch.setenv("TIMEM_CACHE_DIR", str(tmp_path / "cache"))
    with timem.open(str(tmp_path / "m.duckdb"), llm_backend="none") as m:
        with monkeypatch.context() as old:
            old.setattr(writer, "item_subject", lambda t: t.speaker)  # the rule before
            m.remember("mia", "s1", "I live in Lisbon.", T0)
        assert _labels(m, "mia") == ["User's home city: Lisbon"]
        m.remember("mia", "s2", "I moved to Porto.", T0.replace(month=5))
        held = sorted(i.label() for i in m.memory_items("mia") if i.is_open)
        assert held == ["mia's home city: Porto"]  # the old value is closed, not open beside it


def test_a_service_user_is_named_without_its_tenant():
    from timem.item_values import item_subject
    from timem.models import Role, Turn

    t = Turn(id="acme/mia:s1:0", user_id="acme/mia", session_id="s1", seq=0, speaker="User", role=Role.USER,
             text="I love jazz.", event_time=T0)
    assert item_subject(t) == "mia"


def test_a_new_occupation_ends_the_employer_stated_with_the_old_one(tmp_path, monkeypatch):
    """A second new-user trial: after "I'm now working as a nurse" the bakery was still the employer "now"."""
    monkeypatch.setenv("TIMEM_CACHE_DIR", str(tmp_path / "cache"))
    with timem.open(str(tmp_path / "m.duckdb"), llm_backend="none") as m:
        m.remember("lena", "s1", "I work at Acme Studio as a designer.", T0, user_name="Lena")
        m.remember("lena", "s2", "I'm now a senior designer, what a year.", T0.replace(month=4), user_name="Lena")
        held = sorted(i.label() for i in m.memory_items("lena") if i.is_open)
        assert "Lena's employer: Acme Studio" in held, held  # a promotion keeps the employer
        m.remember("lena", "s3", "I work at Kruste Bakery as a baker.", T0.replace(month=5), user_name="Lena")
        m.remember("lena", "s4", "I'm now working as a nurse.", T0.replace(month=6), user_name="Lena")
        held = sorted(i.label() for i in m.memory_items("lena") if i.is_open)
        assert held == ["Lena's job: nurse"], held
        ended = {i.value: i.valid_to for i in m.memory_items("lena") if i.attribute == "employer"}
        assert ended["Kruste Bakery"] is not None and ended["Kruste Bakery"].month == 6, ended
