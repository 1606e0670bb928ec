"""Dataset importers: LoCoMo, LongMemEval and the TiMem JSONL chat format.

Each returns ``list[ImportedUser]`` (see :mod:`timem.datasets.base`); malformed input raises
:class:`timem.errors.InputError` naming the file, record and field before anything is returned.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo

from timem.datasets.base import ImportedSession, ImportedUser, Question, check_length, turn_id
from timem.datasets.jsonl import load_jsonl, write_jsonl
from timem.datasets.locomo import load_locomo
from timem.datasets.longmemeval import load_longmemeval
from timem.errors import InputError

__all__ = ["DEMO_FILE", "ImportedSession", "ImportedUser", "Question", "load_dataset", "load_jsonl", "load_locomo",
           "load_longmemeval", "turn_id", "write_jsonl"]

#: the bundled demo conversation (TiMem JSONL, see ``timem/data/README.md``)
DEMO_FILE = Path(__file__).resolve().parents[1] / "data" / "demo_conversation.jsonl"

DatasetFormat = Literal["locomo", "longmemeval", "jsonl"]
FORMATS: tuple[str, ...] = ("locomo", "longmemeval", "jsonl")


def load_dataset(path: str | Path, fmt: DatasetFormat, *, sample_ids: list[str] | None = None,
                 limit: int | None = None, tz: ZoneInfo, user_tz: Mapping[str, ZoneInfo] | None = None,
                 max_turn_chars: int | None = None) -> list[ImportedUser]:
    """Load ``path`` in format ``fmt`` into users with time-ordered sessions (UTC-aware times).

    Args:
        path: the dataset file.
        fmt: ``"locomo"`` (``locomo10.json`` layout), ``"longmemeval"`` (any of the three LongMemEval
            files) or ``"jsonl"`` (TiMem JSONL, see :mod:`timem.datasets.jsonl`).
        sample_ids: LoCoMo: the conversations to import; LongMemEval: the instances (``question_id``),
            after ``limit`` (``None`` = all).
        limit: LongMemEval only: import the first ``limit`` instances (``None`` = all).
        tz: the users' zone; naive dataset times are read as wall-clock time there.
        user_tz: zones of particular users (by user id), used instead of ``tz`` for them
            (``Config.time.user_tz``). Every turn records its UTC offset (``Turn.utc_offset_minutes``):
            the timestamp's own offset if it has one other than UTC, else its user's zone's offset then
            (:func:`timem.tree.windows.offset_minutes`).
        max_turn_chars: longest turn text or image caption accepted (``Config.store.max_turn_chars``; ``None``:
            any); a longer one is a :class:`~timem.errors.TextTooLongError` naming the file and the line (JSONL)
            or the user and the turn's ``source_ref`` (LoCoMo ``dia_id``, LongMemEval ``session:index``).

    Raises:
        InputError: unknown format, an option that does not apply to the format, or malformed input
            (the message names file, record and field).
    """
    if fmt not in FORMATS:
        raise InputError(f"unknown dataset format {fmt!r}; use one of {', '.join(FORMATS)}", field="fmt")
    if sample_ids is not None and fmt not in ("locomo", "longmemeval"):
        raise InputError(f"sample_ids applies to LoCoMo and LongMemEval only, not {fmt}", field="sample_ids")
    if limit is not None and fmt != "longmemeval":
        raise InputError(f"limit applies to LongMemEval only, not {fmt}", field="limit")
    if fmt == "jsonl":
        return load_jsonl(path, tz, user_tz, max_chars=max_turn_chars)
    users = load_locomo(path, sample_ids, tz, user_tz) if fmt == "locomo" else \
        load_longmemeval(path, limit, tz, user_tz, sample_ids)
    for user in users:
        for t in user.turns:
            for field, value in (("text", t.text), ("image_caption", t.image_caption)):
                check_length(value, max_turn_chars, file=str(path), record=f"{user.user_id} {t.source_ref}",
                             field=field)
    return users
