"""The shared sidebar: database, user, LLM status, consolidation mode, import a conversation, consolidate now.

* A database path is switched to only once it opens (:func:`timem.ui.state.open_context`): a bad path
  gives an error here and the studio stays on the store it had.
* An uploaded file is written to its own folder under :data:`UPLOAD_DIR` with its original name,
  imported, and deleted right after (:func:`staged_upload`); errors name the uploaded file, not the
  temporary copy. Erasing memories or a user also removes any leftover upload (:func:`remove_uploads`).
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import streamlit as st

from timem.consolidation.consolidator import NEEDS_LLM
from timem.datasets import DEMO_FILE
from timem.errors import ConfigError, ConsolidationIncomplete, InputError, TimemError
from timem.ids import check_service_id
from timem.models import CONSOLIDATION_MODES
from timem.ui import chat, jobs, state, welcome
from timem.ui.feedback import StreamlitProgress, flash, plural, user_errors

FORMATS = {"LoCoMo (JSON)": "locomo", "LongMemEval (JSON)": "longmemeval", "TiMem JSONL": "jsonl"}
UPLOAD_DIR = Path(tempfile.gettempdir()) / "timem-uploads"  #: staged uploads (deleted after each import)
REFUSED_UPLOADS = "sb_imp_refused"  #: session-state key: how many uploads were refused (names the next uploader)
_STATUS_ICON = {"ready": ":green[●]", "loaded": ":green[●]", "loads on first use": ":orange[●]", "off": ":gray[●]",
                "error": ":red[●]"}


def render(ctx: state.StudioContext) -> None:
    """Draw the sidebar for this run (inside ``st.sidebar``)."""
    with st.sidebar:
        _database(ctx)
        if ctx.engine is None:
            return
        _user(ctx)
        _llm(ctx)
        _counts(ctx)
        if jobs.current_job(ctx.engine) is not None:
            _job_status(ctx)
        st.markdown("**Consolidation**")
        if ctx.local is None:  # over a service: its mode, no imports
            mode = ctx.engine.config.consolidation.consolidation_mode
            st.caption(f"Mode: {MODE_HELP.get(mode, mode)} (the service's)")
            state.local_only(ctx, "Changing the mode", "start the service with TIMEM_CONSOLIDATION_MODE=… "
                                                       "`timem serve`.", quiet=True)
            state.local_only(ctx, "Importing a file", f"send its turns with `POST /v1/users/{ctx.user}/turns` "
                                                      "(docs/service.md).", quiet=True)
        else:
            mode = _mode(ctx)  # before the import, which consolidates in this mode
            if st.session_state.pop(welcome.DEMO_REQUEST, False):  # the Chat page's "Load the demo"
                with user_errors("Import failed"):
                    run_import(ctx, DEMO_FILE, "jsonl")
            with st.expander("Import a conversation", expanded=not ctx.engine.users()):
                _import(ctx)
        _consolidate(ctx, mode)


def _database(ctx: state.StudioContext) -> None:
    if ctx.service is not None or ctx.config.service.service_url:
        st.markdown("**Memory service**")
        if ctx.service is not None:
            st.caption(f"Connected to `{ctx.service.url}` as tenant `{ctx.service.tenant}`; no database file is "
                       "opened here.")
            state.local_only(ctx, "Switching databases", "run `timem studio --db FILE` on a file no service owns.",
                             quiet=True)
        if ctx.open_error:
            st.error(ctx.open_error, icon=":material/cloud_off:")
        return
    st.markdown("**Database**")
    if ctx.injected and ctx.local is not None:
        st.caption(f"`{ctx.local.db_path}` (fixed by the caller)")
        return
    files = state.known_db_files(ctx.config)
    current = str(ctx.config.store.db_path)
    st.selectbox("DuckDB file", files, index=files.index(current) if current in files else 0,
                 key="sb_db_choice", help="One file per deployment; created if missing.",
                 on_change=_request_db, args=("sb_db_choice",))
    st.text_input("…or another file", key="sb_db_other", placeholder="path/to/memories.duckdb",
                  on_change=_request_db, args=("sb_db_other",))
    failed = st.session_state.pop(state.DB_ERROR_KEY, None)
    if failed:
        st.error(failed, icon=":material/error:")
    if ctx.open_error:
        st.error(ctx.open_error)


def _request_db(key: str) -> None:
    """on_change of the database widgets: ask :func:`state.open_context` to switch (it does only if it opens)."""
    target = (st.session_state.get(key) or "").strip() or st.session_state.get("sb_db_choice")
    if target and target != st.session_state.get(state.DB_KEY):
        st.session_state[state.REQUEST_KEY] = target


def _user(ctx: state.StudioContext) -> None:
    users = ctx.engine.users()
    cur = ctx.user
    options = users if cur in users else [cur, *users]
    if st.session_state.get("sb_user") != cur:  # a switch made in code (import, new user) wins over the
        st.session_state["sb_user"] = cur        # widget's remembered value, set before the widget exists
    st.selectbox("User", options, key="sb_user", on_change=_picked_user,
                 help="Each user has their own Temporal Memory Tree (the partition key).")
    with st.popover("New user"), st.form("sb_new_user_form", border=False):  # a form: Enter submits it too
        new = st.text_input("User id", key="sb_new_user", placeholder="e.g. alice")
        submitted = st.form_submit_button("Use this user", key="sb_new_user_go")
        if submitted and not new.strip():
            st.error("Type a user id first, e.g. alice.")
        elif submitted:
            try:
                state.set_user(check_service_id(new.strip()))  # the memory service's rule, local files too
            except InputError as exc:  # not switched: the error says what a user id may hold
                st.error(exc.reason)
            else:
                chat.reset_event_time()
                st.rerun()


def _picked_user() -> None:
    """on_change of the user box: runs before the next script run, so the whole run sees the new user."""
    state.set_user(st.session_state["sb_user"])
    chat.reset_event_time()  # the chat's event time follows the new user's last turn


def _llm(ctx: state.StudioContext) -> None:
    status = ctx.llm_status()
    st.markdown(f"**LLM** {_STATUS_ICON.get(status, '')} {status}")
    st.caption(ctx.llm_label)
    if ctx.llm_error:
        st.warning(ctx.llm_error)
    elif not ctx.engine.has_llm:
        st.caption("Without an LLM: verbatim L1 segments, L2–L5 only in extractive mode, score gate, "
                   "no generated answers.")


def _counts(ctx: state.StudioContext) -> None:
    nodes = ctx.engine.nodes(ctx.user)
    per = {f"L{lv}": sum(1 for n in nodes if int(n.level) == lv) for lv in range(1, 6)}
    st.caption("Memories of this user: " + " · ".join(f"{k} {v}" for k, v in per.items()))


def _import(ctx: state.StudioContext) -> None:
    source = st.radio("Source", ["Bundled demo", "Upload a file", "File on this machine"], key="sb_imp_source",
                      horizontal=False)
    fmt = "jsonl"
    path: Path | None = None
    sample_ids: list[str] | None = None
    limit: int | None = None
    upload = None
    if source == "Bundled demo":
        st.caption("One user (`demo-mia`), 12 sessions over April–June 2024: two sessions on one day, one in "
                   "Chinese, preferences that change (coffee → tea, running → swimming).")
        path = DEMO_FILE
    else:
        label = st.selectbox("Format", list(FORMATS), key="sb_imp_fmt")
        fmt = FORMATS[label]
        if source == "Upload a file":
            # a refused upload is dropped from the box: the next run draws a new uploader (its key counts refusals)
            upload = st.file_uploader("Conversation file", type=["json", "jsonl"],
                                      key=f"sb_imp_file_{st.session_state.get(REFUSED_UPLOADS, 0)}")
        else:
            raw = st.text_input("Path", value="", key="sb_imp_path")
            path = Path(raw).expanduser() if raw.strip() else None
        name = upload.name if upload is not None else (path.name if path is not None else "")
        if name.lower().endswith(".jsonl") and fmt != "jsonl":
            st.info(f"{name} ends in .jsonl: LoCoMo and LongMemEval files are one JSON document; pick Format "
                    "'TiMem JSONL' for one turn per line.")
        if fmt == "locomo":
            ids = st.text_input("Sample ids (comma-separated, empty = all)", value="", key="sb_imp_ids")
            sample_ids = [s.strip() for s in ids.split(",") if s.strip()] or None
        if fmt == "longmemeval":
            limit = int(st.number_input("First N instances (0 = all)", 0, 10_000, 1, key="sb_imp_limit")) or None
    upper = True
    if not ctx.engine.has_llm and ctx.engine.config.consolidation.consolidation_mode in NEEDS_LLM:
        st.caption("No LLM: only L1 segments will be written (pick the extractive mode below for L2–L5).")
    elif ctx.engine.config.consolidation.consolidation_mode == "extractive":
        if ctx.local is not None and ctx.local.items_use_llm:
            st.caption("Extractive mode: L2–L5 are selected utterances (seconds); the LLM reads facts and preferences "
                       "from each closed session in the background (progress and Cancel below).")
        else:
            st.caption("Extractive mode: L2–L5 are selected utterances and facts are read by rules, no LLM call "
                       "(the demo: about half a minute on 2 cores; a LoCoMo conversation: about a minute).")
    else:
        upper = st.checkbox("Consolidate L2–L5 during the import", value=True, key="sb_imp_upper",
                            help="With the embedded 1.5B model this takes about a minute per session. Untick to "
                                 "import the L1 segments now and press 'Consolidate now' later.")
        mode = ctx.engine.config.consolidation.consolidation_mode
        if upper and ctx.config.llm.llm_backend == "local" and mode == "abstractive":
            st.caption("Embedded model: about a minute per session on 2 cores (a LoCoMo conversation: ~16 min). "
                       "Untick for the L1 segments in seconds.")
    busy = jobs.busy(ctx.engine)
    if busy:
        st.caption(f"Importing waits until '{busy.title}' has finished or is cancelled.")
    if st.button("Import", key="sb_imp_go", type="primary", disabled=(upload is None and path is None) or bool(busy)):
        with user_errors("Import failed"):
            if upload is None:
                run_import(ctx, path, fmt, sample_ids=sample_ids, limit=limit, upper_levels=upper)
            else:
                try:
                    with staged_upload(upload.name, upload.getvalue()) as staged:
                        run_import(ctx, staged, fmt, sample_ids=sample_ids, limit=limit, upper_levels=upper,
                                   display_name=upload.name)
                except TimemError:
                    st.session_state[REFUSED_UPLOADS] = st.session_state.get(REFUSED_UPLOADS, 0) + 1
                    raise


@contextmanager
def staged_upload(name: str, data: bytes) -> Iterator[Path]:
    """Write an uploaded file to a new folder under :data:`UPLOAD_DIR` (keeping its name), yield its path,
    and delete the folder afterwards, whatever happens (also on ``st.rerun``)."""
    folder = UPLOAD_DIR / secrets.token_hex(8)
    folder.mkdir(parents=True)
    try:
        path = folder / (Path(name).name or "upload.json")
        path.write_bytes(data)
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_uploads() -> None:
    """Delete every staged upload left under :data:`UPLOAD_DIR` (e.g. by a process killed mid-import)."""
    shutil.rmtree(UPLOAD_DIR, ignore_errors=True)


def run_import(ctx: state.StudioContext, path: Path | None, fmt: str, *, sample_ids: list[str] | None = None,
               limit: int | None = None, upper_levels: bool = True, display_name: str | None = None) -> None:
    """Load ``path`` (``fmt``: locomo / longmemeval / jsonl), ingest it with a progress bar, switch user.

    ``upper_levels=False`` writes L1 segments only (see :meth:`MemoryEngine.ingest`). ``display_name``
    (an uploaded file's own name) replaces ``path`` in error messages. Afterwards the chat's event time
    starts again from its defaults, so that it continues the imported conversation.

    Raises:
        InputError: no file, or malformed input (nothing is written then).
    """
    from timem.datasets import load_dataset

    engine = ctx.local
    if engine is None:
        raise ConfigError("importing needs the studio on a DuckDB file (`timem studio --db FILE`); over a memory "
                          "service send the turns with POST /v1/users/{user}/turns")
    if path is None or not Path(path).exists():
        raise InputError(f"no such file: {path}; pick or upload a conversation file")
    try:
        users = load_dataset(path, fmt, sample_ids=sample_ids, limit=limit, tz=ctx.tz,  # type: ignore[arg-type]
                             user_tz=ctx.config.time.user_tz, max_turn_chars=ctx.config.store.max_turn_chars)
    except InputError as exc:
        if not display_name:
            raise
        named = InputError(str(exc).replace(str(path), display_name))  # the message is already complete
        named.file, named.record, named.field = display_name, exc.record, exc.field
        raise named from exc
    total = sum(len(s.turns) for u in users for s in u.sessions)
    progress = StreamlitProgress(title=f"Importing {len(users)} user(s), {total} turns")
    background = upper_levels and jobs.slow_consolidation(engine)  # L1 now, L2-L5 in a background job
    try:
        report = engine.ingest(users, upper_levels=upper_levels and not background, progress=progress)
    except ConsolidationIncomplete as exc:  # everything else is stored: say what is missing, go on
        report = exc.report
        flash(f"Consolidation is incomplete: {exc}", "warning")
    progress.done("import finished")
    nodes = ", ".join(f"{k} {v}" for k, v in sorted(report.nodes_added.items())) or "no new memories"
    flash(f"Imported {', '.join(report.users)}: {report.turns_added} new turns; new memories: {nodes}."
          + (" L2–L5 are being consolidated in the background (progress in the sidebar); the pages show what "
             "is written so far." if background and report.users else ""))
    if background and report.users:
        jobs.start_consolidation(engine, ctx.lock, report.users, flush=True,
                                 title=f"Consolidating {', '.join(report.users)}")
    if report.users:
        state.set_user(report.users[0])
    chat.reset_event_time()
    st.rerun()


MODE_HELP = {"extractive": "extractive: the most informative utterances, verbatim (no LLM)",
             "hybrid": "hybrid: the same under a one-line LLM title",
             "abstractive": "abstractive: LLM summaries"}


def _mode(ctx: state.StudioContext) -> str:
    """The consolidation mode select; a change applies to the engine at once (new windows only)."""
    current = ctx.engine.config.consolidation.consolidation_mode
    if st.session_state.get("sb_mode") not in CONSOLIDATION_MODES:
        st.session_state["sb_mode"] = current
    mode = st.selectbox("Mode", list(CONSOLIDATION_MODES), key="sb_mode", format_func=lambda m: MODE_HELP[m],
                        help="How new L2–L5 memories are written (chat, import, 'Consolidate now'). A memory "
                             "that is re-consolidated after an edit keeps its own mode.")
    if mode != current and ctx.local is not None:
        ctx.local.set_consolidation_mode(mode)
    overrides = ctx.engine.config.consolidation.level_modes
    if overrides:
        st.caption("Per-level modes from the config: " + ", ".join(f"L{k} {v}" for k, v in sorted(overrides.items()))
                   + " (a change here applies to every level).")
    if not ctx.engine.has_llm and mode in NEEDS_LLM:
        st.caption(f"The {mode} mode needs an LLM; without one only L1 segments are written.")
    return mode


def _consolidate(ctx: state.StudioContext, mode: str) -> None:
    flush = st.checkbox("Also close open windows (flush)", key="sb_flush",
                        help="Consolidate the current session, day, week and month even though they are still open.")
    no_llm = not ctx.engine.has_llm and mode in NEEDS_LLM
    busy = jobs.busy(ctx.engine)
    if st.button("Consolidate now", key="sb_consolidate", disabled=no_llm or bool(busy),
                 help="needs an LLM (or the extractive mode)" if no_llm else None):
        if ctx.local is not None and jobs.slow_consolidation(ctx.local):
            with user_errors("Consolidation could not start"):
                jobs.start_consolidation(ctx.local, ctx.lock, [ctx.user], flush=flush,
                                         title=f"Consolidating {ctx.user}")
                st.rerun()
            return
        with user_errors("Consolidation failed"):
            progress = StreamlitProgress(title=f"Consolidating {ctx.user}")
            try:
                nodes = ctx.engine.consolidate(ctx.user, flush=flush, progress=progress)
            except ConsolidationIncomplete as exc:
                nodes = exc.written
                flash(f"Consolidation is incomplete: {exc}", "warning")
            progress.done(f"{plural(len(nodes), 'memory', 'memories')} written")
            flash(f"Consolidation wrote {plural(len(nodes), 'memory', 'memories')}"
                  + (f" ({', '.join(sorted({n.level.label for n in nodes}))})." if nodes else "."))
            st.rerun()


@st.fragment(run_every=2)
def _job_status(ctx: state.StudioContext) -> None:
    """The background job's progress on every page (refreshed every 2 s), with Cancel; its end once."""
    job = jobs.current_job(ctx.engine)
    if job is None:
        return
    if not job.finished:
        share = job.done_items / job.total if job.total else 0.0
        st.progress(min(1.0, share), text=f"{job.title} · {job.stage}: {job.done_items} / {job.total}")
        st.caption(f"{plural(len(job.written), 'memory', 'memories')} written so far; pages show them as they come. "
                   "Chat, imports and edits wait until the job ends.")
        if st.button("Cancel", key="sb_job_cancel", help="Stop before the next window; the rest stays due."):
            job.cancel()
        return
    if not job.reported:
        job.reported = True
        kind = "error" if job.error else "warning" if (job.cancelled or job.warning) else "success"
        flash(job.summary() + (f" {job.warning}" if job.warning else ""), kind)
        jobs.forget_job(ctx.engine)
        st.rerun(scope="app")  # writes are enabled again and the pages show the new memories
