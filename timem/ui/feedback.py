"""Progress and error display for long studio work (ingest, consolidation, UMAP, chat answers)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import streamlit as st

from timem.errors import TimemError

T = TypeVar("T")
log = logging.getLogger("timem.studio")


class StreamlitProgress:
    """A :class:`timem.progress.Progress` callable that drives an ``st.progress`` bar.

    The engine calls it as ``progress(items, desc, total)`` once per stage (``"L1 segments"``,
    ``"L2 session"`` …); the bar shows ``"<desc>: i / total"`` and the stage names seen so far.

    Args:
        container: where to draw the bar (default: the main area); e.g. ``st.sidebar`` or a status box.
        title: a prefix for the text, e.g. the user being consolidated.
    """

    def __init__(self, container=None, title: str = "") -> None:
        self.container = container if container is not None else st
        self.bar = self.container.progress(0.0, text=f"{title} starting …".strip())
        self.title = title
        self.stages: list[str] = []

    def __call__(self, items: Iterable[T], desc: str, total: int) -> Iterator[T]:
        self.stages.append(desc)
        prefix = f"{self.title} · {desc}" if self.title else desc
        self.bar.progress(0.0, text=f"{prefix}: 0 / {total}")
        for i, item in enumerate(items, start=1):
            yield item
            self.bar.progress(min(1.0, i / max(total, 1)), text=f"{prefix}: {i} / {total}")
        if total == 0:
            self.bar.progress(1.0, text=f"{prefix}: nothing due")

    def done(self, text: str = "done") -> None:
        """Fill the bar and replace its text."""
        self.bar.progress(1.0, text=text)


@contextmanager
def user_errors(what: str = "") -> Iterator[None]:
    """Show a :class:`TimemError` raised in the block as ``st.error`` with its message (which says what to do).

    Other exceptions propagate (Streamlit shows them as a bug report), so bugs are never hidden.
    """
    try:
        yield
    except TimemError as exc:
        log.info("studio error during %s: %s", what or "an action", exc)
        st.error(f"{what + ': ' if what else ''}{exc}", icon=":material/error:")


def flash(message: str, kind: str = "success") -> None:
    """Queue a message shown once at the top of the next run (survives ``st.rerun``)."""
    st.session_state.setdefault("_timem_flash", []).append((kind, message))


def show_flashes() -> None:
    """Show and clear the queued :func:`flash` messages."""
    for kind, message in st.session_state.pop("_timem_flash", []):
        getattr(st, kind, st.info)(message)


def plural(n: int, one: str, many: str) -> str:
    """``"1 memory"`` / ``"3 memories"``: ``n`` with the word that agrees with it."""
    return f"{n} {one if n == 1 else many}"
