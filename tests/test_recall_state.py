"""The recall's per-candidate filters of :mod:`timem.recall.state`: a segment that only asks the question again, or
only says that someone does not know, is not recalled (both are cached by content, so each answer must depend on
the content and the question alone)."""

from __future__ import annotations

from timem.recall.state import asks_again, says_nothing
from timem.tokens import content_stems

DATE = "On 2 April 2024 (Tue) 10:00:"
QUESTION = "Which city do I live in now?"


def _seg(*lines: str) -> str:
    return "\n".join([DATE, *lines])


def test_a_segment_that_only_asks_this_question_again_is_unseen_and_others_are_not():
    stems = content_stems(QUESTION)
    assert asks_again(_seg("Mia: Which city do I live in now?"), stems)
    assert asks_again(_seg("Mia: which CITY do i live in, now?", "Mia: Which city do I live in now?"), stems)
    # a question with other words says something; a statement line says something; no line says nothing
    assert not asks_again(_seg("Mia: Where did you move from?"), stems)
    assert not asks_again(_seg("Mia: Which city do I live in now?", "Assistant: You live in Lisbon."), stems)
    assert not asks_again(_seg(), stems)
    # the same segment for another question (the cache is by content: the question must still decide)
    assert not asks_again(_seg("Mia: Which city do I live in now?"), content_stems("What is my cat's name?"))
    assert asks_again(_seg("Mia: What is my cat's name?"), content_stems("What is my cat's name?"))
    assert not asks_again(_seg("Mia: Which city do I live in now?"), set())


def test_a_segment_that_only_says_someone_does_not_know_says_nothing():
    assert says_nothing(_seg("Assistant: You don't know."))
    assert says_nothing(_seg("助手: 我不知道。"))
    assert not says_nothing(_seg("Mia: I don't know if I should move to Porto."))
    assert not says_nothing(_seg("Assistant: You don't know.", "Mia: My cat is Mochi."))
    assert not says_nothing(_seg())
