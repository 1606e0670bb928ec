"""LoCoMo importer on the real dev file (tests/data/locomo-dev.json); expectations are computed from the raw JSON."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from conftest import LOCOMO_DEV as LOCOMO

from timem.datasets import load_dataset, load_locomo
from timem.errors import InputError
from timem.models import Role

NY = ZoneInfo("America/New_York")


@pytest.fixture(scope="module")
def raw() -> list[dict[str, Any]]:
    return json.loads(LOCOMO.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def users(raw: list[dict[str, Any]]):
    return load_locomo(LOCOMO, None, NY)


def _session_numbers(conv: dict[str, Any]) -> list[int]:
    return sorted(int(m.group(1)) for k, v in conv.items() if (m := re.fullmatch(r"session_(\d+)", k)) and v)


def test_structure_matches_raw_json(raw, users) -> None:
    assert [u.user_id for u in users] == [item["sample_id"] for item in raw]
    for item, user in zip(raw, users, strict=True):
        conv = item["conversation"]
        nums = _session_numbers(conv)
        assert [s.session_id for s in user.sessions] == [f"S{n}" for n in nums]  # numeric, not lexical order
        assert len(user.sessions) == len(nums)
        assert len(user.turns) == sum(len(conv[f"session_{n}"]) for n in nums)
        assert user.participants == [conv["speaker_a"], conv["speaker_b"]]
        for n, session in zip(nums, user.sessions, strict=True):
            src = conv[f"session_{n}"]
            assert [t.source_ref for t in session.turns] == [t["dia_id"] for t in src]
            assert [t.text for t in session.turns] == [t["text"] for t in src]
            assert [t.speaker for t in session.turns] == [t["speaker"] for t in src]
            assert [t.image_caption for t in session.turns] == [t.get("blip_caption") for t in src]
            assert [t.seq for t in session.turns] == list(range(len(src)))
            assert session.date_label == conv[f"session_{n}_date_time"]
            assert len({t.event_time for t in session.turns}) == 1  # one timestamp per LoCoMo session
        dated = sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)_date_time", k)))
        assert user.meta["sessions_without_turns"] == [n for n in dated if n not in nums]


def test_session_dates_parsed_in_the_given_zone(raw, users) -> None:
    for user in users:
        for session in user.sessions:
            label = session.date_label
            local = datetime.strptime(label, "%I:%M %p on %d %B, %Y").replace(tzinfo=NY)
            assert session.start == local.astimezone(UTC)
            assert session.start.tzinfo == UTC
    # the same file read in UTC gives wall-clock == UTC
    first = load_locomo(LOCOMO, [raw[0]["sample_id"]], ZoneInfo("UTC"))[0].sessions[0]
    assert first.start.replace(tzinfo=None) == datetime.strptime(first.date_label, "%I:%M %p on %d %B, %Y")


def test_roles_and_ids(raw, users) -> None:
    for item, user in zip(raw, users, strict=True):
        a = item["conversation"]["speaker_a"]
        assert all((t.role == Role.USER) == (t.speaker == a) for t in user.turns)
        assert all(t.role in (Role.USER, Role.OTHER) for t in user.turns)
        ids = [t.id for t in user.turns]
        assert len(set(ids)) == len(ids)
        assert all(t.id == f"{user.user_id}:{t.session_id}:{t.seq}" for t in user.turns)
        assert all(t.user_id == user.user_id for t in user.turns)
    again = load_locomo(LOCOMO, None, NY)
    assert [t.id for u in again for t in u.turns] == [t.id for u in users for t in u.turns]


def test_questions(raw, users) -> None:
    for item, user in zip(raw, users, strict=True):
        assert len(user.questions) == len(item["qa"])
        for q, src in zip(user.questions, item["qa"], strict=True):
            assert q.question == src["question"] and q.category == src["category"]
            if src["category"] == 5:
                assert q.answer == str(src["adversarial_answer"]) and q.extra["adversarial"]
            else:
                assert q.answer == str(src["answer"]) and not q.extra["adversarial"]
            joined = [p.strip() for e in src["evidence"] for p in re.split(r"[;,]", e) if p.strip()]
            assert len(q.evidence) == len(joined)
            assert all(re.fullmatch(r"D\d+:\d+", e) for e in q.evidence if e.startswith("D"))
            assert q.question_time is None
        assert len({q.question_id for q in user.questions}) == len(user.questions)


def test_sample_ids_and_single_object(raw, tmp_path: Path) -> None:
    last = raw[-1]["sample_id"]
    (only,) = load_locomo(LOCOMO, [last], NY)
    assert only.user_id == last
    with pytest.raises(InputError) as exc:
        load_locomo(LOCOMO, ["conv-nope"], NY)
    assert "conv-nope" in str(exc.value) and all(item["sample_id"] in str(exc.value) for item in raw)
    single = tmp_path / "one.json"
    single.write_text(json.dumps(raw[0]), encoding="utf-8")
    (u,) = load_dataset(single, "locomo", tz=NY)
    assert u.user_id == raw[0]["sample_id"]


# ---------------------------------------------------------------- malformed input
def _broken(tmp_path: Path, raw: list[dict[str, Any]], mutate) -> Path:
    data = copy.deepcopy(raw)
    mutate(data[0]["conversation"], data[0])
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _expect(path: Path, record: str | None, field: str | None) -> InputError:
    with pytest.raises(InputError) as exc:
        load_locomo(path, None, NY)
    err = exc.value
    assert err.file == str(path) and str(path) in str(err)
    assert err.record == record and err.field == field
    if record:
        assert record in str(err)
    if field:
        assert repr(field) in str(err)
    return err


def test_bad_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[{"sample_id": "x",\n "conversation": {', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_locomo(path, None, NY)
    assert exc.value.file == str(path) and "line 2" in str(exc.value)


def test_missing_text(raw, tmp_path: Path) -> None:
    sid = raw[0]["sample_id"]
    path = _broken(tmp_path, raw, lambda conv, item: conv["session_3"][4].pop("text"))
    _expect(path, f"{sid}/session_3[4]", "text")


def test_wrong_type_and_empty_fields(raw, tmp_path: Path) -> None:
    sid = raw[0]["sample_id"]
    path = _broken(tmp_path, raw, lambda conv, item: conv["session_2"][0].update(speaker=7))
    assert "expected a string" in str(_expect(path, f"{sid}/session_2[0]", "speaker"))
    path = _broken(tmp_path, raw, lambda conv, item: conv["session_1"][1].update(dia_id="  "))
    assert "empty" in str(_expect(path, f"{sid}/session_1[1]", "dia_id"))
    path = _broken(tmp_path, raw, lambda conv, item: conv.update(session_2="not a list"))
    _expect(path, f"{sid}/conversation", "session_2")
    path = _broken(tmp_path, raw, lambda conv, item: item["qa"][3].update(category="two"))
    _expect(path, f"{sid}/qa[3]", "category")


def test_unparseable_and_missing_date(raw, tmp_path: Path) -> None:
    sid = raw[0]["sample_id"]
    path = _broken(tmp_path, raw, lambda conv, item: conv.update(session_1_date_time="sometime in spring"))
    assert "sometime in spring" in str(_expect(path, f"{sid}/conversation", "session_1_date_time"))
    path = _broken(tmp_path, raw, lambda conv, item: conv.pop("session_2_date_time"))
    _expect(path, f"{sid}/conversation", "session_2_date_time")


def test_no_sessions(raw, tmp_path: Path) -> None:
    sid = raw[0]["sample_id"]

    def drop(conv, item):
        for k in [k for k in conv if re.fullmatch(r"session_\d+", k)]:
            del conv[k]
    _expect(_broken(tmp_path, raw, drop), f"{sid}/conversation", "session_1")


def test_error_in_later_conversation_raises_before_returning(raw, tmp_path: Path) -> None:
    data = copy.deepcopy(raw)
    data[-1]["conversation"]["session_1"][0]["text"] = None
    path = tmp_path / "late.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(f"{data[-1]['sample_id']}/session_1[0]")):
        load_locomo(path, None, NY)
    # selecting only the healthy conversation works
    assert [u.user_id for u in load_locomo(path, [data[0]["sample_id"]], NY)] == [data[0]["sample_id"]]


def test_missing_file(tmp_path: Path) -> None:
    """The message names the file once (a new-user trial saw it three times) and says why."""
    missing = tmp_path / "nope.json"
    with pytest.raises(InputError, match="cannot read the file: No such file or directory") as info:
        load_locomo(missing, None, NY)
    assert str(info.value).count(str(missing)) == 1, info.value


def test_a_file_that_is_not_utf8_says_so_with_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes('[{"sample_id": "é"}]'.encode("latin-1"))
    with pytest.raises(InputError, match=r"not UTF-8 \(byte 0xe9 at offset 16\); save it as UTF-8"):
        load_locomo(path, None, NY)


def test_a_jsonl_file_read_as_locomo_says_to_use_format_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text('{"user_id": "u", "text": "hi"}\n{"user_id": "u", "text": "ho"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="--format jsonl"):
        load_dataset(path, "locomo", tz=ZoneInfo("UTC"))
