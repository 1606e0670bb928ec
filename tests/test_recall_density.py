"""Denser context (issue 23): photo captions shorter or left out, headers per day, speakers by initial.

A hand-built case with known evidence (tests/data/cases/scattered/photos.jsonl): Ana names a city she visited in
four sessions, each turn sharing a photo whose caption says nothing about cities but one ("a city square … in
the afternoon sun", Porto); Ben answers each, and four other sessions hold only chores. Real MiniLM, real DuckDB,
no LLM; condensing and neighbours off, so that only the rewrite under test changes the context."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from conftest import DATA
from trial_support import case_engine

from timem.engine import MemoryEngine
from timem.models import Level, MemoryNode
from timem.recall.condense import condense
from timem.recall.context import render_context
from timem.recall.density import legend, shown_captions, speaker_initials, with_initials
from timem.recall.trace_store import compact, load_traces

CASE = DATA / "cases" / "scattered" / "photos.jsonl"
QUESTION = "Which cities did Ana visit?"
CITIES = ("Lisbon", "Krakow", "Ghent", "Porto")
CAPTION = "Ana: I visited Lisbon. [shares a photo: a photo of a plate of grilled sardines on a wooden table]"


def _engine(folder, embedder, **settings) -> MemoryEngine:
    settings = {"token_budget": 280, "condense_after": "off", "recall_neighbours": "none", **settings}
    return case_engine(folder, embedder, CASE, "ana", **settings)


@pytest.fixture(scope="module")
def folder(tmp_path_factory, embedder):
    path = tmp_path_factory.mktemp("photos")
    _engine(path, embedder).close()
    return path


@pytest.fixture(scope="module")
def default(folder, embedder):
    """The context as it was before denser context: whole captions, a header per session and start minute."""
    with _engine(folder, embedder, caption_form="whole", context_layout="grouped") as eng:
        return eng.recall("ana", QUESTION, persist=False)


def test_whole_captions_and_minute_headers(default):
    assert all(c in default.context for c in CITIES), default.context
    assert default.context.count("[shares a photo: a photo of") == 4
    assert "[Fri 1 March 2024, 19:00]" in default.context


def test_the_default_is_short_captions_under_day_headers(folder, embedder, default):
    with _engine(folder, embedder) as eng:
        res = eng.recall("ana", QUESTION, persist=False)
    assert eng.config.recall.caption_form == "short" and eng.config.recall.context_layout == "grouped-date"
    assert all(c in res.context for c in CITIES) and res.context.count("[photo: ") == 4
    assert "[1 March 2024]" in res.context and "[shares a photo" not in res.context
    assert [n.id for n in res.nodes] == [n.id for n in default.nodes]
    assert res.mem_len < default.mem_len - 40


def test_captions_sharing_no_stem_with_the_question_are_left_out(folder, embedder, default):
    with _engine(folder, embedder, caption_cut="all", caption_form="whole", context_layout="grouped") as eng:
        res = eng.recall("ana", QUESTION)
        (loaded,) = load_traces(eng.store, "ana", limit=1)
    assert loaded.context == res.context  # the persisted trace gives the context as recalled
    assert all(c in res.context for c in CITIES), res.context  # every memory is still there
    # only the caption that bears on the question (a city square) is kept
    assert res.context.count("[shares a photo: ") == 1
    assert "a city square with a fountain" in res.context
    assert "sardines" not in res.context and "raincoat" not in res.context
    assert res.mem_len < default.mem_len - 40
    assert [n.id for n in res.nodes] == [n.id for n in default.nodes]


def test_short_captions_keep_what_the_photo_shows(folder, embedder, default):
    with _engine(folder, embedder, caption_form="short", context_layout="grouped") as eng:
        res = eng.recall("ana", QUESTION)
        (loaded,) = load_traces(eng.store, "ana", limit=1)
    assert loaded.context == res.context
    assert "sha" in compact(res.trace, res.trace.sources)["context"]  # persisted as ids, rebuilt with short captions
    assert "[shares a photo" not in res.context and "a photo of" not in res.context
    assert res.context.count("[photo: ") == 4
    assert "[photo: a plate of grilled sardines" in res.context
    assert res.mem_len < default.mem_len - 12


def test_a_header_per_session_and_day(folder, embedder, default):
    with _engine(folder, embedder, context_layout="grouped-date", caption_form="whole") as eng:
        res = eng.recall("ana", QUESTION, persist=False)
    headers = [ln for ln in res.context.splitlines() if ln.startswith("[")]
    assert "[1 March 2024]" in headers and all(", " not in h for h in headers), headers
    assert len(headers) == len(set(headers))  # one per session and day
    assert all(c in res.context for c in CITIES)
    assert res.mem_len < default.mem_len


def test_speaker_initials_with_a_legend(folder, embedder):
    with _engine(folder, embedder, speaker_labels="initials", recall_neighbours="next") as eng:
        res = eng.recall("ana", QUESTION)
        (loaded,) = load_traces(eng.store, "ana", limit=1)
    assert loaded.context == res.context
    lines = res.context.splitlines()
    assert lines[0] == "Speakers: A = Ana, B = Ben", lines
    assert any(ln.startswith("A: I visited Lisbon") for ln in lines)
    assert any(ln.startswith("B: ") for ln in lines)
    assert not any(ln.startswith(("Ana: ", "Ben: ")) for ln in lines)


def test_caption_rewrites():
    short = "Ana: I visited Lisbon. [photo: a plate of grilled sardines on a wooden table]"
    assert shown_captions(CAPTION, "short") == short
    assert shown_captions(shown_captions(CAPTION, "short"), "short") == shown_captions(CAPTION, "short")
    assert shown_captions(CAPTION, "whole", {"dog"}) == "Ana: I visited Lisbon."
    assert shown_captions(CAPTION, "whole", {"sardin"}) == CAPTION  # Porter stem of "sardines"
    assert shown_captions(CAPTION.replace("a photo of", "a photography of"), "short") == short  # BLIP's wording
    assert shown_captions("Ana: no photo here", "short", set()) == "Ana: no photo here"


def _l1(i: int, content: str, session: str = "s1", minutes: int = 0) -> MemoryNode:
    when = datetime(2024, 3, 1, 19, tzinfo=UTC) + timedelta(minutes=minutes)
    return MemoryNode(id=f"n{i}", user_id="u", level=Level(1), window_key=f"segment:u:{session}:{i}",
                      session_id=session, span_start=when, span_end=when, source_turn_ids=[f"u:{session}:{i}"],
                      content=content, model_id="verbatim", prompt_version="v")


def test_initials_only_when_unambiguous():
    nodes = [_l1(1, "Ana: hi\nBen: hello"), _l1(2, "Bea: hey"), _l1(3, "On 1 March 2024 (Friday) 19:00:\nCy: yo")]
    initials = speaker_initials(nodes)
    assert initials == {"Ana": "A", "Cy": "C"}  # Ben and Bea share B: both keep their names
    assert legend(initials) == "Speakers: A = Ana, C = Cy"
    assert with_initials(nodes[0], initials).content == "A: hi\nBen: hello"
    assert with_initials(nodes[2], initials).content == "On 1 March 2024 (Friday) 19:00:\nC: yo"
    assert legend({}) == ""


def test_day_headers_merge_segments_minutes_apart():
    nodes = [_l1(1, "Ana: I visited Lisbon."), _l1(2, "Ben: Lovely.", minutes=5), _l1(3, "Ana: Chores.", "s2", 60)]
    tz = ZoneInfo("UTC")
    assert render_context(nodes, tz, "grouped").count("[Fri 1 March 2024") == 3
    assert render_context(nodes, tz, "grouped-day").splitlines()[1:4] == [
        "[Fri 1 March 2024]", "Ana: I visited Lisbon.", "Ben: Lovely."]
    text = render_context(nodes, tz, "grouped-date")
    assert text.splitlines() == ["Conversation excerpts:", "[1 March 2024]", "Ana: I visited Lisbon.", "Ben: Lovely.",
                                 "[1 March 2024]", "Ana: Chores."]  # another session: its own header
    with pytest.raises(ValueError, match="grouped-date"):
        render_context(nodes, tz, "days")  # type: ignore[arg-type]


def test_condensed_memories_lose_unrelated_captions_first():
    tail = " We also walked a lot and ate well and slept late every single day of the trip."
    node = _l1(1, CAPTION.replace("Lisbon.", "Lisbon." + tail))  # 44 tokens: over the 40-token leaf cap
    first = _l1(2, CAPTION)
    nodes = {"n1": node, "n2": first}
    shown, caps = condense(nodes, ["n2", "n1"], [], QUESTION, {"citi", "visit"}, 1, 40, 25, captions="whole")
    assert shown["n2"] is first  # the first leaf keeps its whole text, caption and all
    # without its caption the memory fits its cap: every sentence stays, nothing is marked cut
    assert shown["n1"].content == "Ana: I visited Lisbon." + tail
    assert caps == {}
    # the default cuts the caption as a sentence past the cap, and marks the cut (refill may bring it back)
    shown, caps = condense(nodes, ["n2", "n1"], [], QUESTION, {"citi", "visit"}, 1, 40, 25)
    assert shown["n1"].content == "Ana: I visited Lisbon." + tail + " …"
    assert caps == {"n1": 40}
