"""Glue between ``timem/studio/app.py`` (the ``st.navigation`` router) and the thin page scripts in
``timem/studio/views/``.

Should Streamlit ever execute a page script *on its own*, without ``app.py`` and its sidebar (its
legacy multipage rule did that for a folder named ``pages/`` on a fresh server's deep link and on
AppTest runs after ``switch_page``), :func:`run_page` detects it and runs ``app.py`` instead, which
routes back to the same page with the sidebar and the shared context in place.
"""

from __future__ import annotations

import runpy
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

#: the studio's entry script inside the installed package (``timem studio`` runs it)
APP_PY = Path(__file__).resolve().parents[1] / "studio" / "app.py"
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
    """Body of every ``views/*.py``: ``render()`` under ``app.py``, else run ``app.py`` (see module doc)."""
    if routed():
        render()
    else:
        runpy.run_path(str(APP_PY), run_name="__main__")
