"""Synthetic stores of the latency benchmarks (:mod:`recall_latency`, :mod:`write_latency`, :mod:`recall_many_users`,
:mod:`recall_profile`): a template vocabulary of chat turns and questions, and one user's L1 segments with a
synthetic L2-L5 tree above them. Deterministic for a seed."""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from timem.models import Level, MemoryNode

USER, OTHER = "bench-a", "bench-b"
SPEAKERS = {USER: ("Caroline", "Melanie"), OTHER: ("Jon", "Gina")}

# ----------------------------------------------------------------------------- vocabulary
PEOPLE = ["Mark", "Sofia", "Liam", "Priya", "Tom", "Hannah", "Diego", "Aisha", "Oliver", "Mei", "Lucas", "Fatima",
          "Noah", "Elena", "Kenji", "Grace", "Omar", "Chloe", "Ravi", "Isabel", "Ethan", "Zara", "Mateo", "Nina",
          "Samuel", "Yuki", "Leo", "Amara", "Felix", "Rosa", "Jamal", "Ingrid", "Victor", "Leila", "Hugo", "Tara",
          "Andre", "Maya", "Pablo", "Freya", "Kofi", "Lena", "Arjun", "Clara", "Ivan", "Nadia", "Owen", "Selin"]
PLACES = ["Denver", "Lisbon", "Kyoto", "Toronto", "Nairobi", "Oslo", "Austin", "Prague", "Seattle", "Lima", "Dublin",
          "Melbourne", "Boston", "Marseille", "Seoul", "Chicago", "Vienna", "Cape Town", "Portland", "Madrid",
          "Helsinki", "Phoenix", "Krakow", "Vancouver", "Santiago", "Munich", "Atlanta", "Edinburgh", "Hanoi",
          "Montreal", "Porto", "Tucson", "Bergen", "Valencia", "Glasgow", "Calgary", "Bologna", "Osaka", "Quito",
          "Tallinn"]
ACTIVITIES = ["hiking", "kayaking", "pottery", "rock climbing", "salsa dancing", "camping", "painting", "surfing",
              "baking sourdough", "birdwatching", "cycling", "yoga", "chess", "gardening", "photography",
              "swimming", "knitting", "skiing", "running", "archery", "sailing", "woodworking", "singing in a choir",
              "volunteering", "fishing", "ice skating", "tennis", "journaling", "meditation", "scuba diving"]
OBJECTS = ["guitar", "bicycle", "camera", "laptop", "painting", "vase", "tent", "telescope", "violin", "necklace",
           "sofa", "kayak", "backpack", "watch", "bookshelf", "piano", "rug", "lamp", "scarf", "sketchbook"]
TOPICS = ["climate change", "space travel", "mental health", "ancient history", "machine learning", "jazz",
          "gardening", "adoption", "parenting", "marine biology", "architecture", "poetry", "nutrition",
          "renewable energy", "photography", "human rights", "volcanoes", "film noir", "bees", "chess openings"]
EVENTS = ["conference", "charity run", "support group", "book club", "art fair", "music festival", "workshop",
          "pride parade", "science fair", "farmers market", "wedding", "reunion", "hackathon", "concert"]
PETS = ["puppy", "kitten", "parrot", "rabbit", "turtle", "hamster", "goldfish", "guinea pig"]
PETNAMES = ["Oscar", "Luna", "Bailey", "Pepper", "Max", "Coco", "Milo", "Daisy", "Rocky", "Willow"]
RELATIONS = ["sister", "brother", "cousin", "neighbour", "friend", "colleague", "mother", "father", "aunt", "son",
             "daughter", "grandmother"]
CUISINES = ["Thai", "Ethiopian", "Peruvian", "Korean", "Lebanese", "Mexican", "Greek", "Vietnamese", "Italian"]
SPORTS = ["soccer", "basketball", "volleyball", "hockey", "baseball", "rugby", "cricket"]
ORGS = ["animal shelter", "food bank", "youth centre", "hospital", "library", "community garden", "museum"]
COLOURS = ["blue", "red", "green", "yellow", "purple", "orange", "teal", "golden"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

TURN_TEMPLATES = [
    "I went {act} in {place} with {person} and it took {n} hours.",
    "{person} bought a {obj} for {n} dollars at a little shop in {place}.",
    "We are planning a trip to {place} in {month} to visit {person}.",
    "My {rel} {person} started {act} lessons {n} weeks ago.",
    "I finished reading {n} books about {topic} this month.",
    "The {event} in {place} had {n} people and {person} gave a talk about {topic}.",
    "I adopted a {pet} named {petname} from a shelter in {place}.",
    "I ran {n} kilometres along the river in {place} this morning.",
    "{person} recommended a {cuisine} restaurant near the old harbour in {place}.",
    "I painted a {colour} {obj} for {person}'s birthday.",
    "Our team won the {sport} match {n} to {m} against a club from {place}.",
    "I volunteer at the {org} in {place} every {weekday}.",
    "That sounds amazing, how did {person} like {place}?",
    "Wow, {n} is a lot! Did you enjoy the {act}?",
    "I remember when we went to the {event} in {place} together.",
    "{person} told me the {obj} broke after {n} days, so we returned it in {place}.",
    "I've been thinking a lot about {topic} since the {event} with {person}.",
    "My {rel} moved to {place} last {month} and found a job at the {org}.",
    "We saved {n} dollars for a {obj} and a trip to {place}.",
    "Next {weekday} I'm going {act} with {person} and my {rel}.",
]

QUESTION_TEMPLATES = [
    "When did {spk} go {act} in {place} with {person}?",
    "How much did {person} pay for the {obj} in {place}?",
    "What did {person} talk about at the {event} in {place}?",
    "How many kilometres did {spk} run in {place}?",
    "Which restaurant did {person} recommend in {place}?",
    "What is the name of the {pet} {spk} adopted in {place}?",
    "Where does {spk} volunteer on {weekday}s?",
    "Who started {act} lessons, and when?",
    "What colour was the {obj} {spk} painted for {person}?",
    "When is {spk} planning to visit {person} in {place}?",
    "What hobbies does {spk} enjoy, like {act}?",
    "How many books about {topic} did {spk} read?",
    "What did {spk} and {person} do together in {place}?",
    "Why did {spk} get interested in {topic}?",
    "Would {spk} enjoy a trip to {place} for {act}?",
]


def _fill(template: str, rng: random.Random, **fixed: str) -> str:
    values = {"person": rng.choice(PEOPLE), "place": rng.choice(PLACES), "act": rng.choice(ACTIVITIES),
                  "obj": rng.choice(OBJECTS), "topic": rng.choice(TOPICS), "event": rng.choice(EVENTS),
                  "pet": rng.choice(PETS),
                  "petname": rng.choice(PETNAMES), "rel": rng.choice(RELATIONS), "cuisine": rng.choice(CUISINES),
                  "sport": rng.choice(SPORTS), "org": rng.choice(ORGS), "colour": rng.choice(COLOURS),
                  "month": rng.choice(MONTHS), "weekday": rng.choice(WEEKDAYS), "n": str(rng.randint(2, 400)),
                  "m": str(rng.randint(0, 9))}
    values.update(fixed)
    return template.format(**values)


def turn_pool(size: int, seed: int) -> list[str]:
    """``size`` distinct turn texts."""
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    while len(seen) < size:
        seen.setdefault(_fill(rng.choice(TURN_TEMPLATES), rng), None)
    return list(seen)


def questions(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out: dict[str, None] = {}
    while len(out) < n:
        out.setdefault(_fill(rng.choice(QUESTION_TEMPLATES), rng, spk=rng.choice(SPEAKERS[USER])), None)
    return list(out)


# ----------------------------------------------------------------------------- synthetic tree
T0 = datetime(2016, 1, 4, 9, 0, tzinfo=UTC)  # a Monday


def _header(t: datetime) -> str:
    return f"On {t.day} {t:%B %Y (%A) %H:%M}:"


def build_user(user: str, n_l1: int, pool_size: int, seg_per_session: int, sessions_per_day: int,
               rng: np.random.Generator, pool: list[str]) -> dict[str, Any]:
    """Synthetic L1 segments and their L2-L5 ancestors for one user (contents, pair indices, links)."""
    s1, s2 = SPEAKERS[user]
    pairs = rng.integers(0, pool_size, size=(n_l1, 2))
    l1: list[dict[str, Any]] = []
    for i in range(n_l1):
        sess, j = divmod(i, seg_per_session)
        day, k = divmod(sess, sessions_per_day)
        t = T0 + timedelta(days=day, hours=3 * k, minutes=2 * j)
        a, b = int(pairs[i, 0]), int(pairs[i, 1])
        l1.append({"id": f"{user}:L1:{i}", "t": t, "session": f"S{sess}", "pair": (a, b),
                       "content": f"{_header(t)}\n{s1}: {pool[a]}\n{s2}: {pool[b]}"})
    parents: list[dict[str, Any]] = []  # level, id, key, span, child ids, child rows (for embeddings)

    def group(children: list[dict[str, Any]], level: int,
              key_of: Callable[[dict[str, Any]], str]) -> list[dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for c in children:
            key = key_of(c)
            g = out.setdefault(key, {"level": level, "id": f"{user}:L{level}:{key}", "key": key, "kids": [],
                                     "t": c["t"], "t_end": c.get("t_end", c["t"]),
                                     "session": c.get("session") if level == 2 else None, "rows": []})
            g["kids"].append(c["id"])
            g["t_end"] = max(g["t_end"], c.get("t_end", c["t"]))
            g["rows"].extend(c["rows"] if "rows" in c else [c["idx"]])
        return list(out.values())

    for i, c in enumerate(l1):
        c["idx"] = i
    l2 = group(l1, 2, lambda c: c["session"])
    l3 = group(l2, 3, lambda c: f"{c['t']:%Y-%m-%d}")
    l4 = group(l3, 4, lambda c: f"{c['t']:%G-W%V}@{c['t']:%Y-%m}")
    l5 = group(l4, 5, lambda c: f"{c['t']:%Y-%m}")
    names = {2: "session", 3: "day", 4: "week", 5: "month"}
    for lvl, groups in ((2, l2), (3, l3), (4, l4), (5, l5)):
        for g in groups:
            h = zlib.crc32(g["id"].encode())
            acts = {ACTIVITIES[h % len(ACTIVITIES)], ACTIVITIES[(h // 31) % len(ACTIVITIES)]}
            place = PLACES[(h // 961) % len(PLACES)]
            g["content"] = (f"{names[lvl].capitalize()} {g['key']}: {s1} and {s2} talked about "
                            f"{' and '.join(sorted(acts))}, "
                            f"plans in {place} and {len(g['kids'])} other things.")
            parents.append(g)
    return {"l1": l1, "parents": parents}


def _node(user: str, level: int, nid: str, key: str, t: datetime, t_end: datetime, content: str,
          kids: list[str], session: str | None) -> MemoryNode:
    return MemoryNode(id=nid, user_id=user, level=Level(level), window_key=key, span_start=t, span_end=t_end,
                      content=content, child_ids=kids, session_id=session, model_id="verbatim",
                      prompt_version="bench-synthetic", created_at=T0)
