"""Which dataset format a file holds, for an import that does not name it (``timem ingest FILE`` without
``--format``).

:func:`infer_format` goes by the file's extension: ``.jsonl`` is TiMem JSONL; a ``.json`` file is LoCoMo or
LongMemEval by the keys of its records (LoCoMo's ``sample_id`` / ``conversation``, LongMemEval's ``question_id`` /
``haystack_sessions``), read from the first :data:`SNIFF_BYTES` of the file only (LongMemEval-M is gigabytes); a
``.json`` file whose first line is one TiMem JSONL turn is JSONL. Anything else (another extension, a ``.json`` file
with both sets of keys or neither) is not guessed: the reason is returned and the caller asks for the format.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from timem.errors import InputError

__all__ = ["SNIFF_BYTES", "infer_format", "record_format", "refuse_other_format"]

#: how much of a ``.json`` file is read to tell LoCoMo from LongMemEval (the first record's keys lie within it)
SNIFF_BYTES = 1 << 20

#: keys that only the records of one format have (an unescaped ``"key":``, so not text inside a string)
_KEYS = {"locomo": ("sample_id", "conversation"), "longmemeval": ("question_id", "haystack_sessions")}
_NAMES = {"locomo": "LoCoMo", "longmemeval": "LongMemEval", "jsonl": "TiMem JSONL"}
_RECORD_KEYS: tuple[tuple[Format, tuple[str, ...]], ...] = (("locomo", _KEYS["locomo"]),
                                                            ("longmemeval", _KEYS["longmemeval"]))
#: the studio's name of each format (its import form's Format choice, timem/ui/sidebar.py)
_STUDIO = {"locomo": "LoCoMo (JSON)", "longmemeval": "LongMemEval (JSON)", "jsonl": "TiMem JSONL"}

Format = Literal["locomo", "longmemeval", "jsonl"]


def _has_key(text: str, key: str) -> bool:
    return re.search(rf'(?<!\\)"{key}"\s*:', text) is not None


def infer_format(path: str | Path) -> tuple[Format | None, str]:
    """``(format, why)``: the format ``path`` holds (``"jsonl"``, ``"locomo"`` or ``"longmemeval"``) and what told it,
    or ``(None, why not)`` when its name and first bytes do not say so unambiguously (see the module docstring).

    Raises:
        InputError: a ``.json`` file that cannot be read (e.g. no such file), naming the file.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".jsonl":
        return "jsonl", "the extension .jsonl"
    if suffix != ".json":
        named = f"the extension {p.suffix!r}" if p.suffix else "no extension"
        return None, f"it has {named}, neither .jsonl (TiMem JSONL) nor .json (LoCoMo or LongMemEval)"
    try:
        with p.open("rb") as fh:
            head = fh.read(SNIFF_BYTES).decode("utf-8-sig", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}. Check the path.", file=str(p)) from exc
    if _is_jsonl_turn(head):
        return "jsonl", "its first line, a TiMem JSONL turn"
    found = [fmt for fmt, keys in _KEYS.items() if any(_has_key(head, k) for k in keys)]
    if found == ["locomo"]:
        return "locomo", "its LoCoMo keys (sample_id / conversation)"
    if found == ["longmemeval"]:
        return "longmemeval", "its LongMemEval keys (question_id / haystack_sessions)"
    keys = " and ".join(f"{_NAMES[f]}'s {' / '.join(_KEYS[f])}" for f in _KEYS)
    if found:
        return None, f"its first records have keys of both formats ({keys})"
    return None, f"its first records have neither {keys.replace(' and ', ' nor ')}"


def _is_jsonl_turn(head: str) -> bool:
    """Whether the first non-blank line is a whole JSON object with a turn's ``user_id`` and ``text``."""
    first = next((ln for ln in head.splitlines() if ln.strip()), "")
    try:
        obj = json.loads(first)
    except (json.JSONDecodeError, RecursionError):
        return False
    return isinstance(obj, dict) and "user_id" in obj and "text" in obj


def record_format(record: Any) -> Format | None:
    """The format whose records have ``record``'s keys: ``"jsonl"`` for a turn (``user_id`` and ``text``), else
    ``"locomo"`` or ``"longmemeval"`` by the keys only that format's records have; ``None`` when it is not a JSON
    object, or has keys of both formats or of neither."""
    if not isinstance(record, dict):
        return None
    if "user_id" in record and "text" in record:
        return "jsonl"
    found: list[Format] = [fmt for fmt, keys in _RECORD_KEYS if any(k in record for k in keys)]
    return found[0] if len(found) == 1 else None


def refuse_other_format(items: list[Any], expected: Format, file: str) -> None:
    """Refuse a file read as ``expected`` whose first record is recognisably another format's, naming that format
    and the flag that reads it. A new-user trial: ``--format longmemeval`` on a LoCoMo file said "missing field
    'question_id'", where ``--format jsonl`` on it said which format it was.

    Raises:
        InputError: the first record has the keys of another format and none of ``expected``'s.
    """
    held = record_format(items[0]) if items else None
    if held is not None and held != expected:
        raise InputError(f"this is a {_NAMES[held]} file, not {_NAMES[expected]}; read it with --format {held} (in the "
                         f"studio, Format '{_STUDIO[held]}')", file=file)
