"""LongMemEval importer on a small fixture written in the real layout."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from timem.datasets import load_dataset, load_longmemeval
from timem.errors import InputError
from timem.models import Role

FIXTURE = Path(__file__).parent / "fixtures" / "longmemeval_tiny.json"
UTCZ = ZoneInfo("UTC")


@pytest.fixture(scope="module")
def raw() -> list[dict[str, Any]]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _when(s: str) -> datetime:
    return datetime.strptime(s[:10] + s[-6:], "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def test_one_user_per_question(raw) -> None:
    users = load_longmemeval(FIXTURE, None, UTCZ)
    assert [u.user_id for u in users] == [r["question_id"] for r in raw]
    for u, r in zip(users, raw, strict=True):
        (q,) = u.questions
        assert q.question_id == r["question_id"] and q.question == r["question"]
        assert q.answer == str(r["answer"]) and q.category == r["question_type"]
        assert q.evidence == r["answer_session_ids"]
        assert q.question_time == _when(r["question_date"])
        assert q.extra["abstention"] == r["question_id"].endswith("_abs")
        assert u.participants == ["user", "assistant"]


def test_sessions_sorted_by_date_and_turn_times(raw) -> None:
    users = load_longmemeval(FIXTURE, None, UTCZ)
    oracle = next(i for i, r in enumerate(raw) if r["haystack_dates"] != sorted(r["haystack_dates"]))
    for u, r in zip(users, raw, strict=True):
        starts = [s.start for s in u.sessions]
        assert starts == sorted(starts)
        assert [s.start for s in u.sessions] == sorted(map(_when, r["haystack_dates"]))
        times = [t.event_time for t in u.turns]
        assert all(a < b for a, b in pairwise(times))  # strictly increasing event time
        for s in u.sessions:
            offsets = [t.event_time - s.start for t in s.turns]
            assert offsets == [timedelta(seconds=i) for i in range(len(s.turns))]
            assert all(t.role == (Role.USER if t.speaker == "user" else Role.ASSISTANT) for t in s.turns)
            assert all(t.id == f"{u.user_id}:{s.session_id}:{t.seq}" for t in s.turns)
    ids = [s.session_id for s in users[oracle].sessions]
    assert ids != raw[oracle]["haystack_session_ids"]  # the unsorted oracle order was fixed


def test_evidence_turns_match_has_answer(raw) -> None:
    users = load_longmemeval(FIXTURE, None, UTCZ)
    for u, r in zip(users, raw, strict=True):
        want = {(sid, j) for sid, sess in zip(r["haystack_session_ids"], r["haystack_sessions"], strict=True)
                for j, t in enumerate(sess) if t.get("has_answer") and t["content"].strip()}
        got = u.questions[0].extra["evidence_turns"]
        assert {(ref.rsplit(":", 1)[0], int(ref.rsplit(":", 1)[1])) for ref in got} == want
        refs = {t.source_ref: t for t in u.turns}
        for ref in got:
            sid, j = ref.rsplit(":", 1)
            src = r["haystack_sessions"][r["haystack_session_ids"].index(sid)][int(j)]
            assert refs[ref].text == src["content"]


def test_duplicates_and_empty_turns(raw) -> None:
    users = load_longmemeval(FIXTURE, None, UTCZ)
    u = next(u for u in users if u.meta["duplicate_session_ids"])
    dup = u.meta["duplicate_session_ids"][0]
    ids = [s.session_id for s in u.sessions]
    assert ids.count(dup) == 1 and f"{dup}#2" in ids
    assert len({t.id for t in u.turns}) == len(u.turns)
    empties = sum(1 for r in raw for sess in r["haystack_sessions"] for t in sess if not t["content"].strip())
    assert sum(u.meta["skipped_empty_turns"] for u in users) == empties >= 1
    total = sum(len(sess) for r in raw for sess in r["haystack_sessions"])
    assert sum(len(u.turns) for u in users) == total - empties


def test_zone_and_limit_and_idempotent_ids() -> None:
    ny = load_dataset(FIXTURE, "longmemeval", limit=1, tz=ZoneInfo("America/New_York"))
    utc = load_longmemeval(FIXTURE, 1, UTCZ)
    assert len(ny) == 1
    assert ny[0].sessions[0].start - utc[0].sessions[0].start == timedelta(hours=4)  # EDT in May
    assert [t.id for t in ny[0].turns] == [t.id for t in utc[0].turns]


# ---------------------------------------------------------------- malformed input
def _broken(tmp_path: Path, raw, mutate) -> Path:
    data = copy.deepcopy(raw)
    mutate(data[0])
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("mutate, record, field", [
    (lambda i: i.pop("question_date"), "{qid}", "question_date"),
    (lambda i: i.update(question_date="yesterday-ish"), "{qid}", "question_date"),
    (lambda i: i["haystack_dates"].pop(), "{qid}", "haystack_dates"),
    (lambda i: i["haystack_dates"].__setitem__(1, "2023/13/40 (Mon) 10:00"), "{qid}/haystack_dates[1]",
     "haystack_dates"),
    (lambda i: i["haystack_sessions"][1][0].update(role="system"), "{qid}/haystack_sessions[1][0]", "role"),
    (lambda i: i["haystack_sessions"][1][1].pop("content"), "{qid}/haystack_sessions[1][1]", "content"),
    (lambda i: i["haystack_sessions"][1][0].update(has_answer="yes"), "{qid}/haystack_sessions[1][0]",
     "has_answer"),
    (lambda i: i["haystack_session_ids"].__setitem__(0, ""), "{qid}/haystack_session_ids[0]",
     "haystack_session_ids"),
    (lambda i: i.update(haystack_sessions="x"), "{qid}", "haystack_sessions"),
    (lambda i: i.update(question=""), "{qid}", "question"),
    (lambda i: i.update(answer_session_ids=None), "{qid}", "answer_session_ids"),
    (lambda i: i.update(haystack_sessions=[[] for _ in i["haystack_sessions"]]), "{qid}",
     "haystack_sessions"),
])
def test_malformed(raw, tmp_path: Path, mutate, record: str, field: str) -> None:
    path = _broken(tmp_path, raw, mutate)
    with pytest.raises(InputError) as exc:
        load_longmemeval(path, None, UTCZ)
    err = exc.value
    rec = record.format(qid=raw[0]["question_id"])
    assert (err.file, err.record, err.field) == (str(path), rec, field)
    assert str(path) in str(err) and rec in str(err) and repr(field) in str(err)


def test_bad_json_and_duplicate_ids(raw, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(FIXTURE.read_text(encoding="utf-8")[:500], encoding="utf-8")
    with pytest.raises(InputError, match="invalid JSON"):
        load_longmemeval(bad, None, UTCZ)
    dup = tmp_path / "dup.json"
    dup.write_text(json.dumps([raw[0], raw[0]]), encoding="utf-8")
    with pytest.raises(InputError, match="duplicate question ids"):
        load_longmemeval(dup, None, UTCZ)
    with pytest.raises(InputError, match="limit"):
        load_longmemeval(FIXTURE, 0, UTCZ)


def test_sample_ids_select_instances_after_limit() -> None:
    got = load_dataset(FIXTURE, "longmemeval", sample_ids=["tiny0003", "tiny0001"], tz=UTCZ)
    assert [u.user_id for u in got] == ["tiny0001", "tiny0003"]  # file order
    with pytest.raises(InputError, match="tiny0003"):  # cut away by the limit first
        load_dataset(FIXTURE, "longmemeval", sample_ids=["tiny0003"], limit=2, tz=UTCZ)
