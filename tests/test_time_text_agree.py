"""A new-user trial: JSONL ingest read a date alone ("2024-01-01") as midnight while the service refused it, saying
"Input should be a valid datetime or date"; a numeric JSONL timestamp said "expected a string, got int" with no
ISO 8601 hint. Both now refuse a date alone and a number, and say what to write (an ISO 8601 example)."""

from __future__ import annotations

import json
from zoneinfo import ZoneInfo

import pytest

from timem.datasets import load_jsonl
from timem.errors import InputError
from timem.service.models import IsoTime
from timem.time_text import time_text_problem

ROW = {"user_id": "zoe", "session_id": "s1", "role": "user", "text": "Hi."}


@pytest.mark.parametrize(("stamp", "says"), [
    ("2024-01-01", "'2024-01-01' is a date without a time of day; write when it was said, ISO 8601 such as "
                   "'2024-01-01T09:00:00+02:00'"),
    (1714640400, "1714640400 is not a time: write ISO 8601 text such as '2024-05-02T09:00:00+02:00'"),
])
def test_jsonl_refuses_a_date_alone_and_a_number_saying_what_to_write(tmp_path, stamp, says):
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({**ROW, "timestamp": stamp}) + "\n")
    with pytest.raises(InputError) as err:
        load_jsonl(path, ZoneInfo("UTC"))
    assert says in str(err.value) and "timestamp" in str(err.value), str(err.value)


def test_jsonl_still_reads_a_time_with_or_without_an_offset(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({**ROW, "timestamp": "2024-01-01T09:00:00"}) + "\n"
                    + json.dumps({**ROW, "timestamp": "2024-01-01T09:05:00+00:00"}) + "\n")
    assert len(load_jsonl(path, ZoneInfo("UTC"))[0].sessions[0].turns) == 2


@pytest.mark.parametrize(("value", "says"), [
    ("2024-01-01", "is a date without a time of day"),
    ("2024-01-01T09:00:00", "has no UTC offset; add one, e.g. '2024-05-02T09:00:00+02:00'"),
    ("soon", "'soon' is not an ISO 8601 time; write e.g. '2024-05-02T09:00:00+02:00'"),
    ("1714640400", "is not an ISO 8601 time"),
])
def test_the_service_says_what_to_write(value, says):
    from pydantic import TypeAdapter, ValidationError

    with pytest.raises(ValidationError) as err:
        TypeAdapter(IsoTime).validate_python(value)
    msg = err.value.errors()[0]["msg"]
    assert says in msg and "valid datetime or date" not in msg, msg


def test_ingest_and_service_agree_on_a_date_alone():
    assert time_text_problem("2024-01-01", offset_needed=False) and time_text_problem("2024-01-01", offset_needed=True)
    assert time_text_problem("2024-01-01T09:00:00", offset_needed=False) is None
    assert time_text_problem("2024-01-01T09:00:00Z", offset_needed=True) is None


def test_mcp_remember_says_the_same_of_a_date_alone():
    from timem.service.mcp_server import _time

    with pytest.raises(InputError, match="event_time '2024-01-01' is a date without a time of day"):
        _time("2024-01-01", "event_time")
    assert _time(" 2024-01-01T09:00:00Z", "event_time").tzinfo is not None
