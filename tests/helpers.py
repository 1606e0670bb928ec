"""Test helpers shared by several test modules (not fixtures: plain functions)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from timem.config import PAPER_QUOTAS
from timem.llm.client import LLM
from timem.llm.fake import ScriptedBackend
from timem.llm.protocol import ChatRequest
from timem.models import Role, Turn

#: Settings that were the defaults before the LoCoMo-dev tuning (6745ee4); a test of a behaviour that
#: still exists under explicit settings pins only those it needs.
#: L1 leaves of a turn and its reply (``l1_unit = "exchange"``).
EXCHANGE = {"l1_unit": "exchange"}
#: L2-L5 written by the (scripted) LLM: the default follows the backend, extractive for "local"/"none".
ABSTRACTIVE = {"consolidation_mode": "abstractive"}
#: TiMem's quotas: L2-L5 ancestors in the context.
TIMEM_QUOTAS = {"quotas": PAPER_QUOTAS}


def locomo_dev_texts() -> list[str]:
    """Every turn's text in ``tests/data/locomo-dev.json`` (both conversations, in file order): real text to embed."""
    texts: list[str] = []
    for conv in json.loads((Path(__file__).parent / "data" / "locomo-dev.json").read_text()):
        for key, session in conv["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                texts += [t["text"] for t in session]
    return texts


def consolidation_answer(request: ChatRequest) -> str:
    """A schema-valid answer for any consolidation prompt, quoting the first words of the input."""
    props = (request.json_schema or {}).get("properties", {})
    children = request.messages[-1].content.split("\n\nEarlier ")[0].split("\n\nNow write")[0]
    gist = " ".join(children.split()[-12:])  # the children come first; the history block after them
    if "profiles" in props:
        return json.dumps({"profiles": [{"person": "Someone", "profile": f"Profile from: {gist}."}]})
    if "segments" in props:
        n = request.messages[-1].content.count("Exchange ")
        return json.dumps({"segments": [{"exchange": i, "facts": [f"Fact {i}: {gist}"]} for i in range(1, n + 1)]})
    return json.dumps({"summary": f"Summary of: {gist}."})


def scripted_llm(store=None, model_id: str = "scripted") -> tuple[LLM, ScriptedBackend]:
    backend = ScriptedBackend(consolidation_answer, model_id=model_id)
    return LLM(backend, store), backend


def make_turn(user: str, session: str, seq: int, speaker: str, text: str, at: datetime,
              role: Role = Role.OTHER) -> Turn:
    return Turn(id=f"{user}:{session}:{seq}", user_id=user, session_id=session, seq=seq, speaker=speaker,
                role=role, text=text, event_time=at)
