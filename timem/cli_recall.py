"""``timem ask`` and ``timem eval-recall``: questions answered from a DuckDB file, one at a time or a benchmark's
questions scored offline (gold-evidence coverage), and the ``--at`` question time they read."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

import typer

from timem import cli_options
from timem.cli_common import (
    ComplexityOpt,
    ConfigOpt,
    DbOpt,
    GateOpt,
    LlmOpt,
    UserOpt,
    _complexity,
    _config,
    _engine,
    _gate,
)
from timem.cli_options import OptionValueError, SetOpt, setting_overrides
from timem.config import Config
from timem.errors import InputError, NotFoundError
from timem.progress import terminal_progress


def _parse_time(at: str | None, cfg: Config, user: str) -> datetime | None:
    """``--at`` as an aware time that keeps the offset written (the zone the question's "yesterday" is read in,
    :func:`timem.tree.windows.speaker_zone`); a time without one is wall-clock time in ``user``'s zone.

    Raises:
        OptionValueError: unreadable, or outside the years 1-9999 in UTC.
    """
    if at is None:
        return None
    from dateutil import parser as dateparser

    from timem.tree.windows import to_utc

    try:
        parsed = dateparser.parse(at)
    except (ValueError, OverflowError) as exc:
        raise OptionValueError(_unreadable_at(at)) from exc
    zone = cfg.time.tz_for(user)
    try:
        to_utc(parsed, zone)  # in range in UTC too
        return parsed if parsed.tzinfo is not None and parsed.utcoffset() is not None else parsed.replace(tzinfo=zone)
    except (ValueError, OverflowError) as exc:  # e.g. 9999-12-31T23:00-05:00 is past year 9999 in UTC
        raise OptionValueError(f"--at {at!r} is outside the years 1-9999 in UTC; give a time within them") from exc


def _checked_at(at: str | None) -> str | None:
    """``--at``'s callback: a text that reads as no date and time is a usage error as the command line is parsed."""
    if at is not None:
        from dateutil import parser as dateparser

        try:
            dateparser.parse(at)
        except (ValueError, OverflowError) as exc:
            raise OptionValueError(_unreadable_at(at)) from exc
    return at


def _unreadable_at(at: str) -> str:
    return (f"cannot read --at {at!r} as a date and time; use e.g. 2023-08-20T10:00 (in the user's zone unless it "
            "has an offset)")


def ask(question: Annotated[str, typer.Argument(help="the question to answer from the user's memory")],
        user: UserOpt, db: DbOpt = None, llm: LlmOpt = None,
        show_trace: Annotated[bool, typer.Option("--trace", help="print the whole recall trace")] = False,
        as_json: Annotated[bool, typer.Option("--json", help="answer and trace as JSON")] = False,
        at: Annotated[str | None, typer.Option("--at", callback=_checked_at, help="question time, e.g. "
                                               "2023-08-20T10:00 (default: the user's latest event)")] = None,
        complexity: ComplexityOpt = None, gate: GateOpt = None,
        recall_only: Annotated[bool, typer.Option("--recall-only", help="no answer; no LLM needed")] = False,
        config: ConfigOpt = None, set_: SetOpt = None) -> None:
    """Answer a question from the user's memory; the recall trace is saved and shown with --trace."""
    from timem.recall.render import render_trace
    from timem.tree.windows import speaker_zone

    sets = setting_overrides(set_)
    if recall_only:  # no LLM, whatever --set llm_backend says
        sets.pop("llm_backend", None)
    cfg = _config(config, db, sets, llm_backend="none" if recall_only else llm)
    nodes = {}
    with _engine(cfg, with_llm=not recall_only, must_exist=True) as eng:
        qt = _parse_time(at, cfg, user) or eng.default_question_time(user)  # None: unknown user, recall / ask raise
        fixed, gate_mode = _complexity(complexity), _gate(gate)
        eng.warm_recall()  # the embedder's load (3-5 s) before the recall, not in its trace's plan time (a trial)
        try:
            if recall_only:
                res, text = eng.recall(user, question, qt, complexity=fixed, gate=gate_mode), None
            else:
                out = eng.ask(user, question, qt, complexity=fixed, gate=gate_mode)
                res, text = out.recall, out.answer
        except InputError as exc:  # the engine's "field 'query'" is this command's QUESTION argument
            if exc.field != "query":
                raise
            raise InputError(str(exc).removesuffix(" (field 'query')") + " (the QUESTION argument)") from exc
        if show_trace:
            nodes = {n.id: n for n in eng.nodes(ids=[c.node_id for c in res.trace.candidates], status=None)}
    if as_json:
        typer.echo(json.dumps({"answer": text, "trace": res.trace.model_dump(mode="json")}, indent=2,
                              ensure_ascii=False))
        return
    if text is not None:
        typer.echo(f"answer: {text}")
    if show_trace or recall_only:
        zone = speaker_zone(qt, cfg.time.tz_for(user))  # the trace in the zone the question was read in
        typer.echo(render_trace(res.trace, nodes=nodes, tz=zone) if show_trace else res.context
                   or "(no memory passed the gate for this question; --trace shows why)")
    typer.echo(f"(trace {res.trace.trace_id}; Mem Len {res.trace.context_tokens} tokens)")


def eval_recall(file: Annotated[Path, typer.Argument(help="the benchmark file whose users were ingested, with its "
                                                         "questions and gold evidence")],
                fmt: Annotated[Literal["locomo", "longmemeval"], typer.Option(
                    "--format", metavar="FORMAT", help="the file's format: locomo | longmemeval")] = "locomo",
                sample: Annotated[str | None, typer.Option(
                    "--sample", callback=cli_options.checked_sample,
                    help="sample id(s), comma-separated (default: all)")] = None,
                db: DbOpt = None, as_json: Annotated[bool, typer.Option(
                    "--json", help="print the per-user results as JSON instead of the tables")] = False,
                complexity: ComplexityOpt = None, gate: GateOpt = None,
                config: ConfigOpt = None, set_: SetOpt = None) -> None:
    """Offline recall quality: gold-evidence coverage and answer-in-context per category, mean Mem Len.

    The users must already be ingested into --db (`timem ingest`); no LLM is used (an LLM planner or gate
    in the settings falls back to the centroid planner and the score gate, noted in each trace).
    """
    from timem.datasets import load_dataset
    from timem.recall.evaluate import recall_tables, scored_questions
    from timem.recall.options import RecallOptions

    sets = setting_overrides(set_)
    sets.pop("llm_backend", None)  # no LLM, whatever --set llm_backend says
    cfg = _config(config, db, sets, llm_backend="none")
    with cli_options.samples_in_file(sample):
        users = load_dataset(file, fmt, sample_ids=cli_options.sample_ids(sample), tz=cfg.time.tz,
                             user_tz=cfg.time.user_tz)
    results = []
    with _engine(cfg, with_llm=False, must_exist=True) as eng:
        missing = [u.user_id for u in users if u.user_id not in eng.users()]
        if missing:  # before any work, so that nothing is computed and thrown away
            db = cfg.store.db_path
            raise NotFoundError(f"{', '.join(missing)} not in {db}; ingest first (`timem ingest FILE "
                                f"--format {fmt} --sample {','.join(missing)} --db {db}`) or pass --sample")
        for u in users:
            qt = eng.default_question_time(u.user_id)
            qs = [q if q.question_time else q.model_copy(update={"question_time": qt})
                  for q in scored_questions(u.questions)]  # the bar counts only these (no adversarial ones)
            results.append(eng.evaluate_recall(u.user_id, terminal_progress(qs, u.user_id, len(qs)), RecallOptions(
                complexity=_complexity(complexity), gate=_gate(gate),
                participants=tuple(u.participants), persist=False)))
    if as_json:
        typer.echo(json.dumps([{k: v for k, v in r.items() if k != "questions"} for r in results], indent=2))
        return
    typer.echo(recall_tables(results))


def register(app: typer.Typer) -> None:
    """Add ``ask`` and ``eval-recall`` to the ``timem`` app (after the :mod:`timem.cli_store` commands, before
    ``model``: the order of ``timem --help``)."""
    app.command()(ask)
    app.command("eval-recall")(eval_recall)
