""":func:`timem.memory.history.stored_subject` runs for every statement the memory writer applies; it read all of the
user's items for each (O(items) rows into Python per statement). It now asks the store for one row per distinct
subject (:meth:`timem.store.items.ItemTables.item_subjects`) and gives the same spelling: case-insensitive
(``casefold``), the first stored spelling (``created_at``, then id), deleted items counted, the placeholders
``User`` / ``user`` never a spelling. Real DuckDB file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from timem.memory.history import PLACEHOLDER_SUBJECTS, stored_subject
from timem.models import MemoryItem

T = datetime(2024, 5, 1, 9, tzinfo=UTC)

#: (id, subject, created seconds after T, status): spellings of one person, placeholders, a deleted first spelling,
#: two created at the same instant (the id decides), and a name whose casefold differs from its lower case
ROWS = [("item-b", "Leo", 2, "active"), ("item-a", "leo", 2, "active"), ("item-c", "LEO", 3, "active"),
        ("item-d", "User", 0, "active"), ("item-e", "user", 1, "active"), ("item-f", "Mia", 5, "deleted"),
        ("item-g", "mia", 6, "active"), ("item-h", "Straße", 7, "active"), ("item-i", "STRASSE", 4, "active"),
        ("item-j", "Kai", 1, "active")]


def _old(store, user_id: str, subject: str) -> str:
    """The definition before: every item of the user read, matched in Python."""
    key = subject.casefold()
    known = [i for i in store.items(user_id, status=None)
             if i.subject.casefold() == key and i.subject not in PLACEHOLDER_SUBJECTS]
    return min(known, key=lambda i: (i.created_at, i.id)).subject if known else subject


@pytest.fixture(scope="session")
def embedder(fake_embedder):
    return fake_embedder


@pytest.fixture()
def filled(store, embedder):
    for iid, subject, sec, status in ROWS:
        item = MemoryItem(id=iid, user_id="leo", kind="fact", subject=subject, attribute="home city", value="Dublin",
                          event_time=T, valid_from=T, status=status, created_at=T + timedelta(seconds=sec))
        store.add_item(item, embedder.embed([item.label()])[0])
    other = MemoryItem(id="item-z", user_id="ann", kind="fact", subject="LEO", attribute="home city", value="Cork",
                       event_time=T, valid_from=T, created_at=T - timedelta(days=1))
    store.add_item(other, embedder.embed([other.label()])[0])
    return store


@pytest.mark.parametrize("asked", ["leo", "LEO", "Leo", "lEo", "user", "User", "USER", "mia", "MIA", "strasse",
                                   "STRASSE", "Straße", "kai", "nobody", ""])
def test_the_same_spelling_as_reading_every_item(filled, asked):
    assert stored_subject(filled, "leo", asked) == _old(filled, "leo", asked)


def test_the_spellings(filled):
    assert [stored_subject(filled, "leo", s) for s in ("LEO", "user", "MIA", "straße", "nobody")] == [
        "leo", "user", "Mia", "STRASSE", "nobody"]
    assert stored_subject(filled, "ann", "leo") == "LEO"  # another user's items are not looked at


def test_it_reads_no_item_rows(filled, monkeypatch):
    def refuse(*a, **kw):
        raise AssertionError("stored_subject read the user's items")

    monkeypatch.setattr(filled, "items", refuse)
    assert stored_subject(filled, "leo", "LEO") == "leo"
