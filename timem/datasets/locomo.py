"""LoCoMo importer (Maharana et al., ACL 2024; file layout of ``locomo10.json``).

Mapping (one :class:`ImportedUser` per conversation):

* user id = ``sample_id`` (e.g. ``"conv-26"``); participants = ``[speaker_a, speaker_b]``.
* sessions come from the ``session_N`` keys, ordered by N numerically, with session id ``f"S{N}"``
  and date label ``session_N_date_time`` (``"1:56 pm on 8 May, 2023"``, local time without a zone,
  read in the ``tz`` passed in). A ``session_N_date_time`` without a non-empty ``session_N`` is
  skipped (listed in ``meta["sessions_without_turns"]``); a ``session_N`` without its date is an error.
* LoCoMo gives one timestamp per session, so **every turn of a session gets the session's event
  time**; order within the session is carried by ``seq``.
* role: ``Role.USER`` for ``speaker_a`` and ``Role.OTHER`` for ``speaker_b`` (and for any speaker
  name that matches neither). Both are humans; the split keeps exchanges recognisable while the
  speaker name stays the authority on who said what.
* each turn: ``speaker``, ``text``, ``source_ref`` = ``dia_id`` (``"D1:3"``), ``image_caption`` =
  ``blip_caption`` when present. The photo's search ``query`` and ``img_url`` are dropped. A turn
  whose text is empty and has no caption is skipped (counted in ``meta["skipped_empty_turns"]``).
* questions from ``qa``: id ``f"{sample_id}:q{k}"``, ``category`` the int 1-5, ``evidence`` the
  dia_ids (entries such as ``"D8:6; D9:17"`` are split, ``"D30:05"`` becomes ``"D30:5"``).
  Category 5 (adversarial) uses ``adversarial_answer`` as ``answer`` and keeps its category;
  ``extra["adversarial"]`` is true there, and a stray original ``answer`` is kept in
  ``extra["answer"]``. ``question_time`` is ``None`` (LoCoMo asks after the last session).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from timem.datasets.base import (
    ImportedSession,
    ImportedUser,
    Question,
    check_id,
    check_name,
    check_text,
    is_blank,
    need,
    parse_when_offset,
    read_json,
    turn_id,
)
from timem.datasets.detect import refuse_other_format
from timem.errors import InputError, UnknownSampleError
from timem.models import Role, Turn

__all__ = ["load_locomo"]

_SESSION = re.compile(r"session_(\d+)")
_SESSION_DATE = re.compile(r"session_(\d+)_date_time")
_DIA = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


def load_locomo(path: str | Path, sample_ids: list[str] | None, tz: ZoneInfo,
                user_tz: Mapping[str, ZoneInfo] | None = None) -> list[ImportedUser]:
    """Read LoCoMo conversations into :class:`ImportedUser` records (see the module docstring).

    Args:
        path: ``locomo10.json``-style file: a JSON list of conversations, or one conversation object.
        sample_ids: conversations to import (``None`` = all), returned in file order.
        tz: zone of the naive session times; all returned datetimes are UTC-aware.
        user_tz: zones of particular conversations (by ``sample_id``), used instead of ``tz``.

    Raises:
        UnknownSampleError: a sample id the file does not hold (the message lists the available ones).
        InputError: unreadable file, bad JSON, or a malformed selected conversation (missing/empty field, wrong type,
            unparseable date, no sessions). Raised before anything is returned.
    """
    file = str(path)
    data = read_json(Path(path))
    items = [data] if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise InputError(f"expected a JSON list of conversations or one conversation object, "
                         f"got {type(data).__name__}", file=file)
    if not items:
        raise InputError("the file holds no conversations", file=file)
    refuse_other_format(items, "locomo", file)
    ids = [check_id(need(item, "sample_id", str, file=file, record=f"[{i}]"), file=file, record=f"[{i}]",
                    field="sample_id") for i, item in enumerate(items)]
    if len(set(ids)) != len(ids):
        dup = sorted({s for s in ids if ids.count(s) > 1})
        raise InputError(f"duplicate sample ids {dup}", file=file, field="sample_id")
    if sample_ids is not None:
        unknown = [s for s in sample_ids if s not in ids]
        if unknown:
            raise UnknownSampleError(f"unknown sample id(s) {unknown}; available: {', '.join(ids)}", unknown=unknown,
                                     available=ids, file=file, field="sample_id")
        items = [item for sid, item in zip(ids, items, strict=True) if sid in set(sample_ids)]
    return [_conversation(item, file, (user_tz or {}).get(item["sample_id"], tz)) for item in items]


def _conversation(item: dict[str, Any], file: str, tz: ZoneInfo) -> ImportedUser:
    sid: str = item["sample_id"]
    conv = need(item, "conversation", dict, file=file, record=sid)
    rec = f"{sid}/conversation"
    speaker_a = check_name(need(conv, "speaker_a", str, file=file, record=rec), file=file, record=rec,
                           field="speaker_a")
    speaker_b = check_name(need(conv, "speaker_b", str, file=file, record=rec), file=file, record=rec,
                           field="speaker_b")
    numbers = sorted({int(m.group(1)) for k in conv if (m := _SESSION.fullmatch(k))})
    dated = sorted({int(m.group(1)) for k in conv if (m := _SESSION_DATE.fullmatch(k))})
    sessions: list[ImportedSession] = []
    skipped_turns = 0
    for n in numbers:
        raw_turns = need(conv, f"session_{n}", list, file=file, record=rec, allow_empty=True)
        if not raw_turns:
            continue
        label = need(conv, f"session_{n}_date_time", str, file=file, record=rec)
        when, offset = parse_when_offset(label, tz, file=file, record=rec, field=f"session_{n}_date_time")
        session_id = f"S{n}"
        turns: list[Turn] = []
        for j, raw in enumerate(raw_turns):
            r = f"{sid}/session_{n}[{j}]"
            speaker = check_name(need(raw, "speaker", str, file=file, record=r).strip(), file=file, record=r,
                                 field="speaker")
            text = need(raw, "text", str, file=file, record=r, allow_empty=True)
            dia_id = need(raw, "dia_id", str, file=file, record=r).strip()
            caption = raw.get("blip_caption")
            if caption is not None and not isinstance(caption, str):
                raise InputError(f"expected a string, got {type(caption).__name__}", file=file, record=r,
                                 field="blip_caption")
            if caption is not None:
                check_text(caption, file=file, record=r, field="blip_caption")
            caption = caption.strip() if caption and not is_blank(caption) else None
            if not text.strip() and caption is None:
                skipped_turns += 1
                continue
            seq = len(turns)
            turns.append(Turn(id=turn_id(sid, session_id, seq), user_id=sid, session_id=session_id, seq=seq,
                              speaker=speaker, role=Role.USER if speaker == speaker_a else Role.OTHER,
                              text=text, event_time=when, source_ref=dia_id, image_caption=caption,
                              utc_offset_minutes=offset))
        if turns:
            sessions.append(ImportedSession(session_id=session_id, turns=turns, date_label=label))
    if not sessions:
        raise InputError("conversation has no session with turns", file=file, record=rec, field="session_1")
    present = {int(s.session_id[1:]) for s in sessions}
    return ImportedUser(
        user_id=sid, participants=[speaker_a, speaker_b], sessions=sessions,
        questions=_questions(item, sid, file),
        meta={"dataset": "locomo", "file": file, "speaker_a": speaker_a, "speaker_b": speaker_b,
              "sessions_without_turns": [n for n in dated if n not in present],
              "skipped_empty_turns": skipped_turns})


def _evidence(raw: list[Any], file: str, record: str) -> list[str]:
    out: list[str] = []
    for e in raw:
        if not isinstance(e, str):
            raise InputError(f"evidence entries must be strings, got {type(e).__name__}", file=file,
                             record=record, field="evidence")
        for part in re.split(r"[;,]", e):
            part = part.strip()
            if part:
                m = _DIA.fullmatch(part)
                out.append(f"D{int(m.group(1))}:{int(m.group(2))}" if m else part)
    return out


def _questions(item: dict[str, Any], sid: str, file: str) -> list[Question]:
    if item.get("qa") is None:
        return []
    qa = need(item, "qa", list, file=file, record=sid, allow_empty=True)
    out: list[Question] = []
    for k, q in enumerate(qa):
        r = f"{sid}/qa[{k}]"
        text = need(q, "question", str, file=file, record=r)
        category = need(q, "category", int, file=file, record=r)
        evidence = _evidence(need(q, "evidence", list, file=file, record=r, allow_empty=True), file, r)
        keys = ("adversarial_answer", "answer") if category == 5 else ("answer", "adversarial_answer")
        key = next((key for key in keys if q.get(key) is not None), None)
        if key is None:
            raise InputError("missing field", file=file, record=r, field=keys[0])
        answer = need(q, key, (str, int, float), file=file, record=r, allow_empty=True)
        extra: dict[str, Any] = {"adversarial": category == 5}
        if category == 5 and q.get("answer") is not None:
            extra["answer"] = str(q["answer"])
        out.append(Question(question_id=f"{sid}:q{k}", question=text, answer=str(answer), category=category,
                            evidence=evidence, question_time=None, extra=extra))
    return out
