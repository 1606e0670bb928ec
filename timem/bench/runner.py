"""The benchmark runner: ingest (through the LLM cache) -> retrieve -> answer -> judge -> score -> write.

One synchronous code path for every dataset, recipe and mode. A run folder holds:

* ``questions.jsonl`` — one record per question (question, gold, hypothesis, category, recalled
  context, Mem Len, evidence coverage, trace id, judge label, F1, ROUGE-L, LLM calls and tokens);
* ``summary.csv`` / ``summary.md`` — per category (:mod:`timem.bench.report`); ``plots.html``;
* ``manifest.json`` — provenance (:mod:`timem.bench.manifest`);
* ``timing.jsonl`` / ``latency.csv`` — wall times per question and stage.

Everything but the two timing files is a pure function of the data, the code, the config and the
LLM answers, so re-running a finished run from the LLM cache rewrites them byte for byte (trace
ids are derived from the run and the question; token counts are cl100k counts of the messages).

Protocol: LoCoMo categories 1–4 (5 with ``include_adversarial``; its gold becomes "not mentioned"
and its judge rule asks for a refusal); LongMemEval all types, abstention flagged. LoCoMo has no
question date: the time of the conversation's last turn is used. ``retrieval_only`` never calls an
LLM at recall time (centroid planner, score gate) and skips answering and judging.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from timem.bench import report
from timem.bench.baselines import FullContext, TurnRetriever
from timem.bench.judge import judge_answer
from timem.bench.manifest import build_manifest, config_record, sha256_file
from timem.bench.metrics import answer_in_context, coverage, date_in_context, evidence_ids, rouge_l, token_f1
from timem.bench.recipes import Recipe
from timem.bench.retrieval import FlatRetriever, Retrieved, TimemRetriever, level_counts
from timem.bench.spec import Dataset as Dataset
from timem.bench.spec import RunResult as RunResult
from timem.bench.spec import RunSpec as RunSpec
from timem.bench.spec import question_time as question_time
from timem.bench.spec import select_questions as select_questions
from timem.config import Config
from timem.consolidation.segments import cut_segments
from timem.datasets import load_dataset
from timem.datasets.base import ImportedUser, Question
from timem.embed.protocol import Embedder
from timem.engine import MemoryEngine
from timem.errors import TimemError
from timem.llm.client import own_cache
from timem.llm.protocol import LLMClient
from timem.models import Level
from timem.progress import terminal_progress
from timem.prompts import answer as answer_prompt
from timem.recall.answer_check import check_answer
from timem.recall.recording import RecordingLLM
from timem.recall.trace import LLMCall
from timem.store import open_store
from timem.store.ports import MemoryStore

LLMFactory = Callable[[Config, MemoryStore], LLMClient | None]
Retriever = TimemRetriever | FlatRetriever | FullContext | TurnRetriever
NOT_MENTIONED = "Not mentioned in the conversation"
_NO_SHORT_GOLD = {"single-session-preference"}


class BenchError(TimemError):
    """A benchmark run cannot proceed as asked (the message says what to change)."""


def _default_llm_factory(config: Config, store: MemoryStore) -> LLMClient | None:
    from timem.llm.factory import make_llm

    return make_llm(config, store)


def resolve_config(base: Config, recipe: Recipe, retrieval_only: bool) -> tuple[Config, list[str]]:
    """``base`` with the recipe's overrides; retrieval-only swaps the LLM planner / gate for offline ones."""
    cfg = base.with_overrides(**recipe.overrides)
    notes: list[str] = []
    if retrieval_only and cfg.recall.planner == "llm" and recipe.complexity is None:
        cfg = cfg.with_overrides(planner="centroid")
        notes.append("retrieval-only: LLM planner replaced by the centroid planner")
    if retrieval_only and cfg.recall.gate == "llm" and recipe.method == "timem":
        cfg = cfg.with_overrides(gate="score")
        notes.append("retrieval-only: LLM gate replaced by the score gate")
    return cfg, notes


def llm_label(config: Config) -> str:
    if config.llm.llm_backend == "none":
        return "none"
    name = config.llm.openai_model if config.llm.llm_backend == "openai" else (
        Path(config.llm.local_model_path).stem if config.llm.local_model_path else config.llm.local_model)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def modes_label(config: Config) -> str:
    """``""`` when L2-L5 are abstractive (the names of databases made before modes existed), else e.g.
    ``"-extractive"`` or ``"-hybrid-hybrid-hybrid-abstractive"`` (the modes of L2..L5)."""
    modes = [config.consolidation.mode_for(lv) for lv in (2, 3, 4, 5)]
    if set(modes) == {"abstractive"}:
        return ""
    return "-" + (modes[0] if len(set(modes)) == 1 else "-".join(modes))


def upper_levels_need_llm(config: Config) -> bool:
    """Whether consolidating L2-L5 in the configured modes calls an LLM (extractive alone does not)."""
    return any(config.consolidation.mode_for(lv) in ("hybrid", "abstractive") for lv in (2, 3, 4, 5))


def default_db_path(config: Config, dataset: str, data_sha: str, ingest_llm: bool) -> Path:
    """One database per dataset file, L1 granularity, L1 mode, consolidating model (``none``: no LLM) and
    consolidation modes (:func:`modes_label`)."""
    label = llm_label(config) if ingest_llm else "none"
    cons = config.consolidation
    unit = "g" if cons.l1_unit == "exchange" else "t"  # "g": the name files had before turn units existed
    name = (f"{dataset}-{data_sha[:12]}-{unit}{cons.l1_segment_exchanges}-{cons.l1_mode}-{label}"
            f"{modes_label(config)}.duckdb")
    return Path(config.store.cache_dir) / "bench" / name


def check_l1_layout(store: MemoryStore, user: ImportedUser, config: Config) -> None:
    """Refuse a store whose L1 segments were cut at another granularity or in another L1 mode."""
    existing = store.nodes(user_id=user.user_id, level=int(Level.SEGMENT))
    if not existing:
        return
    size, unit = config.consolidation.l1_segment_exchanges, config.consolidation.l1_unit
    expected = {f"segment:{seg[0].id}" for s in user.sessions for seg in cut_segments(s.turns, unit, size)}
    foreign = [n.window_key for n in existing if n.window_key not in expected]
    if foreign:
        raise BenchError(f"{store.path} holds L1 segments of {user.user_id} cut at another granularity than "
                         f"l1_unit={unit}, l1_segment_exchanges={size} (e.g. {foreign[0]}); use another "
                         "--db (each granularity needs its own database) or leave --db out.")
    verbatim = all(n.model_id == "verbatim" for n in existing)
    if config.consolidation.l1_mode == "llm" and verbatim:
        raise BenchError(f"{store.path} holds verbatim L1 segments but l1_mode is 'llm'; use another --db.")
    if config.consolidation.l1_mode == "verbatim" and not verbatim:
        raise BenchError(f"{store.path} holds LLM-written L1 segments but l1_mode is 'verbatim'; use another --db.")


def _score(spec: RunSpec, user: ImportedUser, q: Question, r: Retrieved) -> dict[str, Any]:
    """Evidence coverage and answer-in-context of one retrieval (see :mod:`timem.bench.metrics`)."""
    ref = {t.id: t.source_ref for t in user.turns}
    sess = {t.id: t.session_id.split("#")[0] for t in user.turns}
    lme = spec.dataset == "longmemeval"
    gold = list(q.extra.get("evidence_turns", [])) if lme else evidence_ids(q.evidence)
    covered, recall_ = coverage(gold, [ref.get(t) for t in r.turn_ids])
    _, tree_recall = coverage(gold, [ref.get(t) for t in r.tree_turn_ids])
    out: dict[str, Any] = {"evidence": gold, "covered": covered, "evidence_recall": recall_,
                           "full_coverage": None if not gold else float(len(covered) == len(gold)),
                           "tree_evidence_recall": tree_recall}
    if lme:
        out["session_evidence"] = list(q.evidence)
        out["session_recall"] = coverage(list(q.evidence), [sess.get(t) for t in r.tree_turn_ids])[1]
    short_gold = not (q.extra.get("abstention") or q.extra.get("adversarial")
                      or str(q.category) in _NO_SHORT_GOLD)
    out["answer_in_context"] = (float(answer_in_context(q.answer, r.context))
                                if short_gold and q.answer.strip() else None)
    has_date = date_in_context(q.answer, r.context) if short_gold else None
    out["date_in_context"] = None if has_date is None else float(has_date)
    return out


def run_benchmark(spec: RunSpec, base_config: Config, *, embedder: Embedder | None = None,
                  llm_factory: LLMFactory = _default_llm_factory, progress: bool = True) -> RunResult:
    """Run one recipe on one dataset file and write the run folder (see the module docstring).

    Raises:
        BenchError: the store lacks what the recipe needs, or holds another L1 layout.
        InputError: the dataset file is malformed.
        LLMError: an LLM call failed (re-running resumes from the LLM cache).
    """
    recipe = spec.recipe
    cfg, notes = resolve_config(base_config, recipe, spec.retrieval_only)
    notes = [*spec.notes, *notes]
    data_sha = sha256_file(spec.data_file)
    users = load_dataset(spec.data_file, spec.dataset,
                         sample_ids=spec.samples if spec.dataset in ("locomo", "longmemeval") else None,
                         limit=spec.limit if spec.dataset == "longmemeval" else None, tz=cfg.time.tz)
    items = select_questions(users, spec)
    if not items:
        raise BenchError("no questions selected; check --samples / --limit / --include-adversarial")
    run_users = list(dict.fromkeys(u.user_id for u, _ in items))
    users = [u for u in users if u.user_id in run_users]
    if embedder is None:
        from timem.embed.minilm import MiniLMEmbedder

        embedder = MiniLMEmbedder(batch_size=cfg.embedding.embed_batch_size, backend=cfg.embedding.embed_backend,
                                  cache_dir=cfg.store.cache_dir)
    ingest_llm_needed = recipe.uses_store and ((recipe.needs_upper_levels and upper_levels_need_llm(cfg))
                                               or cfg.consolidation.l1_mode == "llm")
    db_path = spec.db or default_db_path(cfg, spec.dataset, data_sha, ingest_llm_needed)
    if spec.retrieval_only and ingest_llm_needed and cfg.llm.llm_backend == "none" and spec.db is None:
        raise BenchError(f"recipe {recipe.name!r} needs L2-L5 memories (an LLM at ingest); pass --llm local/openai "
                         "to consolidate them, TIMEM_CONSOLIDATION_MODE=extractive (no LLM), or --db with a "
                         "database ingested with an LLM.")
    spec.out_dir.mkdir(parents=True, exist_ok=True)
    existed = Path(db_path).exists()
    store = open_store(db_path, embedder.model_id, embedder.dim, working_set_mb=cfg.store.working_set_mb,
                       duckdb_memory_mb=cfg.store.duckdb_memory_mb)
    try:
        reused = sorted(set(run_users) & set(store.users())) if existed and recipe.uses_store else []
        if reused and progress:  # said, not silent (the manifest stays byte-identical across re-runs)
            print(f"note: reusing the memory tree of {', '.join(reused)} in {db_path} (built by an earlier run; "
                  "only new turns are ingested); pass --db with a new file to rebuild", file=sys.stderr)
        want_llm = not spec.retrieval_only or (ingest_llm_needed and cfg.llm.llm_backend != "none")
        llm = llm_factory(cfg, store) if want_llm else None
        if not spec.retrieval_only and llm is None:
            raise BenchError("an end-to-end run needs an answering LLM; pass --llm local or --llm openai, "
                             "or --retrieval-only")
        judge_llm: LLMClient | None = None
        answering: tuple[LLMClient, LLMClient] | None = None  # (answering LLM, judge); None: retrieval-only
        if not spec.retrieval_only:
            judge_llm = llm_factory(spec.judge_config, store) if spec.judge_config is not None else None
            if spec.judge_config is None and llm is not None:
                judge_llm = own_cache(llm, "judge")  # the answer prompts' shared prefix stays evaluated
                notes.append("the judge is the answering model itself (pass --judge for an independent judge)")
            if llm is None or judge_llm is None:
                raise BenchError("the judge's settings give no LLM (llm_backend none); pass --judge local or "
                                 "--judge openai")
            answering = (llm, judge_llm)
        if recipe.uses_store:
            _ingest(store, embedder, llm if ingest_llm_needed else None, cfg, users, recipe)
        retriever = _retriever(spec, cfg, store, embedder, llm, data_sha)
        rows, timings = _loop(spec, cfg, items, retriever, answering, progress)
        node_models = sorted({f"L{int(n.level)} {n.model_id} {n.prompt_version} {n.mode}" for u in run_users
                              for n in store.nodes(user_id=u)}) if recipe.uses_store else []
        manifest = build_manifest(
            dataset=spec.dataset, data_file=str(spec.data_file), data_sha256=data_sha,
            selection={"samples": spec.samples, "limit": spec.limit, "max_questions": spec.max_questions,
                       "categories": sorted({1, 2, 3, 4} | ({5} if spec.include_adversarial else set()))
                       if spec.dataset == "locomo" else "all"},
            n_questions=len(rows), mode="retrieval-only" if spec.retrieval_only else "end-to-end",
            recipe=recipe.model_dump(mode="json"), config=config_record(cfg.with_overrides(db_path=Path(db_path))),
            models={"embedder": embedder.model_id, "answer_llm": None if answering is None else answering[0].model_id,
                    "judge_llm": judge_llm.model_id if judge_llm else None, "memory_nodes": node_models},
            db=str(db_path), window=spec.window,
            protocol={"question_time": "dataset question date; LoCoMo: time of the conversation's last turn",
                      "token_budget": cfg.recall.token_budget, "judge_temperature": 0.0},
            notes=notes)
    finally:
        store.close()
    table = _write(spec, rows, timings, manifest)
    return RunResult(spec.out_dir, table, manifest, rows)


def _ingest(store: MemoryStore, embedder: Embedder, llm: LLMClient | None, cfg: Config, users: list[ImportedUser],
            recipe: Recipe) -> None:
    for u in users:
        check_l1_layout(store, u, cfg)
    MemoryEngine(cfg, store, embedder, llm).ingest(users, flush=True, progress=terminal_progress)
    if recipe.needs_upper_levels:
        missing = [u.user_id for u in users if level_counts(store, u.user_id)[2] == 0]
        if missing:
            raise BenchError(f"recipe {recipe.name!r} needs L2-L5 memories but {store.path} has none for "
                             f"{missing[:3]}; ingest with an LLM (--llm local/openai) or pass --db with such a "
                             "database.")


def _retriever(spec: RunSpec, cfg: Config, store: MemoryStore, embedder: Embedder, llm: LLMClient | None,
               data_sha: str) -> Retriever:
    m = spec.recipe.method
    if m == "timem":
        run_key = f"{spec.dataset}|{data_sha[:12]}|{spec.recipe.name}|{'ret' if spec.retrieval_only else 'e2e'}"
        engine = MemoryEngine(cfg, store, embedder, None if spec.retrieval_only else llm)  # the facade recalls
        return TimemRetriever(engine, cfg, spec.recipe, run_key)
    if m == "flat":
        return FlatRetriever(store, embedder, cfg, spec.recipe)
    if m == "full-context":
        window = spec.window or (128000 if cfg.llm.llm_backend == "openai" else cfg.llm.local_n_ctx)
        spec.window = window
        return FullContext(cfg, window)
    return TurnRetriever(embedder, cfg, spec.recipe)


def _retrieve(retriever: Retriever, user: ImportedUser, q: Question, qt: datetime) -> Retrieved:
    if isinstance(retriever, (TimemRetriever, FlatRetriever)):
        return retriever.retrieve(user.user_id, q.question_id, q.question, qt, user.participants)
    return retriever.retrieve(user, q.question, qt)


def _loop(spec: RunSpec, cfg: Config, items: list[tuple[ImportedUser, Question]], retriever: Retriever,
          answering: tuple[LLMClient, LLMClient] | None,
          progress: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Retrieve (and, with ``answering`` = ``(answering LLM, judge)``, answer and judge) each question.

    Returns ``(rows, timings)``: one row per question (also appended to ``questions.jsonl`` as it goes) and its
    latencies in ms.
    """
    rows: list[dict[str, Any]] = []
    timings: list[dict[str, Any]] = []
    out = (spec.out_dir / "questions.jsonl").open("w", encoding="utf-8")
    shown = terminal_progress(items, spec.recipe.name, len(items)) if progress else items  # plain lines off a TTY
    try:
        for user, q in shown:
            qt = question_time(user, q)
            lat: dict[str, float] = {}
            t0 = time.perf_counter()
            r = _retrieve(retriever, user, q, qt)
            lat["recall"] = round((time.perf_counter() - t0) * 1000, 1)
            adversarial = spec.dataset == "locomo" and int(q.category) == 5
            gold = NOT_MENTIONED if adversarial else q.answer
            row: dict[str, Any] = {
                "question_id": q.question_id, "user_id": user.user_id, "category": q.category,
                "category_name": (report.LOCOMO_NAMES.get(int(q.category), "") if spec.dataset == "locomo"
                                  else str(q.category)),
                "abstention": bool(q.extra.get("abstention", False)), "question": q.question,
                "question_time": qt.isoformat(), "gold": gold}
            if adversarial:
                row["adversarial_answer"] = q.answer
            hyp = judgement = checked = None
            answer_calls: list[LLMCall] = []
            judge_calls: list[LLMCall] = []
            if answering is not None:
                llm, judge_llm = answering
                rec = RecordingLLM(llm)
                t0 = time.perf_counter()
                msgs = answer_prompt.build_messages(q.question, r.context, qt.astimezone(cfg.time.tz))
                hyp, checked = check_answer(rec.complete(msgs, purpose="answer", user_id=user.user_id).strip(),
                                            q.question, r.context, [], None, cfg.recall.answer_check)
                lat["answer"] = round((time.perf_counter() - t0) * 1000, 1)
                answer_calls = rec.calls
                jrec = RecordingLLM(judge_llm)
                t0 = time.perf_counter()
                judgement = judge_answer(jrec, spec.dataset, q, hyp, user_id=user.user_id)
                lat["judge"] = round((time.perf_counter() - t0) * 1000, 1)
                judge_calls = jrec.calls
            calls = [*r.llm_calls, *answer_calls]
            row.update({
                "hypothesis": hyp,
                "judge_label": judgement.label if judgement else None,
                "judge_correct": judgement.correct if judgement else None,
                "judge_rule": judgement.rule if judgement else None,
                "judge_raw": judgement.raw if judgement else None,
                "f1": round(token_f1(hyp, gold), 4) if hyp is not None else None,
                "rouge_l": round(rouge_l(hyp, gold), 4) if hyp is not None else None,
                **_score(spec, user, q, r),
                "mem_len": r.mem_len, "context": r.context, "complexity": r.complexity, "gate": r.gate_applied,
                "level_counts": r.level_counts, "truncated": None if r.truncated is None else float(r.truncated),
                "kept_turns": r.kept_turns, "trace_id": r.trace_id,
                "llm_calls": len(calls), "llm_tokens": sum((c.prompt_tokens or 0) + (c.completion_tokens or 0)
                                                           for c in calls),
                "judge_calls": len(judge_calls),
                "judge_tokens": sum((c.prompt_tokens or 0) + (c.completion_tokens or 0) for c in judge_calls),
                "notes": [*r.notes, *([checked] if checked else [])]})
            lat["total"] = round(sum(lat.values()), 1)
            rows.append(row)
            timings.append({"question_id": q.question_id, "latency_ms": lat})
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.flush()
    finally:
        out.close()
    return rows, timings


def _write(spec: RunSpec, rows: list[dict[str, Any]], timings: list[dict[str, Any]],
           manifest: dict[str, Any]) -> list[dict[str, Any]]:
    d = spec.out_dir
    table = report.summarize(rows, spec.dataset)
    (d / "summary.csv").write_text(report.to_csv(table), encoding="utf-8")
    (d / "summary.md").write_text(report.summary_markdown(table, manifest), encoding="utf-8")
    (d / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    report.write_plots(d / "plots.html", table, rows, f"{spec.dataset} · {spec.recipe.name} · {manifest['mode']}")
    (d / "timing.jsonl").write_text("".join(json.dumps(t) + "\n" for t in timings), encoding="utf-8")
    (d / "latency.csv").write_text(report.latency_table(timings), encoding="utf-8")
    return table
