"""Forget by text when the conversation said it in other words (a new-user trial: ``timem forget "I lived in
Berlin"`` matched nothing where ``timem forget "Berlin"`` found the segment, and said so only quietly). The request's
key words (its content words less its verbs, :mod:`timem.memory.forget_words`) reach it; "I like jazz" never reaches
every "I like …" line; an empty preview says that nothing matched and what to try."""

from __future__ import annotations

import pytest
from memory_scenario import extractive_engine, write
from test_cli import cli_env, run  # noqa: F401  (fixture)

from timem.datasets import load_dataset
from timem.memory.forget_words import request_words

ROWS = [
    ("s01", "Ana", "Berlin was home for five years before Lisbon.", "2024-03-01T09:00:00"),
    ("s02", "Ana", "I like hiking on Sundays.", "2024-03-02T09:00:00"),
    ("s03", "Ana", "I like the rain in autumn.", "2024-03-03T09:00:00"),
    ("s04", "Ana", "I played the cello as a child.", "2024-03-04T09:00:00"),
    ("s05", "Ana", "My brother visited Rome last May.", "2024-03-05T09:00:00"),
    ("s06", "Ana", "我在柏林待了五年。", "2024-03-06T09:00:00"),
]


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    return fake_embedder


@pytest.fixture()
def eng(tmp_path, store, embedder):
    engine = extractive_engine(tmp_path, store, embedder)
    f = write(tmp_path / "ana.jsonl", "ana", ROWS)
    engine.ingest(load_dataset(f, "jsonl", tz=engine.config.time.tz, user_tz=engine.config.time.user_tz))
    return engine


@pytest.mark.parametrize(("text", "key", "verbs"), [
    ("I lived in Berlin", ["Berlin"], ["lived"]),
    ("I used to live in Berlin", ["Berlin"], ["used", "live"]),
    ("I like jazz", ["jazz"], ["like"]),  # the thing liked is a key word: never every "I like …"
    ("I love to swim", ["swim"], ["love"]),  # so is the thing after "love to"
    ("I'm vegetarian", ["vegetarian"], []), ("I have a cat called Pixel", ["cat", "called", "Pixel"], []),
    ("I've been living in Berlin", ["Berlin"], ["living"]), ("I was born in Berlin", ["Berlin"], ["born"]),
    ("my sister Ana lives in Porto", ["sister", "Ana", "Porto"], ["lives"]),
    ("I didn't really like jazz", ["jazz"], ["like"]), ("Just moved to Porto", ["Porto"], ["moved"]),
    ("I lived in Berlin and worked at Siemens", ["Berlin", "Siemens"], ["lived", "worked"]),
    ("我以前住在柏林", ["柏林"], ["住"]), ("我喜欢爵士乐", ["爵士乐"], ["喜欢"]),
])
def test_a_requests_key_words_are_its_content_words_less_its_verbs(text, key, verbs):
    words = request_words(text)
    assert (list(words.key), list(words.verbs)) == (key, verbs)


@pytest.mark.parametrize(("text", "reached", "kept"), [
    ("I lived in Berlin", ["Berlin was home"], ["hiking", "rain", "cello", "Rome", "柏林"]),
    ("that I used to live in Berlin", ["Berlin was home"], ["hiking", "rain", "Rome"]),
    ("I used to play the cello", ["cello as a child"], ["Berlin", "hiking", "rain"]),
    ("my brother went to Rome", ["brother visited Rome"], ["Berlin", "hiking"]),
    ("我以前住在柏林", ["我在柏林待了五年"], ["Berlin was home", "hiking"]),
    ("I like jazz", [], ["hiking", "rain"]),  # not every "I like …"
])
def test_forget_by_text_reaches_what_was_said_in_other_words(eng, text, reached, kept):
    plan = eng.forget("ana", text)
    going = " | ".join(n.content for n in plan.segments)
    for r in reached:
        assert r in going, (text, going)
    for k in kept:
        assert k not in going, (text, going)


@pytest.mark.parametrize(("text", "said"), [
    ("I like jazz", "no memory holds 'jazz'. Check the spelling, or try a shorter request with the key word"),
    ("I lived in Hamburg", "no memory holds 'Hamburg'"),
    # each key word is held, but by different segments: the one fewest hold is the example
    ("my brother lived in Lisbon", "no memory holds all of its key words (brother, Lisbon). Try a shorter request "
                                   "with the key word, e.g. 'brother'"),
    ("我以前住在汉堡", "no memory holds '汉堡'"),
])
def test_an_empty_forget_preview_says_nothing_matched_and_what_to_try(eng, text, said):
    plan = eng.forget("ana", text)
    assert plan.empty
    assert plan.describe().startswith(f"Nothing matched {text!r}, so nothing was forgotten: ") and said in \
        plan.describe(), plan.describe()


def test_cli_forget_reaches_the_key_word_and_an_empty_match_is_an_error(cli_env):  # noqa: F811
    db = str(cli_env / "t.duckdb")
    path = write(cli_env / "ana.jsonl", "ana", ROWS[:3])
    assert run("ingest", str(path), "--format", "jsonl", "--llm", "none", "--mode", "extractive", "--db", db)[0] == 0
    code, out = run("forget", "I lived in Hamburg", "--user", "ana", "--db", db, "--yes")
    assert code == 1 and "error: nothing matched 'I lived in Hamburg', so nothing was forgotten" in out, out
    code, out = run("forget", "I lived in Berlin", "--user", "ana", "--db", db, "--yes")
    # the line and the assistant's reply to it (the exchange goes whole: timem.memory.forget_scope.replies)
    assert code == 0 and "Berlin was home" in out and "forgot 0 item(s) and 2 segment(s)" in out, out


def test_cli_forget_with_no_answer_to_read_says_to_pass_yes(cli_env, monkeypatch):  # noqa: F811
    """A new-user trial: `timem forget … </dev/null` exited 130, as if Ctrl-C had been pressed. With no terminal on
    stdin it is a usage error saying to pass --yes (exit code 2, as `timem erase`) and forgets nothing; at a terminal,
    Ctrl-D is an error saying the same (exit code 1), Ctrl-C is still 130, and "y" forgets."""
    import io
    import sys

    import timem.cli as cli
    from timem import cli_common

    try:
        from typer._click import termui
    except ImportError:  # pragma: no cover - an older typer on plain click
        from click import termui  # type: ignore[no-redef]

    db = str(cli_env / "t.duckdb")
    path = write(cli_env / "ana.jsonl", "ana", ROWS[:3])
    assert run("ingest", str(path), "--format", "jsonl", "--llm", "none", "--mode", "extractive", "--db", db)[0] == 0

    def main(*args: str) -> int:
        monkeypatch.setattr(sys, "argv", ["timem", "forget", "I lived in Berlin", "--user", "ana", "--db", db, *args])
        with pytest.raises(SystemExit) as exc:
            cli.main()
            raise SystemExit(0)
        return int(exc.value.code or 0)

    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # </dev/null
    assert main() == 2
    code, out = run("forget", "I lived in Berlin", "--user", "ana", "--db", db)  # the same through CliRunner
    out = " ".join(out.replace("│", " ").split())  # the runner draws a usage error in a box
    assert code == 2 and "stdin is not a terminal" in out and "pass --yes to forget without asking" in out, out
    monkeypatch.setattr(cli_common, "_stdin_is_terminal", lambda: True)  # at a terminal from here on
    assert main() == 1  # Ctrl-D at the prompt
    code, out = run("forget", "I lived in Berlin", "--user", "ana", "--db", db)
    assert code == 1 and "stdin ended before an answer" in out and "pass --yes to forget without asking" in out, out

    def ctrl_c(prompt: str) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(termui, "visible_prompt_func", ctrl_c)
    assert main() == 130
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # "y" typed at the prompt
    monkeypatch.setattr(termui, "visible_prompt_func", input)
    assert main() == 0
    assert run("forget", "I lived in Berlin", "--user", "ana", "--db", db, "--yes")[0] == 1  # gone: nothing matches
