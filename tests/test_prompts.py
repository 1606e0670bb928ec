"""Consolidation prompt builders and the deterministic clean-up of small-model replies."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from timem.models import Level, MemoryNode
from timem.prompts import profile, session
from timem.prompts.common import clean_summary

# A real reply of the embedded 1.5B model (greedy decoding looped until the token limit).
LOOPED = ('{"summary": "Caroline and Melanie discussed their interests. On 25 May 2023, Melanie ran a charity race '
          'for mental health. They also discussed their future plans for summer break. Melanie expressed her '
          'excitement about the event. They also discussed their future plans for summer break. Melanie expressed '
          'her excitement about the event. They also discussed their future plans for summer break. Melanie expr')


def test_clean_summary_unwraps_json_drops_repeats_and_the_cut_sentence():
    out = clean_summary(LOOPED)
    assert out == ("Caroline and Melanie discussed their interests. On 25 May 2023, Melanie ran a charity race for "
                   "mental health. They also discussed their future plans for summer break. Melanie expressed her "
                   "excitement about the event.")


def test_clean_summary_keeps_chinese_and_refuses_empty():
    assert clean_summary("卡罗琳昨天去了支持小组。她很开心。她很开心。") == "卡罗琳昨天去了支持小组。 她很开心。"
    with pytest.raises(ValueError):
        clean_summary("   ")


def test_session_prompt_dates_children_and_shows_history():
    tz = ZoneInfo("Europe/Berlin")

    def mk(i, day, text, lv=Level.SEGMENT):
        return MemoryNode(id=f"n{i}", user_id="u", level=lv, window_key=f"w{i}",
                          span_start=datetime(2023, 5, day, 22, 30, tzinfo=UTC),
                          span_end=datetime(2023, 5, day, 22, 31, tzinfo=UTC), content=text, model_id="m",
                          prompt_version="p")

    msgs = session.build_messages([mk(1, 8, "Ann: hi")], [mk(2, 1, "Earlier summary", Level.SESSION)], tz)
    assert "[2023-05-09 (Tue)]" in msgs[-1].content  # 22:30 UTC is the next day in Berlin
    text = msgs[-1].content  # the history comes after the children (small models copied it when it came first)
    assert "Earlier summary" in text and text.index("Ann: hi") < text.index("Earlier summary")


def test_profile_render_one_line_per_person():
    result = profile.ProfileMemory(profiles=[profile.PersonProfile(person="Ann", profile="Likes tea. Likes tea."),
                                             profile.PersonProfile(person="Bob", profile="Runs marathons.")])
    assert profile.render(result) == "Ann: Likes tea.\nBob: Runs marathons."


def test_a_cjk_conversation_gets_a_language_note_and_english_stays_unchanged():
    from timem.prompts.common import language_note

    zh = "On 17 April 2024 (Wednesday) 20:00:\nMia: 你好！我最近在学中文，想用中文跟你聊天。\nAssistant: 你好，Mia！"
    assert language_note(zh) == "\n\nThe conversation is in Chinese: write the memory in Chinese, not English."
    assert "Japanese" in language_note("On 2 May 2024:\nKen: 東京で友達に会いました。とても楽しかったです。")
    assert "Korean" in language_note("On 2 May 2024:\nMinsu: 오늘 친구를 만났어요. 정말 즐거웠어요.")
    assert language_note("On 2 May 2024:\nMia: I met a friend in Lisbon. 你好.") == ""
    assert language_note("2024-05-02 12:00") == ""


def test_title_prompt_is_short_names_the_language_and_refuses_non_titles():
    from timem.prompts import title

    msgs = title.build_messages(Level.SESSION, "小明: 我上个月搬到了杭州。")
    assert "conversation session" in msgs[0].content
    assert msgs[-1].content.endswith("write the memory in Chinese, not English.")
    assert title.MAX_TOKENS <= 64
    assert title.render(title.NodeTitle(title="Title: Ann adopts a cat.")) == "Ann adopts a cat."
    with pytest.raises(ValueError):
        title.render(title.NodeTitle(title="word " * 40))


def test_level_prompt_registry_covers_l2_to_l5_with_one_interface():
    from timem.prompts.registry import level_prompts

    tz = ZoneInfo("UTC")
    kid = MemoryNode(id="n1", user_id="u", level=Level.WEEK, window_key="w", content="Ann moved to Porto.",
                     span_start=datetime(2023, 5, 1, tzinfo=UTC), span_end=datetime(2023, 5, 2, tzinfo=UTC),
                     model_id="m", prompt_version="p")
    prompts = level_prompts()
    assert sorted(prompts) == [Level.SESSION, Level.DAY, Level.WEEK, Level.PROFILE]
    versions = {lv: p.version for lv, p in prompts.items()}  # unchanged bytes keep their version (LLM cache)
    assert versions == {Level.SESSION: "l2-session-v6", Level.DAY: "l3-day-v6", Level.WEEK: "l4-week-v6",
                        Level.PROFILE: "l5-profile-v6"}
    for level, p in prompts.items():
        msgs = p.build([kid], [], tz, participants=["Ann"])
        assert p.level == level and [m.role for m in msgs] == ["system", "user"] and "Porto" in msgs[1].content
    assert "People to profile: Ann." in prompts[Level.PROFILE].build([kid], [], tz, participants=["Ann"])[1].content
    answer = prompts[Level.DAY].schema.model_validate({"summary": "Ann moved. Ann moved."})
    assert prompts[Level.DAY].render(answer) == "Ann moved."
