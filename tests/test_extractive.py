"""Extractive consolidation: deterministic, within the token cap, in the conversation's language, never
re-attributing an utterance; with the real MiniLM embedder and real DuckDB files, no LLM."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from helpers import ABSTRACTIVE, EXCHANGE, make_turn

from timem.config import DEFAULT_CONSOLIDATION_MODES, load_config
from timem.consolidation import extractive
from timem.consolidation.segments import turn_line
from timem.engine import MemoryEngine
from timem.errors import ConfigError
from timem.models import Level, MemoryNode, Role
from timem.store import Store
from timem.store.check import check_store
from timem.tokens import count_tokens

T0 = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)  # a Monday

ENGLISH = [  # (day offset, [(speaker, text)]) -- two people, facts among small talk
    (0, [("Ann", "Hey Bob! Long time no see."), ("Bob", "Hi Ann! How have you been?"),
         ("Ann", "I started a new job as a nurse at Lisbon General Hospital last week. It is hard but I love it."),
         ("Bob", "Wow, congrats! My sister Carla works there too, in the cardiology unit."),
         ("Ann", "Small world! I also adopted a cat named Miso yesterday."),
         ("Bob", "Cute. I have been training for the Porto marathon in October, 42 km!"),
         ("Ann", "Ann: that is what my coach would say. Good luck!"),  # a turn that starts like a speaker prefix
         ("Bob", "Thanks, see you soon.")]),
    (1, [("Bob", "I ran 30 km this morning, my longest run so far."), ("Ann", "Impressive! How do you feel?"),
         ("Bob", "Tired. My knee hurts a bit, so I booked a physio appointment for Friday."),
         ("Ann", "Good idea. Miso broke my favourite vase today, haha."),
         ("Bob", "Cats! Did you get the vase in Japan?"), ("Ann", "Yes, I bought it in Kyoto in 2019.")]),
    (9, [("Ann", "My hospital moved me to the night shift this week."), ("Bob", "Oh no, is that hard?"),
         ("Ann", "I sleep until noon now. I am thinking about taking a pottery class on Saturdays."),
         ("Bob", "I signed up for the Porto marathon officially today. Bib number 1187."),
         ("Ann", "Amazing, Bob!"), ("Bob", "Thanks!")]),
    (27, [("Bob", "I finished the half marathon in Braga in 1 hour 52 minutes."), ("Ann", "So fast!"),
          ("Ann", "I finally finished my first pottery bowl, it is blue."), ("Bob", "Send me a photo!")]),
]
CHINESE = [("小明", "我上个月搬到了杭州，现在在一家医院当护士。"), ("小红", "真好！工作累吗？"),
           ("小明", "很累，但是我很喜欢。我还养了一只叫团子的猫。"), ("小红", "我下周要去北京参加一个会议。"),
           ("小明", "祝你顺利！回来给我讲讲。"), ("小红", "好的，我会带烤鸭回来。")]


def _body(content: str) -> str:
    """A node's extractive selection: an L5 profile's facts block (memory items, timem.consolidation.profile_facts) is
    rendered from the items after the selection and is outside the extractive cap."""
    from timem.consolidation.profile_facts import FACTS_SEPARATOR

    body, sep, _ = content.rpartition(FACTS_SEPARATOR)
    return body if sep else content


def add_sessions(store: Store, user: str = "u", sessions=ENGLISH) -> None:
    for i, (day, turns) in enumerate(sessions):
        store.add_turns([make_turn(user, f"s{i}", j, sp, text, T0 + timedelta(days=day, minutes=j),
                                   Role.USER if sp == turns[0][0] else Role.OTHER)
                         for j, (sp, text) in enumerate(turns)])
        store.end_session(user, f"s{i}")


def extractive_engine(store, embedder, tmp_path, **kw) -> MemoryEngine:
    cfg = load_config(env={}, db_path=str(tmp_path / "x.duckdb"), llm_backend="none",
                      consolidation_mode="extractive", **kw)
    return MemoryEngine(cfg, store, embedder, None)


def test_without_an_llm_extractive_mode_writes_the_whole_tree(store, embedder, tmp_path):
    add_sessions(store)
    eng = extractive_engine(store, embedder, tmp_path, **EXCHANGE)  # 12 exchanges
    eng.consolidate("u", flush=True)
    counts = {lv: len(store.nodes("u", int(lv))) for lv in Level}
    assert counts == {Level.SEGMENT: 12, Level.SESSION: 4, Level.DAY: 4, Level.WEEK: 3, Level.PROFILE: 2}
    for n in store.nodes("u"):
        if n.level > 1:
            assert (n.mode, n.model_id, n.prompt_version) == ("extractive", "extractive", extractive.PROMPT_VERSION)
            assert n.content.strip() and n.history_ids == []
        else:
            assert n.mode == "verbatim"
    assert check_store(store, eng.config, "u") == []
    assert store.stats()["llm_calls"] == 0


def test_default_mode_without_an_llm_is_extractive_and_writes_the_whole_tree(store, embedder, tmp_path):
    add_sessions(store)
    cfg = load_config(env={}, db_path=str(tmp_path / "x.duckdb"), llm_backend="none")
    assert cfg.consolidation.consolidation_mode == DEFAULT_CONSOLIDATION_MODES["none"] == "extractive"
    MemoryEngine(cfg, store, embedder, None).consolidate("u", flush=True)
    assert {int(n.level) for n in store.nodes("u")} == {1, 2, 3, 4, 5}
    assert {n.mode for n in store.nodes("u") if n.level > 1} == {"extractive"}


def test_defaults_follow_the_backend_unless_set(tmp_path):
    db = str(tmp_path / "x.duckdb")
    local, remote = (load_config(env={}, db_path=db, llm_backend=b) for b in ("local", "openai"))
    assert (local.recall.gate, local.consolidation.consolidation_mode) == ("score", "extractive")
    assert (remote.recall.gate, remote.consolidation.consolidation_mode) == ("llm", "abstractive")
    forced = load_config(env={"TIMEM_GATE": "llm"}, db_path=db, llm_backend="local")
    assert forced.recall.gate == "llm" and forced.with_overrides(token_budget=500).recall.gate == "llm"
    assert local.with_overrides(llm_backend="openai").recall.gate == "score"  # a copy keeps its resolved values


def test_abstractive_mode_without_an_llm_still_writes_l1_only(store, embedder, tmp_path):
    add_sessions(store)
    cfg = load_config(env={}, db_path=str(tmp_path / "x.duckdb"), llm_backend="none", **ABSTRACTIVE)
    MemoryEngine(cfg, store, embedder, None).consolidate("u", flush=True)
    assert {int(n.level) for n in store.nodes("u")} == {1}


def test_same_input_gives_the_same_bytes(tmp_path, embedder):
    contents = []
    for run in range(2):
        s = Store(tmp_path / f"run{run}.duckdb", embedder.model_id, embedder.dim)
        add_sessions(s)
        extractive_engine(s, embedder, tmp_path).consolidate("u", flush=True)
        contents.append([(n.window_key, n.content, n.id) for n in s.nodes("u") if n.level > 1])
        s.close()
    assert contents[0] == contents[1]
    # the pure function too, called twice on the same children with a fresh embedder cache each time
    s = Store(tmp_path / "run0.duckdb", embedder.model_id, embedder.dim)
    children = s.nodes("u", 1)[:8]
    a, b = (extractive.extract(Level.SESSION, children, extractive.EmbeddingCache(embedder), 60, UTC,
                               speakers=["Ann", "Bob"]) for _ in range(2))
    assert a.encode() == b.encode()
    s.close()


@pytest.mark.parametrize("caps", [None, {2: 40, 3: 50, 4: 60, 5: 70}])
def test_every_memory_respects_its_levels_token_cap(store, embedder, tmp_path, caps):
    add_sessions(store)
    eng = extractive_engine(store, embedder, tmp_path, **({"extractive_caps": caps} if caps else {}))
    eng.consolidate("u", flush=True)
    upper = [n for n in store.nodes("u") if n.level > 1]
    assert {n.level for n in upper} == {2, 3, 4, 5}, upper  # every level above L1 was written (and so checked)
    for n in upper:
        cap = eng.config.consolidation.extractive_cap(n.level)
        assert 0 < count_tokens(_body(n.content)) <= cap, (n.level, n.content)


def test_a_single_utterance_longer_than_the_cap_is_cut_not_dropped(store, embedder, tmp_path):
    long = "I " + " ".join(f"visited town{i} with my friend{i}" for i in range(40)) + "."
    add_sessions(store, sessions=[(0, [("Ann", long), ("Bob", long.replace("I ", "We ", 1))])])
    extractive_engine(store, embedder, tmp_path, extractive_caps={2: 20}).consolidate("u", flush=True)
    l2 = store.nodes("u", 2)[0].content
    assert count_tokens(l2) <= 20 and l2.endswith("…") and l2.split(": ", 1)[1][:-1] in long


def _source_lines(store: Store, user: str) -> dict[str, list[str]]:
    """Speaker -> the texts of their turns as the L1 segments render them (relative dates resolved)."""
    out: dict[str, list[str]] = {}
    for t in store.turns(user):
        out.setdefault(t.speaker, []).append(turn_line(t, UTC).split(": ", 1)[1])
    return out


def test_no_sentence_is_attributed_to_another_speaker(store, embedder, tmp_path):
    add_sessions(store)
    extractive_engine(store, embedder, tmp_path).consolidate("u", flush=True)
    sources = _source_lines(store, "u")
    checked = 0
    for n in store.nodes("u"):
        if n.level == 1:
            continue
        for line in _body(n.content).splitlines():
            line = re.sub(r"^\d{1,2} [A-Z][a-z]{2}: ", "", line)  # L4/L5 date prefix
            speaker, _, text = line.partition(": ")
            assert speaker in sources, line
            # the (possibly joined) sentences all come from one turn of this very speaker
            assert any(text in src for src in sources[speaker]), (n.level, line)
            checked += 1
    assert checked > 20
    # the turn that itself starts with "Ann: " stays Ann's words spoken by Ann, never Bob's
    assert all("Bob: Ann:" not in n.content for n in store.nodes("u"))


def test_l5_profiles_each_participant_from_first_person_statements(store, embedder, tmp_path):
    add_sessions(store)
    store.add_turns([make_turn("u", "s9", 0, "Ann", "I want to learn Japanese next year.", T0 + timedelta(days=3)),
                     make_turn("u", "s9", 1, "Assistant", "I can help you find a course in Lisbon.",
                               T0 + timedelta(days=3, minutes=1), Role.ASSISTANT)])
    store.end_session("u", "s9")
    extractive_engine(store, embedder, tmp_path).consolidate("u", flush=True)
    may = next(n for n in store.nodes("u", 5) if n.window_key == "month:2023-05")
    speakers = [re.sub(r"^\d{1,2} [A-Z][a-z]{2}: ", "", ln).split(": ")[0] for ln in _body(may.content).splitlines()]
    assert set(speakers) == {"Ann", "Bob"}  # the assistant is not profiled
    assert speakers == sorted(speakers, key=lambda s: ["Ann", "Bob"].index(s))  # one block per person
    assert all(re.match(r"^\d{1,2} (May|Jun): ", ln) for ln in _body(may.content).splitlines())  # dated lines


def test_a_chinese_session_gives_chinese_extracts(store, embedder, tmp_path):
    add_sessions(store, sessions=[(0, CHINESE)])
    extractive_engine(store, embedder, tmp_path).consolidate("u", flush=True)
    sources = _source_lines(store, "u")
    for lv in (2, 3, 4, 5):
        content = _body(store.nodes("u", lv)[0].content)
        body = re.sub(r"^\d{1,2} [A-Z][a-z]{2}: ", "", content, flags=re.MULTILINE)
        body = re.sub(r"^(小明|小红): ", "", body, flags=re.MULTILINE)
        body = re.sub(r"\[=[^\]]*\]", "", body)
        han = len(re.findall(r"[\u4e00-\u9fff]", body))
        latin = len(re.findall(r"[A-Za-z]", body))
        assert han >= 10 and latin == 0, (lv, content)
        for line in content.splitlines():
            speaker, _, text = re.sub(r"^\d{1,2} [A-Z][a-z]{2}: ", "", line).partition(": ")
            assert any(text in src for src in sources[speaker]), line
    # the facts (moved to Hangzhou, a nurse) are kept although the lines have no capital letters
    assert "杭州" in store.nodes("u", 2)[0].content


def test_salience_prefers_facts_over_fillers_in_any_script():
    day = T0.date()

    def unit(text, sp="Ann"):
        return extractive.Unit(sp, text, day, (0, 0), 0)

    fact = extractive.salience(unit("I adopted a cat named Miso on 7 May 2023."), ["Ann"])
    filler = extractive.salience(unit("Thanks, see you soon!"), ["Ann"])
    question = extractive.salience(unit("How have you been lately, Ann?"), ["Ann"])
    zh_fact = extractive.salience(unit("我上个月搬到了杭州，现在在一家医院当护士。", "小明"), ["小明"])
    zh_filler = extractive.salience(unit("好的。", "小明"), ["小明"])
    assert fact > 0.5 > max(question, filler) and zh_fact > 0.3 > zh_filler


def test_units_skip_l1_headers_and_hybrid_titles_and_keep_speakers():
    def mk(content, lv=1, mode=None, nid="n"):
        return MemoryNode(id=nid, user_id="u", level=Level(lv), window_key="w", span_start=T0, span_end=T0,
                          content=content, model_id="verbatim" if lv == 1 else "x", prompt_version="p", mode=mode)

    l1 = mk("On 8 May 2023 (Monday) 13:00:\nAnn: I moved. Bob said hi.\nBob: Ann: no.")
    hybrid = mk("Moving and greetings\n\nAnn: I moved.", lv=2, mode="hybrid", nid="h")
    units = extractive.parse_units([l1, hybrid], ["Ann", "Bob"], UTC)
    assert [(u.speaker, u.text) for u in units] == [("Ann", "I moved."), ("Ann", "Bob said hi."), ("Bob", "Ann: no.")]
    week = mk("8 May: Ann: I moved.\n9 May: Bob: Hi.", lv=4, nid="w")
    units = extractive.parse_units([week], ["Ann", "Bob"], UTC)
    assert [(u.day.day, u.speaker) for u in units] == [(8, "Ann"), (9, "Bob")]


def test_config_validates_modes_levels_and_caps(tmp_path):
    cfg = load_config(env={"TIMEM_CONSOLIDATION_MODE": "extractive"})
    assert cfg.consolidation.mode_for(2) == "extractive" and cfg.consolidation.extractive_cap(3) == 160
    toml = tmp_path / "t.toml"
    toml.write_text('consolidation_mode = "hybrid"\n[level_modes]\n5 = "abstractive"\n[extractive_caps]\n2 = 90\n')
    cfg = load_config(toml, env={})
    cons = cfg.consolidation
    assert (cons.mode_for(2), cons.mode_for(5), cons.extractive_cap(2), cons.extractive_cap(5)) == (
        "hybrid", "abstractive", 90, 240)
    for bad in ({"consolidation_mode": "summary"}, {"level_modes": {1: "extractive"}}, {"extractive_caps": {2: 3}}):
        with pytest.raises(ConfigError, match="Fix the config file"):
            load_config(env={}, **bad)
