"""The OpenAI-compatible endpoint with the real embedded model and the real embedder, the ``openai`` SDK as the
client: a fact told in one session is recalled and used in the answer of a session a day later, with and without
streaming, and the trace id of the response header opens in the studio's Recall inspector (over the service)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from openai_support import sdk
from service_support import running
from studio_support import assert_clean, studio_app

from timem.config import load_config
from timem.engine import MemoryEngine
from timem.service import KeyFile
from timem.service.client import ServiceClient

pytestmark = pytest.mark.slow

T0 = datetime(2024, 5, 2, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def local_svc(tmp_path_factory):
    folder = tmp_path_factory.mktemp("openai-local")
    cache = Path(os.environ.get("TIMEM_CACHE_DIR", Path.home() / ".cache" / "timem"))
    cfg = load_config(env={}, db_path=str(folder / "timem.duckdb"), llm_backend="local", cache_dir=str(cache),
                      consolidation_mode="extractive", memory_extractor="rules")
    kf = KeyFile(folder / "timem.duckdb.keys.json")
    key = kf.add("acme")
    with running(lambda: MemoryEngine.open(cfg), kf) as base:
        yield base, key


def opens_in_the_inspector(base: str, key: str, trace_id: str) -> None:
    client = ServiceClient(base, key)
    try:
        at = studio_app(client, "mia", "recall_inspector", timeout=300)
        assert_clean(at)
        past = at.selectbox(key="insp_past")
        assert past.options  # labels ("date · question"); the values are trace ids
        at = past.set_value(trace_id).run()
        assert_clean(at)
        assert any(f"Stored trace `{trace_id}`" in c.value for c in at.caption)
    finally:
        client.close()


def test_a_fact_from_yesterday_is_recalled_and_used_with_and_without_streaming(local_svc):
    base, key = local_svc
    c = sdk(base, key)
    c.chat.completions.create(model="timem", user="mia", extra_headers={"X-Timem-Event-Time": T0.isoformat()},
                              messages=[{"role": "user", "content": "My sister Ana lives in Porto and she works "
                                                                    "as a doctor."}])
    question = "In which city does my sister Ana live?"
    raw = c.chat.completions.with_raw_response.create(
        model="timem", user="mia", messages=[{"role": "user", "content": question}],
        extra_headers={"X-Timem-Event-Time": (T0 + timedelta(days=1)).isoformat()})
    answer = raw.parse().choices[0].message.content
    assert "Porto" in answer, answer
    assert int(raw.headers["X-Timem-Memories"]) >= 1
    opens_in_the_inspector(base, key, raw.headers["X-Timem-Trace-Id"])

    question = "What does my sister Ana do for work?"
    with c.chat.completions.with_streaming_response.create(
            model="timem", user="mia", stream=True, messages=[{"role": "user", "content": question}],
            extra_headers={"X-Timem-Event-Time": (T0 + timedelta(days=2)).isoformat()}) as resp:
        text = "".join(ch.choices[0].delta.content or "" for ch in resp.parse() if ch.choices)
        trace_id = resp.headers["X-Timem-Trace-Id"]
    assert "doctor" in text.lower(), text
    opens_in_the_inspector(base, key, trace_id)
