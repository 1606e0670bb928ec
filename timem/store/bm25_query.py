"""A BM25 query's stemmed terms without a DuckDB query per recall (issue 26 §3): the file's tokenizer replayed in
Python for the characters of most chat text, the extension's Porter stems kept per word.

:func:`timem.store.bm25.query_termids` tokenises and stems a query in SQL and joins it with ``bm25_dict``: ~3–5 ms a
query on this CPU, more as the dictionary grows (~8 ms at 60k terms), twice per recall. On printable ASCII, common
typographic marks and Latin-1 letters (:data:`CHARACTERS`) the file's ``bm25_tokenize`` macro is a map of single
characters: ``lower`` and ``strip_accents`` change a letter (``É`` → ``e``), and the rest either stays or separates
words (the macro's punctuation class and ``\\s+``). :class:`QueryWords` learns that map once per file from the macro
itself (one query over ~200 characters, each between two letters), so its words are the macro's. Stems come from
Snowball's Porter stemmer, the extension's own (:func:`stems`). Text with any other character (CJK, emoji, control
characters) goes the SQL way.

The term ids are then read from the user's in-memory postings (:attr:`timem.store.memory_postings.Postings.by_term`),
not from ``bm25_dict``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import duckdb

#: the characters replayed in Python: printable ASCII, the whitespace a message holds, and common typographic and
#: Latin-1 letters (each kept only if the file's macro treats it as one character that stays, changes or separates)
CHARACTERS = "".join(chr(c) for c in range(32, 127)) + "\t\n\r" + "’‘“”–—…•·°€£¥×÷" + "".join(
    chr(c) for c in range(0xC0, 0x100) if c not in (0xD7, 0xF7))
_local = threading.local()


class QueryWords:
    """The file's ``bm25_tokenize`` over text of :data:`CHARACTERS`, replayed in Python (module docstring)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        probes = sorted(set(CHARACTERS) - {"a", "b"})
        got = con.execute("SELECT c, bm25_tokenize('a' || c || 'b') FROM (SELECT unnest(?::VARCHAR[]) AS c)",
                          [probes]).fetchall()
        table: dict[str, str] = {}
        for c, words in got:
            words = [w for w in words if w]
            if words == ["a", "b"]:
                table[c] = " "  # a separator: the punctuation class or whitespace
            elif len(words) == 1 and words[0][:1] == "a" and words[0][-1:] == "b":
                middle = words[0][1:-1]  # what lower() and strip_accents() make of it inside a word
                if not any(x.isspace() for x in middle) and (middle or not c.isspace()):
                    table[c] = middle
        # the whitespace str.split splits on must separate here too, or nothing is replayed
        self.exact = all(table.get(c) == " " for c in " \t\n\r")
        #: the characters replayed: "a", "b" and every probe the macro treats as one character
        self.handled = frozenset(table) | {"a", "b"}
        self._table = str.maketrans(table)

    def words(self, text: str) -> list[str] | None:
        """The macro's words of ``text`` (empty words left out: they are never terms), or ``None`` when ``text``
        holds a character this replay does not handle (then ask DuckDB)."""
        if not self.exact or not set(text) <= self.handled:
            return None
        return text.translate(self._table).split()


def stems(words: Sequence[str]) -> list[str]:
    """The Porter stem of each word, in order: Snowball's ``porter`` algorithm through PyStemmer, the C library the fts
    extension's ``stem(w, 'porter')`` is built from (``tests/test_bm25_incremental.py`` compares the two on the
    MiniLM vocabulary and LoCoMo's words: ~25k words, no difference). One stemmer per thread (they are not
    thread-safe); ~2 µs a word."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        import Stemmer

        stemmer = _local.stemmer = Stemmer.Stemmer("porter")
    return list(stemmer.stemWords(words))
