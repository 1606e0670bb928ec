"""TiMem JSONL format: grouping, time zones, round trip, errors; and load_dataset dispatch."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from conftest import LOCOMO_DEV as LOCOMO

from timem.datasets import load_dataset, load_jsonl, load_locomo, write_jsonl
from timem.errors import InputError
from timem.models import Role

BERLIN = ZoneInfo("Europe/Berlin")

ROWS = [
    {"user_id": "alice", "session_id": "s2", "speaker": "Alice", "role": "user", "text": "Second session",
     "timestamp": "2023-05-09T10:00:00"},
    {"user_id": "bob", "session_id": "s1", "speaker": "user", "text": "Hi, I am Bob",
     "timestamp": "2023-05-01T08:00:00Z"},
    {"user_id": "alice", "session_id": "s1", "role": "user", "speaker": "Alice", "text": "First session",
     "timestamp": "2023-05-08T13:56:00"},
    {"user_id": "alice", "session_id": "s1", "role": "assistant", "text": "Noted.",
     "timestamp": "2023-05-08T13:56:30+02:00", "source_ref": "msg-2"},
    {"user_id": "alice", "session_id": "s2", "speaker": "Carol", "text": "Hello from Carol",
     "timestamp": "2023-05-09T10:01:00", "image_caption": "a photo of a cat"},
]


def _write(tmp_path: Path, rows: list[dict] | list[str], name: str = "chat.jsonl") -> Path:
    path = tmp_path / name
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_grouping_roles_and_zones(tmp_path: Path) -> None:
    users = load_jsonl(_write(tmp_path, ROWS), BERLIN)
    assert [u.user_id for u in users] == ["alice", "bob"]  # order of first appearance
    alice, bob = users
    assert [s.session_id for s in alice.sessions] == ["s1", "s2"]  # by first timestamp, not file order
    s1, s2 = alice.sessions
    assert [t.text for t in s1.turns] == ["First session", "Noted."]
    assert s1.turns[0].event_time == datetime(2023, 5, 8, 11, 56, tzinfo=UTC)  # naive = Berlin (CEST)
    assert s1.turns[1].event_time == datetime(2023, 5, 8, 11, 56, 30, tzinfo=UTC)
    t = s1.turns[1]
    assert (t.speaker, t.role, t.source_ref) == ("assistant", Role.ASSISTANT, "msg-2")
    assert (s2.turns[1].speaker, s2.turns[1].role, s2.turns[1].image_caption) == ("Carol", Role.OTHER,
                                                                                   "a photo of a cat")
    assert bob.turns[0].role == Role.USER and bob.turns[0].event_time == datetime(2023, 5, 1, 8, tzinfo=UTC)
    assert [t.id for t in alice.turns] == ["alice:s1:0", "alice:s1:1", "alice:s2:0", "alice:s2:1"]
    assert alice.participants == ["Alice", "assistant", "Carol"]
    assert s1.date_label == "2023-05-08T13:56:00" and alice.questions == []


def test_round_trip(tmp_path: Path) -> None:
    users = load_jsonl(_write(tmp_path, ROWS), BERLIN)
    out = tmp_path / "out.jsonl"
    assert write_jsonl(users, out) == len(ROWS)
    again = load_dataset(out, "jsonl", tz=ZoneInfo("Asia/Tokyo"))  # offsets are written, so the zone is moot
    _same(users, again)


def test_round_trip_from_locomo(tmp_path: Path) -> None:
    users = load_locomo(LOCOMO, None, BERLIN)
    out = tmp_path / "locomo.jsonl"
    write_jsonl(users, out)
    again = load_jsonl(out, BERLIN)
    _same(users, again)


def _same(a, b) -> None:
    assert [u.user_id for u in a] == [u.user_id for u in b]
    for ua, ub in zip(a, b, strict=True):
        assert [s.session_id for s in ua.sessions] == [s.session_id for s in ub.sessions]

        def key(t):
            return t.id, t.speaker, t.role, t.text, t.event_time, t.source_ref, t.image_caption

        assert [key(t) for t in ua.turns] == [key(t) for t in ub.turns]


@pytest.mark.parametrize("bad_line, field, message", [
    ('{"user_id": "u", "session_id": "s", "role": "user", "text": "hi", "timestamp": ', None, "invalid JSON"),
    ('["not", "an", "object"]', None, "expected a JSON object"),
    ('{"session_id": "s", "role": "user", "text": "hi", "timestamp": "2023-05-08T10:00"}',
     "user_id", "missing"),
    ('{"user_id": "u", "session_id": "s", "role": "user", "text": "  ", "timestamp": "2023-05-08T10:00"}',
     "text", "empty"),
    ('{"user_id": 5, "session_id": "s", "role": "user", "text": "hi", "timestamp": "2023-05-08T10:00"}',
     "user_id", "expected a string"),
    ('{"user_id": "u", "session_id": "s", "text": "hi", "timestamp": "2023-05-08T10:00"}', "role", "missing"),
    ('{"user_id": "u", "session_id": "s", "role": "bot", "text": "hi", "timestamp": "2023-05-08T10:00"}',
     "role", "unknown role"),
    ('{"user_id": "u", "session_id": "s", "role": "user", "text": "hi", "timestamp": "8 May 2023"}',
     "timestamp", "unparseable"),
    ('{"user_id": "u", "session_id": "s", "role": "user", "text": "hi", "timestamp": "2023-05-08T10:00", '
     '"image_caption": 3}', "image_caption", "expected a string"),
    ('{"user_id": "u", "session_id": "a", "role": "user", "text": "hi", "timestamp": "2023-05-08T09:00"}',
     "timestamp", "earlier than the previous turn"),
])
def test_errors_name_file_line_and_field(tmp_path: Path, bad_line: str, field: str | None,
                                        message: str) -> None:
    good = json.dumps({"user_id": "u", "session_id": "a", "role": "user", "text": "ok",
                       "timestamp": "2023-05-08T09:30"})
    path = _write(tmp_path, [good, "", bad_line])  # the bad record is on line 3
    with pytest.raises(InputError) as exc:
        load_jsonl(path, BERLIN)
    err = exc.value
    assert (err.file, err.record, err.field) == (str(path), "line 3", field)
    assert message in str(err) and str(path) in str(err) and "line 3" in str(err)


def test_empty_file_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no turns"):
        load_jsonl(_write(tmp_path, ["", "   "]), BERLIN)
    with pytest.raises(InputError, match="cannot read"):
        load_jsonl(tmp_path / "missing.jsonl", BERLIN)


def test_load_dataset_rejects_bad_options(tmp_path: Path) -> None:
    path = _write(tmp_path, ROWS)
    with pytest.raises(InputError, match="unknown dataset format"):
        load_dataset(path, "csv", tz=BERLIN)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="sample_ids"):
        load_dataset(path, "jsonl", sample_ids=["x"], tz=BERLIN)
    with pytest.raises(InputError, match="limit"):
        load_dataset(path, "jsonl", limit=2, tz=BERLIN)


@pytest.mark.parametrize(("name", "fmt"), [("locomo_tiny.json", "locomo"), ("longmemeval_tiny.json", "longmemeval")])
def test_a_dataset_file_read_as_jsonl_names_its_format(tmp_path: Path, name: str, fmt: str) -> None:
    """A LoCoMo (or LongMemEval) file read as JSONL said only "invalid JSON ... line 1"; now it says which
    --format reads it: pretty-printed, on one line, or one conversation per line."""
    fixture = Path(__file__).parent / "fixtures" / name
    data = json.loads(fixture.read_text(encoding="utf-8"))
    one_line = tmp_path / "one-line.json"
    one_line.write_text(json.dumps(data), encoding="utf-8")
    per_line = _write(tmp_path, data, "per-line.jsonl")
    for path in (fixture, one_line, per_line):
        with pytest.raises(InputError, match=f"read it with --format {fmt}") as exc:
            load_dataset(path, "jsonl", tz=BERLIN)
        assert "\n" not in str(exc.value)


def test_a_bad_first_turn_is_not_taken_for_a_dataset(tmp_path: Path) -> None:
    path = _write(tmp_path, [{**ROWS[0], "sample_id": "conv-1", "timestamp": "soon"}])
    with pytest.raises(InputError, match="unknown field 'sample_id'") as exc:  # a turn has no other key
        load_jsonl(path, BERLIN)
    assert "--format" not in str(exc.value)
    path = _write(tmp_path, [{**ROWS[0], "timestamp": "soon"}])
    with pytest.raises(InputError, match="unparseable timestamp") as exc:
        load_jsonl(path, BERLIN)
    assert "--format" not in str(exc.value)
    path = _write(tmp_path, ["[1, 2]"])
    with pytest.raises(InputError, match="expected a JSON object, got list"):
        load_jsonl(path, BERLIN)


def test_a_session_running_past_a_day_is_refused_naming_both_lines(tmp_path):
    """A session continued weeks later was imported silently, and its day's, week's and month's memories
    stretched over the gap (only `timem check` noticed)."""
    rows = [("a", "2024-05-02T09:00:00"), ("b", "2024-05-09T09:00:00"), ("a", "2024-06-20T09:00:00")]
    path = tmp_path / "zed.jsonl"
    path.write_text("".join(json.dumps({"user_id": "zed", "session_id": s, "role": "user", "text": f"Note {i}.",
                                        "timestamp": ts}) + "\n" for i, (s, ts) in enumerate(rows)))
    with pytest.raises(InputError, match=r"more than a day after the first turn of session 'a' .*line 1.*own "
                                         r"session_id") as err:
        load_jsonl(path, UTC)
    assert "line 3" in str(err.value)
    path.write_text(path.read_text().replace("2024-06-20T09:00:00", "2024-05-03T08:59:00"))  # within the day
    assert [len(s.turns) for s in load_jsonl(path, UTC)[0].sessions] == [2, 1]
