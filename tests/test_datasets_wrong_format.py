"""A new-user trial: `timem ingest locomo-dev.json --format longmemeval` said "missing field … 'question_id'", while
`--format jsonl` on the same file said "this is a LoCoMo file … use --format locomo". Every reader now names the
format a file recognisably holds."""

from __future__ import annotations

import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from timem.datasets import load_dataset
from timem.errors import InputError

LONGMEMEVAL = Path(__file__).parent / "fixtures" / "longmemeval_tiny.json"
UTCZ = ZoneInfo("UTC")


def _jsonl_file(tmp_path: Path, lines: int) -> Path:
    path = tmp_path / "chat.json"
    path.write_text("".join(json.dumps({"user_id": "zoe", "session_id": "s1", "role": "user", "text": f"hi {k}",
                                        "timestamp": "2024-05-02T09:00:00"}) + "\n" for k in range(lines)))
    return path


@pytest.mark.parametrize(("fmt", "file", "holds"), [
    ("longmemeval", "locomo", "this is a LoCoMo file, not LongMemEval"),
    ("locomo", "longmemeval", "this is a LongMemEval file, not LoCoMo"),
    ("longmemeval", "jsonl", "this is a TiMem JSONL file, not LongMemEval"),
    ("locomo", "jsonl", "this is a TiMem JSONL file, not LoCoMo"),
])
def test_a_reader_names_the_format_the_file_holds(tmp_path, locomo_dev, fmt, file, holds):
    path = {"locomo": locomo_dev, "longmemeval": LONGMEMEVAL, "jsonl": _jsonl_file(tmp_path, 1)}[file]
    with pytest.raises(InputError) as err:
        load_dataset(path, fmt, tz=UTCZ)
    assert holds in str(err.value) and f"--format {file}" in str(err.value), str(err.value)


def test_a_file_of_its_own_format_with_a_missing_field_still_says_which(tmp_path):
    path = tmp_path / "lme.json"
    item = json.loads(LONGMEMEVAL.read_text(encoding="utf-8"))[0]
    del item["question"]
    path.write_text(json.dumps([item]))
    with pytest.raises(InputError) as err:
        load_dataset(path, "longmemeval", tz=UTCZ)
    assert "question" in str(err.value) and "--format" not in str(err.value), str(err.value)
