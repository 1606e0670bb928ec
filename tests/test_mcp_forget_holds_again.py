"""MCP ``forget`` by text says which facts hold again, as ``POST …/forget`` does (``reopened``): a new-user trial
forgot "I now work at Brightly" through MCP and was not told that Acme is the employer again."""

from __future__ import annotations

import json

import anyio
import pytest
from service_support import engine_factory

from timem.service.mcp_server import build_server


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    return fake_embedder


def _result(got) -> dict:
    """The tool's dict result (a ``CallToolResult``: structured content, or its JSON text)."""
    if getattr(got, "structuredContent", None):
        data = got.structuredContent
        return data.get("result", data) if isinstance(data, dict) else data
    return json.loads(got.content[0].text)


def test_forgetting_the_new_job_says_the_old_employer_holds_again(tmp_path, embedder):
    eng = engine_factory(tmp_path / "m.duckdb", embedder, memory_extractor="rules")()
    try:
        server = build_server(eng, "mia")
        anyio.run(server.call_tool, "remember", {"text": "I work at Acme.", "event_time": "2024-05-01T09:00:00+00:00"})
        anyio.run(server.call_tool, "remember", {"text": "I now work at Brightly.",
                                                 "event_time": "2024-05-06T09:00:00+00:00"})
        out = _result(anyio.run(server.call_tool, "forget", {"text": "I now work at Brightly"}))
        assert out["forgotten"] is True and any("Brightly" in f for f in out["facts"]), out
        assert [f.split("'s ", 1)[1] for f in out["holds_again"] if "employer" in f] == ["employer: Acme"], out
        # nothing holds again when nothing was replaced
        out = _result(anyio.run(server.call_tool, "forget", {"text": "I work at Acme"}))
        assert "holds_again" not in out, out
    finally:
        eng.close()
