"""Rule misses on the LoCoMo dev text (a helper's dump of what the rules read per turn: 7 turns of 700 gave items):
"I've been into dancing since I was a kid" (a hobby), "I've always had a love for horses" (a like), "I started my own
online clothing store not so long ago - pretty cool, huh?" (the speaker's own business: the employer, and the remark
tagged on it made a question of it), "I'm passionate about dancing", "Dance is my passion", "Guitar's mostly my thing",
"I play clarinet". Each is checked on the rule reader
(:mod:`timem.memory.hobbies`, :mod:`timem.memory.likes`, :mod:`timem.memory.work`, :mod:`timem.memory.rules`), with
what must stay unread beside it, and the items through a :class:`~timem.engine.MemoryEngine` on a real DuckDB file."""

from __future__ import annotations

import pytest
from trial_support import engine, say_lines

from timem.memory.rules import extract_statements


@pytest.fixture(scope="module")
def embedder(fake_embedder):
    return fake_embedder


@pytest.fixture()
def eng(tmp_path, store, embedder):
    return engine(tmp_path, store, embedder)


def _read(text: str) -> list[tuple[str | None, str]]:
    return [(s.attribute, s.value) for s in extract_statements(text)]


@pytest.mark.parametrize(("text", "expected"), [
    ("I've been into dancing since I was a kid and it's been my passion and escape.", [("hobby", "dancing")]),
    ("I'm really into hiking and swimming", [("hobby", "hiking"), ("hobby", "swimming")]),
    ("I'm passionate about dancing and it brings me so much joy and fulfillment.", [("hobby", "dancing")]),
    ("Dance is my passion, and I'm gonna keep working hard to make it a success!", [("hobby", "dancing")]),
    ("Guitar's mostly my thing.", [("hobby", "guitar")]),
    ("Dance is pretty much my go-to for stress relief.", [("hobby", "dancing")]),
    ("Coffee is my go-to in the morning.", []),  # no activity
    ("Yeah, I play clarinet!", [("hobby", "clarinet")]),
    ("my hobby is dance", [("hobby", "dancing")]),
    # an activity that is no hobby of the list, or a business, is none
    ("I'm passionate about helping people and making a positive impact.", []),
    ("I'm into running my own studio", []),
])
def test_hobbies_said_as_a_passion_or_as_being_into_it(text, expected):
    assert _read(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("I've always had a love for horses!", [("likes", "horses")]),
    ("I have a real passion for jazz", [("likes", "jazz")]),
    ("I have a soft spot for old cars", [("likes", "old cars")]),
    ("I've been into jazz lately", [("likes", "jazz")]),
    ("I'm passionate about fashion trends and finding unique pieces.", [("likes", "fashion trends")]),
    # a love that was, or someone's
    ("I had a love for horses", []),
    ("Your love for your kids is so awesome.", []),
    ("I'm a fan of both", []),
])
def test_likes_said_as_a_love_for_or_a_passion(text, expected):
    assert _read(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("Oh, and BTW, I started my own online clothing store not so long ago - pretty cool, huh?",
     [("employer", "own online clothing store")]),
    ("I opened an online clothing store and it's been great!", [("employer", "online clothing store")]),
    ("I run my own studio", [("employer", "own studio")]),
    ("I love running my own studio.", []),  # what one loves (hobby-09 of the labelled set: no item)
    ("I run a small bakery in town", [("employer", "bakery")]),
    ("I started my own business about a year ago", [("employer", "own business")]),
    # a plan or a wish, one someone else owns, no business, or a business named by nothing more
    ("I wanna start my own business", []),
    ("I'm gonna take a shot at starting my own business.", []),
    ("I opened the store this morning", []),
    ("I opened my store at 9", []),
    ("I opened a bank account", []),
    ("I started a bar tab", []),
    ("I started a blog", []),
    ("I started a company called Acme", []),
])
def test_a_business_of_ones_own_is_the_employer(text, expected):
    assert _read(text) == expected


@pytest.mark.parametrize("text", ["I live in Lisbon, right?", "I live in Lisbon, huh?",
                                  "Do I live in Lisbon - pretty cool, huh?"])
def test_a_question_tag_still_asks(text):
    assert _read(text) == []


def test_the_dev_turns_write_their_items(eng):
    say_lines(eng, ["I've been into dancing since I was a kid and it's been my passion and escape.",
                    "That's so funny! I've always had a love for horses!",
                    "Hey Jon, congrats on the fair! Oh, and BTW, I started my own online clothing store not so long "
                    "ago - pretty cool, huh?",
                    "I opened an online clothing store and it's been great!"])
    held = sorted(i.label() for i in eng.memory_items("mia") if i.is_open)
    assert held == ["Mia's employer: own online clothing store", "Mia's hobby: dancing", "Mia's likes: horses"]
    (store,) = [i for i in eng.memory_items("mia") if i.attribute == "employer"]
    assert len(store.source_ids) == 2  # the second turn names the same store: merged, not a new employer


def test_a_business_of_ones_own_is_a_new_employer(eng):
    """It supersedes the old employer and ends the job held there, as any new employer does."""
    say_lines(eng, ["I work at Barclays as a banker.", "I opened an online clothing store"])
    held = {i.attribute: i.value for i in eng.memory_items("mia") if i.is_open}
    assert held == {"employer": "online clothing store"}
    items = {i.value: i for i in eng.memory_items("mia")}
    assert items["Barclays"].superseded_by == items["online clothing store"].id


def test_an_activity_called_ones_passion_or_go_to_is_a_grounded_hobby(eng):
    say_lines(eng, ["Dance is pretty much my go-to for stress relief.", "Guitar's mostly my thing.",
                    "Dance is my passion, and I'm gonna keep working hard to make it a success!"])
    assert sorted(i.label() for i in eng.memory_items("mia") if i.is_open) == ["Mia's hobby: dancing",
                                                                                "Mia's hobby: guitar"]
