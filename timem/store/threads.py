"""One DuckDB cursor per thread over a store's connection, and the gate a compaction closes (issue 26 §4).

A DuckDB connection must not be used by two threads at once, but ``connection.cursor()`` opens another connection
to the same database (same file, same loaded extensions) that a second thread may use in parallel. DuckDB runs each
cursor's statements in their own transaction (multi-version concurrency: a reader sees what committed before its
statement, or before its ``BEGIN``), so readers never wait for a writer. Two *writers* on two cursors may conflict
on the same rows, so :class:`~timem.store.duckdb_store.Store` keeps one writer lock (``Store.writer``) around every
write transaction.

* :class:`Cursors` hands each thread its cursor (the thread that opened the store too: the connection itself runs
  no statement), and the per-thread transaction state (:class:`ThreadState`). Cursors of threads that ended stay
  open until the store closes or compacts (a service's thread pool reuses its threads, so they are few).
* :class:`Gate` is a readers-writer gate: a compaction (``Store.compact``: the connection is closed and the file
  replaced) waits for the readers inside ``shared()`` to finish and keeps new ones out until it has reopened.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import duckdb

from timem.errors import StoreError


@dataclass
class ThreadState:
    """One thread's place in the store: inside a write transaction, or inside a read snapshot."""

    in_tx: bool = False
    in_snapshot: bool = False
    #: the nodes version read inside the current snapshot (it cannot change there), once read
    snapshot_version: tuple[str | None] | None = None


class Gate:
    """Readers-writer gate: any number of ``shared()`` holders, or one ``exclusive()`` holder. A waiting
    ``exclusive()`` keeps new readers out (no starvation). Not re-entrant for ``exclusive()``; ``shared()`` may nest
    in a thread only while no exclusive holder waits (the store's readers do not nest it)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the gate open for reading during the block."""
        with self._cond:
            while self._writer or self._waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Wait until no reader is inside, and keep readers out during the block."""
        with self._cond:
            self._waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


class Cursors:
    """Per-thread DuckDB cursors over one connection ``root``.

    Raises:
        StoreError: from :meth:`current` after :meth:`close` (the store is closed; open it again).
    """

    def __init__(self, root: duckdb.DuckDBPyConnection) -> None:
        self.gate = Gate()
        self._lock = threading.Lock()
        self._local = threading.local()
        self._root: duckdb.DuckDBPyConnection | None = root
        self._opened: list[duckdb.DuckDBPyConnection] = []
        self._generation = 0

    def state(self) -> ThreadState:
        """The calling thread's transaction state."""
        st = getattr(self._local, "state", None)
        if st is None:
            st = self._local.state = ThreadState()
        return st

    def current(self) -> duckdb.DuckDBPyConnection:
        """The calling thread's cursor (opened on first use)."""
        loc = self._local
        con: duckdb.DuckDBPyConnection | None = getattr(loc, "con", None)
        if con is not None and loc.generation == self._generation:
            return con
        with self._lock:
            root = self._root
            if root is None:
                raise StoreError("the store is closed; open the database file again")
            con = root.cursor()  # also for the opening thread: the connection itself runs no statement, so
            self._opened.append(con)  # closing the cursors (a compaction) leaves no transaction open on it
            loc.con, loc.generation = con, self._generation
        return con

    @property
    def threads(self) -> int:
        """How many threads have a cursor open."""
        return len(self._opened)

    def close_cursors(self) -> None:
        """Close the cursors of every thread (not the connection): each thread opens a fresh one on its next use.
        Only while no other thread reads (inside ``gate.exclusive()``)."""
        with self._lock:
            for con in self._opened:
                con.close()
            self._opened.clear()
            self._generation += 1

    def close(self) -> None:
        """Close every cursor and the connection (idempotent)."""
        with self._lock:
            for con in self._opened:
                con.close()
            self._opened.clear()
            if self._root is not None:
                self._root.close()
            self._root = None
            self._generation += 1

    def reopen(self, root: duckdb.DuckDBPyConnection) -> None:
        """Use the new connection ``root`` (after a compaction); every thread gets a fresh cursor on its next
        use."""
        with self._lock:
            self._root = root
            self._generation += 1
