"""LongMemEval importer (Wu et al., ICLR 2025).

Reads any of ``longmemeval_s_cleaned.json``, ``longmemeval_m_cleaned.json`` and ``longmemeval_oracle.json``.

Mapping (each question is its own user with its own history):

* user id = ``question_id``; participants = ``["user", "assistant"]``; one :class:`Question` per user.
* sessions come from ``haystack_sessions`` with ids ``haystack_session_ids`` and dates
  ``haystack_dates`` (``"2023/05/30 (Tue) 23:40"``, naive, read in ``tz``). They are **sorted by
  date** (the oracle file is not sorted; ties keep file order). A session id that occurs twice in
  one history (13 such filler duplicates exist in LongMemEval-S) gets ``"#2"``, ``"#3"`` ... appended
  to the later copies, listed in ``meta["duplicate_session_ids"]``. Empty sessions are skipped
  (``meta["empty_sessions"]``).
* turns: ``role`` user/assistant -> :class:`Role` and speaker ``"user"``/``"assistant"``;
  **event time = session date + seq seconds**, so turns are strictly ordered in event time and a
  session stays within a minute or so of its stated time. ``source_ref`` = ``f"{session_id}:{i}"``
  with ``i`` the turn's index in the original session. A turn with empty content is skipped
  (``meta["skipped_empty_turns"]``); indices in ``source_ref`` still refer to the original list.
* question: ``answer`` as text, ``category`` = ``question_type``, ``evidence`` =
  ``answer_session_ids``, ``question_time`` = ``question_date``; ``extra["evidence_turns"]`` lists
  the ``source_ref`` of every (kept) turn with ``has_answer: true``, ``extra["abstention"]`` is true for
  ids ending in ``_abs``, ``extra["question_type"]`` repeats the type.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from timem.datasets.base import (
    ImportedSession,
    ImportedUser,
    Question,
    check_id,
    need,
    parse_when,
    parse_when_offset,
    read_json,
    turn_id,
)
from timem.datasets.detect import refuse_other_format
from timem.errors import InputError, UnknownSampleError
from timem.models import Role, Turn

__all__ = ["load_longmemeval"]

_ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT}


def load_longmemeval(path: str | Path, limit: int | None, tz: ZoneInfo,
                     user_tz: Mapping[str, ZoneInfo] | None = None,
                     sample_ids: list[str] | None = None) -> list[ImportedUser]:
    """Read LongMemEval instances into one :class:`ImportedUser` each (see the module docstring).

    Args:
        path: a LongMemEval JSON file (a list of instances; one instance object is also accepted).
        limit: import only the first ``limit`` instances (``None`` = all).
        sample_ids: then only the instances with these ``question_id`` values, in file order (``None`` = all).
        tz: zone of the naive ``haystack_dates``/``question_date``; returned datetimes are UTC-aware.
        user_tz: zones of particular instances (by ``question_id``), used instead of ``tz``.

    Raises:
        UnknownSampleError: a ``sample_ids`` id that no selected instance has.
        InputError: unreadable file, bad JSON, or a malformed selected instance (missing/empty
            field, wrong type, unparseable date, list lengths that disagree, duplicate question
            ids, no non-empty session). Raised before anything is returned.
    """
    file = str(path)
    data = read_json(Path(path))
    items = [data] if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise InputError(f"expected a JSON list of instances, got {type(data).__name__}", file=file)
    refuse_other_format(items, "longmemeval", file)
    if limit is not None:
        if limit < 1:
            raise InputError(f"limit must be at least 1, got {limit}", field="limit")
        items = items[:limit]
    if not items:
        raise InputError("the file holds no instances", file=file)
    users = [_instance(item, i, file, tz, user_tz or {}) for i, item in enumerate(items)]
    dup = sorted(k for k, n in Counter(u.user_id for u in users).items() if n > 1)
    if dup:
        raise InputError(f"duplicate question ids {dup}", file=file, field="question_id")
    if sample_ids is not None:
        unknown = sorted(set(sample_ids) - {u.user_id for u in users})
        if unknown:
            raise UnknownSampleError(f"no instance with question_id {unknown[:5]} (among the selected ones)",
                                     unknown=unknown, available=[u.user_id for u in users], file=file,
                                     field="question_id")
        users = [u for u in users if u.user_id in set(sample_ids)]
    return users


def _instance(item: Any, i: int, file: str, tz: ZoneInfo, user_tz: Mapping[str, ZoneInfo]) -> ImportedUser:
    qid = check_id(need(item, "question_id", str, file=file, record=f"[{i}]").strip(), file=file, record=f"[{i}]",
                   field="question_id")
    tz = user_tz.get(qid, tz)
    req: dict[str, Any] = {"file": file, "record": qid}
    question = need(item, "question", str, **req)
    answer = need(item, "answer", (str, int, float), **req, allow_empty=True)
    qtype = need(item, "question_type", str, **req)
    qtime = parse_when(need(item, "question_date", str, **req), tz, **req, field="question_date")
    sids = need(item, "haystack_session_ids", list, **req)
    dates = need(item, "haystack_dates", list, **req)
    raw_sessions = need(item, "haystack_sessions", list, **req)
    answer_sids = need(item, "answer_session_ids", list, **req, allow_empty=True)
    for name, lst in (("haystack_dates", dates), ("haystack_sessions", raw_sessions)):
        if len(lst) != len(sids):
            raise InputError(f"{len(lst)} entries but {len(sids)} haystack_session_ids", **req, field=name)
    for k, a in enumerate(answer_sids):
        if not isinstance(a, str) or not a.strip():
            raise InputError("expected a non-empty string", file=file,
                             record=f"{qid}/answer_session_ids[{k}]", field="answer_session_ids")

    seen: Counter[str] = Counter()
    parsed = []
    for k, (sid, date_raw, sess) in enumerate(zip(sids, dates, raw_sessions, strict=True)):
        where = {"file": file, "record": f"{qid}/haystack_session_ids[{k}]"}
        if not isinstance(sid, str) or not sid.strip():
            raise InputError("expected a non-empty string", **where, field="haystack_session_ids")
        date_rec = f"{qid}/haystack_dates[{k}]"
        if not isinstance(date_raw, str) or not date_raw.strip():
            raise InputError("expected a non-empty date string", file=file, record=date_rec,
                             field="haystack_dates")
        when, offset = parse_when_offset(date_raw, tz, file=file, record=date_rec, field="haystack_dates")
        if not isinstance(sess, list):
            raise InputError(f"expected a list of turns, got {type(sess).__name__}", file=file,
                             record=f"{qid}/haystack_sessions[{k}]", field="haystack_sessions")
        sid = check_id(sid.strip(), **where, field="haystack_session_ids")
        seen[sid] += 1
        parsed.append((when, k, sid if seen[sid] == 1 else f"{sid}#{seen[sid]}", date_raw.strip(), sess, offset))

    sessions: list[ImportedSession] = []
    evidence_turns: list[str] = []
    skipped, empty = 0, []
    for when, k, session_id, label, sess, offset in sorted(parsed, key=lambda p: (p[0], p[1])):
        turns: list[Turn] = []
        for j, raw in enumerate(sess):
            r = f"{qid}/haystack_sessions[{k}][{j}]"
            role = need(raw, "role", str, file=file, record=r)
            if role not in _ROLES:
                raise InputError(f"role must be 'user' or 'assistant', got {role!r}", file=file, record=r,
                                 field="role")
            content = need(raw, "content", str, file=file, record=r, allow_empty=True)
            has_answer = raw.get("has_answer", False)
            if not isinstance(has_answer, bool):
                raise InputError(f"expected true/false, got {has_answer!r}", file=file, record=r,
                                 field="has_answer")
            ref = f"{session_id}:{j}"
            if not content.strip():
                skipped += 1
                continue
            if has_answer:
                evidence_turns.append(ref)
            seq = len(turns)
            turns.append(Turn(id=turn_id(qid, session_id, seq), user_id=qid, session_id=session_id, seq=seq,
                              speaker=role, role=_ROLES[role], text=content,
                              event_time=when + timedelta(seconds=seq), source_ref=ref, utc_offset_minutes=offset))
        if turns:
            sessions.append(ImportedSession(session_id=session_id, turns=turns, date_label=label))
        else:
            empty.append(session_id)
    if not sessions:
        raise InputError("instance has no session with turns", **req, field="haystack_sessions")
    q = Question(question_id=qid, question=question, answer=str(answer), category=qtype,
                 evidence=[a.strip() for a in answer_sids], question_time=qtime,
                 extra={"evidence_turns": evidence_turns, "abstention": qid.endswith("_abs"),
                        "question_type": qtype})
    return ImportedUser(user_id=qid, participants=["user", "assistant"], sessions=sessions, questions=[q],
                        meta={"dataset": "longmemeval", "file": file, "question_type": qtype,
                              "duplicate_session_ids": sorted(s for s, n in seen.items() if n > 1),
                              "empty_sessions": empty, "skipped_empty_turns": skipped})
