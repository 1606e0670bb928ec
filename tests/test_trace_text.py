"""`timem ask --trace`: each candidate line shows the memory's date, its first words and why it was kept
or dropped (not only a node id)."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from timem.cli import app

TURNS = [(f"s{i}", f"2024-05-0{i}T09:00:00", text) for i, text in enumerate([
    "I adopted a rescue dog called Rex.", "Rex learned to sit in two days.", "I started pottery lessons on Tuesdays.",
    "My sister moved to Lisbon last spring.", "I ran my first 10 km race with Rex cheering.",
    "I bought a blue bicycle for commuting.", "The pottery teacher praised my first bowl."], start=1)]


def test_ask_trace_candidate_lines_are_readable(tmp_path, monkeypatch):
    for var in [v for v in __import__("os").environ if v.startswith(("TIMEM_", "OPENAI_"))]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("TIMEM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "zoe.jsonl"
    path.write_text("".join(json.dumps({"user_id": "zoe", "session_id": s, "role": r, "text": t, "timestamp": ts})
                            + "\n" for s, ts, text in TURNS for r, t in (("user", text), ("assistant", "Nice!"))))
    db = str(tmp_path / "t.duckdb")
    runner = CliRunner()
    res = runner.invoke(app, ["ingest", str(path), "--format", "jsonl", "--l1-only", "--llm", "none", "--db", db])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["ask", "What is my dog called?", "--user", "zoe", "--db", db, "--trace", "--recall-only",
                              "--gate", "score"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("candidates (L1;"))
    cand = [ln for ln in lines[start + 1:start + 8] if re.match(r"\s+\d+\s", ln)]
    assert len(cand) == 7, lines[start:start + 9]
    for ln in cand:  # date, first words, why and the id, on one line
        assert re.search(r"2024-05-0\d 09:00  ", ln), ln
        assert re.search(r"(kept|dropped): ", ln) and re.search(r"\[L1-[0-9a-f]{16}\]$", ln), ln
        assert not re.search(r"On \d+ May 2024", ln)  # the verbatim L1 date line is not repeated
    print("\n".join(lines[start:start + 8]))
    top = cand[0]
    assert "Rex" in top and "adopted a rescue dog" in top, top
