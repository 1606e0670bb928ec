"""Glue between ``app.py`` (the ``st.navigation`` router) and the thin page scripts in ``pages/``.

Because the page scripts live in a folder named ``pages/``, Streamlit applies its legacy
multipage rule (MPA v1) until ``st.navigation`` has been called once in the process: on the first
run of a fresh server opened on a deep link (e.g. ``/timeline``), and on every AppTest run after
``switch_page``, it executes the page script *on its own*, without ``app.py`` and its sidebar.
:func:`run_page` detects that and runs ``app.py`` instead, which routes back to the same page with
the sidebar and the shared context in place.
"""

from __future__ import annotations

import runpy
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

APP_PY = Path(__file__).resolve().parents[2] / "app.py"
_ROUTING = threading.local()


@contextmanager
def routing() -> Iterator[None]:
    """Mark this script run's thread as routed by ``app.py`` while the chosen page runs."""
    _ROUTING.active = True
    try:
        yield
    finally:
        _ROUTING.active = False


def routed() -> bool:
    """Whether ``app.py`` is running the current page (in this thread)."""
    return bool(getattr(_ROUTING, "active", False))


def run_page(render: Callable[[], None]) -> None:
    """Body of every ``pages/*.py``: ``render()`` under ``app.py``, else run ``app.py`` (see module doc)."""
    if routed():
        render()
    else:
        runpy.run_path(str(APP_PY), run_name="__main__")
