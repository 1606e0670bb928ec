"""Studio state: the resolved config, the engine per DuckDB file, the current user, test injection.

* :func:`base_config` — :func:`timem.config.load_config` once per server process (``st.cache_resource``).
* :func:`open_context` — called once per script run by ``app.py``; returns a :class:`StudioContext`
  (config, engine, LLM label/status, a lock) and stores it for the page (:func:`current`).
* Tests inject a ready engine with ``at.session_state[ENGINE_KEY] = engine`` (AppTest) so the
  studio never loads the real model; the database selector is then fixed to that engine's file.
* Another DuckDB file is asked for with :data:`REQUEST_KEY`; :func:`open_context` switches to it only if
  it opens, else it stays on the current file and leaves the reason in :data:`DB_ERROR_KEY` for the
  sidebar (a bad path never poisons the session: every page keeps working).
* One DuckDB connection is not safe for concurrent use, so every script run holds
  :attr:`StudioContext.lock` (one per engine) while it touches the engine.
* With ``service.service_url`` set (``timem studio --service URL --key KEY``) the studio is a client of that
  memory service (:class:`timem.service.client.ServiceClient`, one per URL and key per server process) and never
  opens a DuckDB file; :attr:`StudioContext.local` is then ``None`` and the pages that need a local engine say so
  in one line (:func:`local_only`). Tests may inject a ``ServiceClient`` under :data:`ENGINE_KEY` too.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from timem.config import Config, load_config
from timem.engine import MemoryEngine
from timem.errors import ConfigError, InputError, LLMError, TimemError
from timem.ids import check_service_id
from timem.service.client import ServiceClient
from timem.studio_backend import StudioBackend
from timem.ui.feedback import flash

ENGINE_KEY = "timem_engine"  #: session-state key of an injected MemoryEngine or ServiceClient (tests)
DB_KEY = "timem_db_path"  #: session-state key of the chosen DuckDB file
USER_KEY = "timem_user"  #: session-state key of the current user id
REQUEST_KEY = "_timem_db_request"  #: session-state key of a DuckDB file asked for (switched to if it opens)
DB_ERROR_KEY = "_timem_db_error"  #: why the last requested DuckDB file could not be opened (shown once)
_CTX_KEY = "_timem_ctx"
_LOCK_KEY = "_timem_injected_lock"
DEFAULT_USER = "me"
_log = logging.getLogger(__name__)


@dataclass
class StudioContext:
    """What every page gets: settings, the engine and how the LLM is doing.

    ``engine`` is a local :class:`MemoryEngine` or a :class:`ServiceClient` (both :class:`StudioBackend`), or
    ``None`` when the store or service could not be opened (``open_error`` says why).
    ``llm_error`` is set when the configured LLM could not be prepared (the engine then runs
    without one: verbatim L1 only, score gate, no answers).
    """

    config: Config
    engine: StudioBackend | None
    llm_label: str
    llm_error: str | None = None
    open_error: str | None = None
    injected: bool = False
    lock: threading.RLock = field(default_factory=threading.RLock)

    @property
    def tz(self):
        return self.config.time.tz

    @property
    def local(self) -> MemoryEngine | None:
        """The engine when the studio opened the DuckDB file itself; ``None`` over a service (or none open)."""
        return self.engine if isinstance(self.engine, MemoryEngine) else None

    @property
    def service(self) -> ServiceClient | None:
        """The memory-service client when the studio is connected to a service, else ``None``."""
        return self.engine if isinstance(self.engine, ServiceClient) else None

    @property
    def user(self) -> str:
        """The current user id (partition key)."""
        return st.session_state.get(USER_KEY) or DEFAULT_USER

    def llm_status(self) -> str:
        """``"ready"``, ``"loaded"`` (local model in memory), ``"loads on first use"``, ``"off"`` or ``"error"``."""
        if self.llm_error:
            return "error"
        if self.engine is None or not self.engine.has_llm:
            return "off"
        path = self.engine.local_model_path
        if path is not None:
            from timem.llm import local

            loaded = any(str(k[0]) == path for k in local._LLAMAS)
            return "loaded" if loaded else "loads on first use"
        return "ready"


@st.cache_resource(show_spinner=False)
def base_config() -> Config:
    """Settings resolved once per server process (defaults < timem.toml < TIMEM_* env)."""
    return load_config()


@dataclass
class _Opened:
    engine: MemoryEngine
    llm_error: str | None
    lock: threading.RLock
    #: loads the embedder, the planner's centroids and the tokenizer (:meth:`MemoryEngine.warm_recall`)
    warming: threading.Thread | None = None


@st.cache_resource(show_spinner="Opening the memory store …")
def _open_engine(db_path: str, _config: Config) -> _Opened:
    """One engine per DuckDB file per server process. A failing LLM setup falls back to no LLM. What every recall
    needs loads in a background thread meanwhile (:func:`_warm_recall`): the pages draw at once, and the first chat
    message does not wait 3.5-9 s for it (it waits only for what is left)."""
    try:
        opened = _Opened(MemoryEngine.open(_config), None, threading.RLock())
    except (ConfigError, LLMError) as exc:
        opened = _Opened(MemoryEngine.open(_config, with_llm=False), str(exc), threading.RLock())
    opened.warming = threading.Thread(target=_warm_recall, args=(opened.engine,), name="timem-recall-warm",
                                      daemon=True)
    opened.warming.start()
    return opened


def _warm_recall(engine: MemoryEngine) -> None:
    try:
        engine.warm_recall()
    except TimemError as exc:  # the first recall loads it again and shows the error on its page
        _log.warning("loading the embedder for recall failed: %s", exc)


@st.cache_resource(show_spinner="Opening the database to compare with …")
def _open_comparison(db_path: str, _config: Config) -> _Opened:
    """A second, LLM-free engine per DuckDB file, for side-by-side recall on another database."""
    return _Opened(MemoryEngine.open(_config, with_llm=False), None, threading.RLock())


def comparison_context(ctx: StudioContext, db: str) -> StudioContext:
    """The context of another existing DuckDB file ``db`` to recall from beside ``ctx`` (no LLM there:
    its recall uses the score gate or none). ``ctx`` itself when ``db`` is ``ctx``'s own file.

    Raises:
        InputError: ``db`` does not exist or is a folder (nothing is created).
        StoreError: it cannot be opened (e.g. built with another embedder).
    """
    path = Path(db).expanduser()
    if path.resolve() == Path(ctx.config.store.db_path).expanduser().resolve():
        return ctx
    if not path.is_file():
        raise InputError(f"no database at {db}; give the path of an existing .duckdb file (e.g. one built with "
                         "`timem ingest … --mode extractive --db other.duckdb`)")
    config = ctx.config.with_overrides(db_path=path)
    opened = _open_comparison(str(path.resolve()), config)
    return StudioContext(config, opened.engine, "no LLM (comparison)", lock=opened.lock)


def _describe(config: Config) -> str:
    from timem.llm.factory import describe_llm

    try:
        return describe_llm(config)
    except TimemError as exc:  # e.g. an unknown local model name
        return f"unknown ({exc})"


def open_context() -> StudioContext:
    """Build this run's :class:`StudioContext` (cached engine or the injected one) and remember it.

    A requested DuckDB file (:data:`REQUEST_KEY`) becomes the session's file only once it opened; if it
    cannot be opened the reason goes to :data:`DB_ERROR_KEY` and the current file stays open.
    """
    injected = st.session_state.get(ENGINE_KEY)
    if injected is not None:
        lock = st.session_state.setdefault(_LOCK_KEY, threading.RLock())
        if isinstance(injected, ServiceClient):
            model = f"{injected.llm_label} (on the service)"
        else:
            model = injected.llm.model_id if injected.llm is not None else "no LLM"
        ctx = StudioContext(injected.config, injected, model, injected=True, lock=lock)
    elif base_config().service.service_url:
        ctx = _service_context(base_config())
    else:
        base = base_config()
        current = st.session_state.get(DB_KEY) or str(base.store.db_path)
        requested = st.session_state.pop(REQUEST_KEY, None)  # popped first: a failure cannot repeat every run
        ctx = None
        if requested and requested != current:
            try:
                folder = Path(requested).expanduser().parent
                if not folder.is_dir():  # a typo must not create folders and an empty store
                    raise InputError(f"the folder {folder} does not exist")
                ctx = _context_for(base, requested)
                st.session_state[DB_KEY] = requested
            except TimemError as exc:
                st.session_state[DB_ERROR_KEY] = f"Cannot open {requested}: {exc} The studio stays on {current}."
        if ctx is None:
            try:
                ctx = _context_for(base, current)
            except TimemError as exc:
                ctx = StudioContext(base.with_overrides(db_path=Path(current)), None, _describe(base),
                                    open_error=str(exc))
    if not st.session_state.get(USER_KEY):
        _initial_user(ctx)
    st.session_state[_CTX_KEY] = ctx
    return ctx


def _context_for(base: Config, db: str) -> StudioContext:
    """The context over DuckDB file ``db`` (opened once per server process).

    Raises:
        InputError: ``db`` is a folder.
        StoreError: the file cannot be opened or created (see :class:`timem.store.Store`).
    """
    path = Path(db).expanduser()
    if path.is_dir():
        raise InputError(f"{db} is a folder, not a DuckDB file; give a file path such as {path / 'memories.duckdb'}")
    config = base.with_overrides(db_path=Path(db))
    label = _describe(config)
    opened = _open_engine(str(path.resolve()), config)
    ctx = StudioContext(config, opened.engine, label, llm_error=opened.llm_error, lock=opened.lock)
    if opened.llm_error:
        ctx.llm_label = f"{label} — unavailable, running without an LLM"
    return ctx


@dataclass
class _Connected:
    client: ServiceClient
    lock: threading.RLock


@st.cache_resource(show_spinner="Connecting to the memory service …")
def _connect(url: str, key_digest: str, _config: Config) -> _Connected:
    """One client per service URL and key per server process (the key is part of the cache key only as a digest).

    Raises:
        ConfigError: no key. ServiceUnreachableError: nothing answers at the URL. AuthError: the key is refused.
    """
    return _Connected(ServiceClient.from_config(_config), threading.RLock())


def _service_context(base: Config) -> StudioContext:
    """The context over the memory service of ``base.service`` (no DuckDB file is opened); if it cannot be
    reached, now or on any later run (one request per run checks), a context without engine whose ``open_error``
    says why (the next run tries again)."""
    url = base.service.service_url or ""
    key = base.service.service_key.get_secret_value() if base.service.service_key is not None else ""
    try:
        conn = _connect(url, hashlib.sha256(key.encode()).hexdigest(), base)
    except TimemError as exc:
        return StudioContext(base, None, "the service's", open_error=str(exc))
    client = conn.client
    try:  # the service may have stopped since the client connected: say so on every page, not in a traceback
        client.users()
    except TimemError as exc:
        return StudioContext(client.config, None, f"{client.llm_label} (on the service)", open_error=str(exc))
    return StudioContext(client.config, client, f"{client.llm_label} (on the service)", lock=conn.lock)


def local_only(ctx: StudioContext, what: str, instead: str, *, quiet: bool = False) -> bool:
    """``True`` when ``ctx`` has a local engine; otherwise show one line saying that ``what`` is not available
    while the studio is connected to a service, and ``instead`` (the command that does it), and return ``False``.
    ``quiet``: a caption (the sidebar) instead of an info box (a page)."""
    if ctx.local is not None:
        return True
    where = f" ({ctx.service.url})" if ctx.service is not None else ""
    line = f"{what} is not available when the studio is connected to a memory service{where}: {instead}"
    if quiet:
        st.caption(f":material/cloud_off: {line}")
    else:
        st.info(line, icon=":material/cloud_off:")
    return False


def _initial_user(ctx: StudioContext) -> None:
    """First run of a session: ``?user=`` in the URL, else the store's first user, else ``"me"``. A ``?user=`` that
    is no stored user and breaks the memory service's id rule (:func:`timem.ids.check_service_id`) is not opened:
    the error is shown once (:func:`timem.ui.feedback.flash`) and the first user is opened instead."""
    wanted = (st.query_params.get("user") or "").strip()
    users = ctx.engine.users() if ctx.engine is not None else []
    fallback = users[0] if users else DEFAULT_USER
    if wanted and wanted not in users:
        try:
            check_service_id(wanted)
        except InputError as exc:
            flash(f"{exc.reason}. Opened user {fallback!r} instead.", "error")
            wanted = ""
    set_user(wanted or fallback)


def current() -> StudioContext:
    """The context ``app.py`` opened for this run (opens one if a page runs on its own)."""
    ctx = st.session_state.get(_CTX_KEY)
    return ctx if ctx is not None else open_context()


def known_db_files(config: Config) -> list[str]:
    """DuckDB files worth offering: the configured one and ``*.duckdb`` in the working directory and ``data/``."""
    found = {str(config.store.db_path)}
    for folder in (Path.cwd(), Path.cwd() / "data"):
        if folder.is_dir():
            found |= {str(p.relative_to(Path.cwd())) for p in folder.glob("*.duckdb")}
    return sorted(found)


def set_user(user_id: str) -> None:
    """Make ``user_id`` the current user (strip spaces; empty -> the default)."""
    st.session_state[USER_KEY] = user_id.strip() or DEFAULT_USER
