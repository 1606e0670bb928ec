"""A new-user trial: the `timem forget` preview cut a segment's line mid-word with no ellipsis ("…a gift from my
grandm"). :meth:`timem.memory.forget.ForgetPreview.describe` now cuts with :func:`timem.tokens.one_line`."""

from __future__ import annotations

from trial_support import fixtures

LINE = ("I keep my late grandfather's pocket watch in the top drawer of my desk, it was a gift from my grandmother to "
        "him on their wedding day in 1961.")
embedder, eng = fixtures([(LINE, "What a lovely keepsake.")])


def test_forget_preview_cuts_a_long_segment_at_a_word_and_marks_it(eng):
    said = eng.forget("mia", "the pocket watch").describe()
    line = next(ln for ln in said.splitlines() if "pocket watch" in ln)
    shown = line.split(": ", 1)[1]
    assert shown.endswith("…"), line
    words = set(" ".join(LINE.split()).replace(",", " ").split())
    assert shown.rstrip("…").split()[-1].rstrip(",.") in words, line  # the last word shown is whole
