"""``timem bench``: LoCoMo / LongMemEval runs, recipe suites, recipe listing and result tables.

Mounted by :mod:`timem.cli` as ``app.add_typer(bench_app, name="bench")``. Errors derived from
``TimemError`` propagate to ``timem.cli.main``, which prints them as one line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from timem import cli_options
from timem.bench.recipes import RECIPES, SUITES, get_recipe
from timem.cli_options import LLM_BACKENDS, OptionValueError, SetOpt, one_of, reflow_help, setting_overrides, with_flags
from timem.config import Config, load_config
from timem.errors import ConfigError


def _checked_recipes(names: str | None) -> str | None:
    """``--recipe``'s and ``--recipes``' callback: every name must be a recipe (a usage error, exit code 2)."""
    for name in names.split(",") if names else []:
        try:
            get_recipe(name)
        except ConfigError as exc:
            raise OptionValueError(str(exc)) from exc
    return names


def _checked_judge(judge: str | None) -> str | None:
    """``--judge``'s callback: same, local, openai or openai:MODEL (a usage error, exit code 2)."""
    if judge not in (None, "", "same") and judge.partition(":")[0] not in ("local", "openai"):
        raise OptionValueError(f"unknown --judge {judge!r}; use one of same, local, openai, openai:MODEL, or omit it "
                               "for the answering model (same)")
    return judge


def _checked_dataset(dataset: str) -> str:
    """``timem bench suite``'s DATASET argument: locomo or longmemeval (a usage error, exit code 2)."""
    if dataset not in ("locomo", "longmemeval"):
        raise OptionValueError(f"DATASET must be locomo or longmemeval, got {dataset!r}")
    return dataset


bench_app = typer.Typer(add_completion=False, no_args_is_help=True,
                        help="Benchmarks: LoCoMo and LongMemEval with the paper's metrics, ablations and baselines.")

RecipeOpt = Annotated[str, typer.Option("--recipe", "--config", callback=_checked_recipes,
                                        help="recipe name (see `timem bench recipes`); "
                                                                   "--config is the old spelling, deprecated")]
SampleOpt = Annotated[str | None, typer.Option("--sample", "--samples", callback=cli_options.checked_sample,
                                               help="sample ids, e.g. conv-26,conv-30 (--samples is deprecated)")]
LlmOpt = Annotated[str | None, typer.Option(
    "--llm", callback=one_of("--llm", LLM_BACKENDS, omitted="the llm_backend setting"),
    help="answering / consolidating LLM: " + " | ".join(LLM_BACKENDS) + " (default: the llm_backend setting)")]
JudgeOpt = Annotated[str | None, typer.Option(
    "--judge", callback=_checked_judge,
    help="judge LLM: 'same' (default: the answering model), 'local', 'openai' or 'openai:MODEL'")]
JudgeUrlOpt = Annotated[str | None, typer.Option("--judge-base-url", help="OpenAI-compatible endpoint of the judge")]
RetrOpt = Annotated[bool, typer.Option("--retrieval-only", help="no answering or judging, no LLM at recall time")]
OutOpt = Annotated[Path | None, typer.Option("--out", help="run folder (default: a folder in bench/runs named "
                                                          "dataset-recipe-mode, e.g. locomo-timem-e2e)")]
DbOpt = Annotated[Path | None, typer.Option("--db", help="reuse this ingested DuckDB (default: one per data file, "
                                                          "granularity and model under cache_dir/bench)")]
SettingsOpt = Annotated[Path | None, typer.Option("--settings", help="TOML config file (the usual timem config)")]
MaxQOpt = Annotated[int | None, typer.Option(
    "--max-questions", callback=cli_options.at_least_one("--max-questions", omitted="every selected question"),
    help="stop after the first N selected questions")]
RayOpt = Annotated[str | None, typer.Option("--ray", help="one task per conversation/instance on Ray: 'local' (a 2-CPU "
                                                      "cluster started here), 'auto' (this machine's cluster) or "
                                                      "a cluster ADDRESS; see docs/cluster.md")]
WindowOpt = Annotated[int | None, typer.Option(
    "--window", callback=cli_options.at_least_one("--window", omitted="the model's window"),
    help="full-context: model window in tokens (default local_n_ctx, or 128000 for openai)")]
LimitOpt = Annotated[int | None, typer.Option(
    "--limit", callback=cli_options.at_least_one("--limit", omitted="every instance"),
    help="LongMemEval: the first N instances (default: all; not for LoCoMo: pick with --sample)")]


def _warn_old_spellings(argv: list[str] | None = None) -> None:
    """Warn on stderr about the deprecated ``--config`` (recipe) and ``--samples`` spellings."""
    args = sys.argv[1:] if argv is None else argv
    if "--config" in args:
        typer.echo("warning: `timem bench --config` is deprecated; use --recipe (--config will name a TOML file, "
                   "as in every other command; until then that is --settings)", err=True)
    if "--samples" in args:
        typer.echo("warning: --samples is deprecated; use --sample (as in every other command)", err=True)


def _judge_config(cfg: Config, judge: str | None, base_url: str | None) -> Config | None:
    if judge in (None, "", "same"):
        if base_url:
            raise OptionValueError("--judge-base-url needs --judge openai or openai:MODEL")
        return None
    backend, _, model = judge.partition(":")
    if backend not in ("local", "openai"):
        raise OptionValueError(f"--judge must be same, local, openai or openai:MODEL, got {judge!r}")
    return cfg.with_overrides(llm_backend=backend, openai_model=model or None, openai_base_url=base_url)


def _run(dataset: str, file: Path, recipe_name: str, *, samples: str | None = None, limit: int | None = None,
         max_questions: int | None, include_adversarial: bool = False, retrieval_only: bool, llm: str | None,
         judge: str | None, judge_base_url: str | None, out: Path | None, db: Path | None, window: int | None,
         sets: list[str] | None, settings: Path | None, ray: str | None = None) -> Path:
    from timem.bench.runner import RunSpec, run_benchmark

    _warn_old_spellings()
    recipe = get_recipe(recipe_name)
    base = load_config(settings, **with_flags(setting_overrides(sets), {"llm_backend": llm}))
    mode = "retrieval" if retrieval_only else "e2e"
    spec = RunSpec(dataset=dataset, data_file=file, recipe=recipe,  # type: ignore[arg-type]
                   out_dir=out or Path("bench/runs") / f"{dataset}-{recipe.name}-{mode}",
                   samples=cli_options.sample_ids(samples), limit=limit, max_questions=max_questions,
                   include_adversarial=include_adversarial, retrieval_only=retrieval_only, db=db, window=window,
                   judge_config=None if retrieval_only else _judge_config(base, judge, judge_base_url))
    with cli_options.samples_in_file(samples):  # an id the file does not hold: a usage error
        if ray:
            from timem.bench.distributed import run_on_ray

            res = run_on_ray(spec, base, ray)
        else:
            res = run_benchmark(spec, base)
    overall = res.table[-1]
    key = "evidence_recall" if retrieval_only else "judge_acc"
    val = overall.get(key)
    typer.echo(f"{recipe.name}: {overall['n']} questions, {key} "
               f"{'–' if val is None else f'{100 * val:.1f}%'}, Mem Len {overall['mem_len']} -> {res.out_dir}")
    return res.out_dir


@bench_app.command()
def locomo(file: Annotated[Path, typer.Argument(help="a LoCoMo JSON file (e.g. locomo10.json)")],
           samples: SampleOpt = None,
           recipe: RecipeOpt = "timem", llm: LlmOpt = None, judge: JudgeOpt = None, judge_base_url: JudgeUrlOpt = None,
           retrieval_only: RetrOpt = False, out: OutOpt = None,
           include_adversarial: Annotated[bool, typer.Option("--include-adversarial",
                                                             help="also category 5 (adversarial)")] = False,
           db: DbOpt = None, max_questions: MaxQOpt = None, window: WindowOpt = None, sets: SetOpt = None,
           settings: SettingsOpt = None, ray: RayOpt = None) -> None:
    """Run one recipe on a LoCoMo file (categories 1-4 by default); with --ray one task per conversation."""
    _run("locomo", file, recipe, samples=samples, max_questions=max_questions, include_adversarial=include_adversarial,
         retrieval_only=retrieval_only, llm=llm, judge=judge, judge_base_url=judge_base_url, out=out, db=db,
         window=window, sets=sets, settings=settings, ray=ray)


@bench_app.command()
def longmemeval(file: Annotated[Path, typer.Argument(help="a LongMemEval JSON file (e.g. longmemeval_s.json)")],
                limit: LimitOpt = None,
                recipe: RecipeOpt = "timem", llm: LlmOpt = None, judge: JudgeOpt = None,
                judge_base_url: JudgeUrlOpt = None, retrieval_only: RetrOpt = False, out: OutOpt = None,
                db: DbOpt = None, max_questions: MaxQOpt = None, window: WindowOpt = None, sets: SetOpt = None,
                settings: SettingsOpt = None, ray: RayOpt = None) -> None:
    """Run one recipe on a LongMemEval file (all types; abstention reported separately); with --ray one task
    per instance."""
    _run("longmemeval", file, recipe, limit=limit, max_questions=max_questions, retrieval_only=retrieval_only,
         llm=llm, judge=judge, judge_base_url=judge_base_url, out=out, db=db, window=window, sets=sets,
         settings=settings, ray=ray)


@bench_app.command()
def suite(dataset: Annotated[str, typer.Argument(
              help="the benchmark: locomo | longmemeval",
              callback=_checked_dataset)],
          file: Annotated[Path, typer.Argument(help="the benchmark's JSON file (LoCoMo or LongMemEval)")],
          name: Annotated[str, typer.Option("--suite", callback=one_of("--suite", tuple(SUITES)),
                                            help=f"one of {', '.join(SUITES)}")] = "no-llm",
          recipes: Annotated[str | None, typer.Option("--recipes", callback=_checked_recipes,
                                                      help="comma-separated recipes instead")] = None,
          out_root: Annotated[Path, typer.Option("--out-root", help="parent of the run folders")] = Path("bench/runs"),
          samples: SampleOpt = None,
          limit: LimitOpt = None,
          retrieval_only: RetrOpt = False, llm: LlmOpt = None, judge: JudgeOpt = None,
          judge_base_url: JudgeUrlOpt = None, db: DbOpt = None, max_questions: MaxQOpt = None,
          window: WindowOpt = None, sets: SetOpt = None, settings: SettingsOpt = None) -> None:
    """Run several recipes one after the other (one run folder each), then print the comparison table."""
    from timem.bench.report import compare_markdown

    cli_options.dataset_flags(dataset, limit=limit)  # before the first run, not after it
    names = recipes.split(",") if recipes else SUITES.get(name)
    if names is None:
        raise OptionValueError(f"unknown suite {name!r}; known: {', '.join(SUITES)}")
    mode = "retrieval" if retrieval_only else "e2e"
    dirs = []
    for r in names:
        dirs.append(_run(dataset, file, r, samples=samples, limit=limit, max_questions=max_questions,
                         retrieval_only=retrieval_only, llm=llm, judge=judge, judge_base_url=judge_base_url,
                         out=out_root / f"{dataset}-{r}-{mode}", db=_suite_db(r, db),
                         window=window, sets=sets, settings=settings))
    typer.echo(compare_markdown(dirs, "evidence_recall" if retrieval_only else "judge_acc"))


def _suite_db(name: str, db: Path | None) -> Path | None:
    """``--db`` is reused by recipes that read the store at its own granularity and unit, not by baselines,
    gran-N or unit-exchange."""
    r = get_recipe(name)
    own_layout = "l1_segment_exchanges" in r.overrides or "l1_unit" in r.overrides
    return db if r.uses_store and not own_layout else None


@bench_app.command("recipes")
def list_recipes() -> None:
    """List the recipes (name, ablation group, method, what it changes)."""
    for r in RECIPES.values():
        extra = json.dumps(r.overrides) if r.overrides else ""
        if r.complexity:
            extra += f" complexity={r.complexity}"
        if r.context_levels != (1, 2, 3, 4, 5):
            extra += f" context_levels={list(r.context_levels)}"
        typer.echo(f"{r.name:<18} {r.group:<22} {r.method:<13} {r.description} {extra}".rstrip())
    typer.echo("\nsuites: " + "; ".join(f"{k} = {','.join(v)}" for k, v in SUITES.items()))


RunDirsArg = Annotated[list[Path], typer.Argument(help="run folders (bench/runs/...)")]


@bench_app.command()
def report(run_dirs: RunDirsArg,
           metric: Annotated[str, typer.Option(help="summary column to tabulate")] = "evidence_recall",
           out: Annotated[Path | None, typer.Option("--out", help="write the markdown table here")] = None) -> None:
    """Tabulate finished runs side by side (one row per run, one column per category)."""
    from timem.bench.report import compare_markdown

    text = compare_markdown(run_dirs, metric)
    if out:
        out.write_text(text, encoding="utf-8")
    typer.echo(text)


@bench_app.command()
def publish(run_dirs: RunDirsArg,
            to: Annotated[Path, typer.Option("--to", help="results folder, e.g. bench/results/X")],
            title: Annotated[str, typer.Option(help="heading of the generated README")] = "Benchmark results",
            metrics: Annotated[str, typer.Option(help="comma-separated summary columns to tabulate")] =
            "evidence_recall,full_coverage,answer_in_context") -> None:
    """Copy finished runs' summaries and manifests into a results folder with comparison tables."""
    from timem.bench.report import publish as _publish

    typer.echo(f"wrote {_publish(run_dirs, to, title, metrics.split(','))}")


reflow_help(bench_app)

if __name__ == "__main__":  # `python -m timem.bench.cli ...` works before the command is mounted in timem.cli
    import sys

    from timem.errors import TimemError

    try:
        bench_app()
    except TimemError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(1)
