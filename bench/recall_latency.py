"""Recall latency benchmark (issue 3 §9): p50/p95 without LLM calls, DuckDB store vs a brute-force baseline.

For every size N (default 10,000 and 100,000 L1 nodes of ONE user) the script builds a fresh
DuckDB file holding

* user ``bench-a``: N synthetic L1 segments plus a synthetic tree above them (L2 per 10 segments,
  L3 per day, L4 per week inside a month, L5 per month) so that ancestor propagation has real work;
* user ``bench-b``: ``--other-ratio`` x N L1 segments (plus their tree) drawn from the same
  vocabulary, so that the ``user_id`` filter inside every SQL query rejects real, competitive rows;

inserted with :meth:`Store.add_nodes` in batches, then the FTS (BM25) index is built once
(``refresh_fts(force=True)``, timed: the index is a snapshot rebuilt in full on the first BM25
query after any batch of writes).

Texts. Node contents look like verbatim L1 segments (``On 8 May 2023 (Monday) 13:56:`` then two
``Speaker: text`` lines). The turn texts come from a template/vocabulary generator (names,
places, numbers, activities). Embeddings: embedding every node with MiniLM is far too slow on
this host (2 cores, ~50-100 short texts/s when idle), so by default (``--embed auto``) the script
measures MiniLM's rate on a pool of ``--pool`` distinct turn texts, projects the time for all
node texts, and if that exceeds ``--embed-budget-s`` it composes each node's vector as the
re-normalised sum of the REAL MiniLM vectors of its two turns (``pool`` mode; with P pool turns
there are P^2 distinct pairs, so node texts and vectors are distinct). The choice, the projection
and the cosine between composed vectors and true MiniLM vectors of the full node text (a sample)
are written to the results. ``--embed full`` embeds every node text for real; ``--embed pool``
forces composition. Questions are always embedded for real, inside the timed ``recall()``.

Measured per query (``--queries`` questions over the vocabulary after ``--warmup`` warm-up
questions; the methods are interleaved per query so that load changes hit them alike), wall
clock AND process CPU time (all threads; on a contended host the wall clock mostly measures the
scheduler, CPU time is the intrinsic cost):

* ``recall_full`` -- :func:`timem.recall.pipeline.recall` with ``llm=None`` (centroid planner,
  score gate, ``persist=False``): query embedding + plan + leaf SQL + ancestors + gate + context;
  its per-stage latencies come from the trace;
* ``embed_query`` -- the planner's one MiniLM batch (masked question + question) alone;
* ``sql_leaves`` -- :func:`select_leaves` with the query vector and question time given: vector SQL + BM25 SQL + fusion;
  ``sql_vector`` / ``sql_bm25`` -- :meth:`Store.search_vector` / :meth:`Store.search_bm25` alone;
* ``base_leaves`` -- the baseline: numpy brute-force cosine over the user's (N, 384) matrix held in
  memory + ``rank_bm25.BM25Okapi`` over the user's L1 texts (lower-case word tokens, English
  stop words, no stemming) + the same :func:`fuse`; ``base_vector`` / ``base_bm25`` alone.

HNSW (``--hnsw``, default on): after the measurements the script creates a vss HNSW index
(``metric = 'cosine'``, experimental persistence on since the DB is a file), records build time,
RSS and DuckDB memory growth and file growth, EXPLAINs the store's query, an unfiltered and a
user-filtered ``ORDER BY array_cosine_distance ... LIMIT`` query, times them, measures their
recall@40 against the exact per-user top 40, times an over-fetch-then-filter variant, and the
cost of inserting a batch of nodes with the index present.

Usage (results go to bench/results/recall-latency.{md,json}):

    nice -n 19 .venv/bin/python bench/recall_latency.py                     # 10k and 100k
    nice -n 19 .venv/bin/python bench/recall_latency.py --sizes 10000       # one size
    nice -n 19 .venv/bin/python bench/recall_latency.py --quick             # smoke run (2k, 10 queries)

Not a test: nothing here asserts a speed. The local LLM is never loaded.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# Single-threaded numpy (OpenBLAS) and torch (OpenMP) unless the caller says otherwise: their idle worker
# threads spin-wait, which on a contended host inflates the process CPU time this script reports.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import duckdb
import numpy as np

from timem.config import Config
from timem.embed.minilm import MiniLMEmbedder
from timem.models import Level, MemoryNode
from timem.recall.leaves import bm25_query, fuse, select_leaves
from timem.recall.options import RecallOptions
from timem.recall.pipeline import recall
from timem.recall.planner import CentroidPlanner
from timem.recall.state import RecallState
from timem.store.duckdb_store import Store
from timem.store.search import bm25_top, drop_hnsw, ensure_hnsw, vector_top

RESULTS = Path(__file__).parent / "results"
USER, OTHER = "bench-a", "bench-b"
SPEAKERS = {USER: ("Caroline", "Melanie"), OTHER: ("Jon", "Gina")}
K_CAND = 40

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


# ----------------------------------------------------------------------------- helpers
def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _pct(xs: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]) -- with 50 samples p95 is the 48th smallest."""
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, int(np.ceil(q / 100 * len(s))) - 1))]


def _summ(wall: list[float], cpu: list[float]) -> dict[str, float]:
    return {"n": len(wall), "wall_p50": round(_pct(wall, 50), 2), "wall_p95": round(_pct(wall, 95), 2),
                "wall_mean": round(statistics.fmean(wall), 2), "cpu_p50": round(_pct(cpu, 50), 2),
                "cpu_p95": round(_pct(cpu, 95), 2), "cpu_mean": round(statistics.fmean(cpu), 2)}


def _timed(fn: Callable[..., Any], *a: Any, **kw: Any) -> tuple[Any, float, float]:
    """``(fn(*a, **kw), wall ms, process CPU ms)``."""
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn(*a, **kw)
    return out, (time.perf_counter() - w0) * 1000, (time.process_time() - c0) * 1000


class Clock:
    """Wall and process-CPU seconds since creation: ``Clock().lap()`` -> ``{"wall_s", "cpu_s"}``."""

    def __init__(self) -> None:
        self.w, self.c = time.perf_counter(), time.process_time()

    def lap(self) -> dict[str, float]:
        return {"wall_s": round(time.perf_counter() - self.w, 2), "cpu_s": round(time.process_time() - self.c, 2)}


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


STOP = frozenset("""a about above after again against all am an and any are as at be because been before being below
between both but by can did do does doing down during each few for from further had has have having
he her here hers herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own same she should
so some such than that the their theirs them themselves then there these they this those through to
too under until up very was we were what when where which while who whom why will with would you
your yours yourself yourselves""".split())
_TOK = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Baseline BM25 tokens: lower-case alphanumeric words minus English stop words (no stemming)."""
    return [t for t in _TOK.findall(text.lower()) if t not in STOP]


class Baseline:
    """Brute force over one user's L1 nodes held in memory: numpy cosine + rank_bm25 BM25Okapi."""

    def __init__(self, ids: list[str], vecs: np.ndarray, texts: list[str]) -> None:
        from rank_bm25 import BM25Okapi

        self.ids = np.asarray(ids)
        self.vecs = np.ascontiguousarray(vecs, dtype=np.float32)
        self.bm25 = BM25Okapi([tokenize(t) for t in texts])

    @staticmethod
    def _top(scores: np.ndarray, ids: np.ndarray, k: int, positive_only: bool = False) -> list[tuple[str, float]]:
        k = min(k, len(scores))
        idx = np.argpartition(-scores, k - 1)[:k]
        idx = idx[np.lexsort((ids[idx], -scores[idx]))]  # score desc, then id (as the SQL)
        return [(str(ids[i]), float(scores[i])) for i in idx if not positive_only or scores[i] > 0]

    def vector(self, q: np.ndarray, k: int) -> list[tuple[str, float]]:
        return self._top(self.vecs @ q.astype(np.float32), self.ids, k)

    def lexical(self, query: str, k: int) -> list[tuple[str, float]]:
        return self._top(np.asarray(self.bm25.get_scores(tokenize(query))), self.ids, k, positive_only=True)

    def leaves(self, q: np.ndarray, query: str, k: int, lam: float, top_k: int) -> list[str]:
        cands = fuse(dict(self.vector(q, k)), dict(self.lexical(query, k)), lam, top_k=top_k)
        return [c.node_id for c in cands if c.kept]


# ----------------------------------------------------------------------------- one size
def run_size(n: int, args: argparse.Namespace, emb: MiniLMEmbedder, planner: CentroidPlanner, cfg: Config,
             pool_cache: dict[str, Any], qs: list[str], log: Callable[[str], None]) -> dict[str, Any]:
    res: dict[str, Any] = {"n_l1_user": n, "load_start": _loadavg()}
    n_other = round(n * args.other_ratio)
    rng = np.random.default_rng(args.seed + n)
    pool, pool_vecs = pool_cache["texts"], pool_cache["vecs"]

    t = time.perf_counter()
    users = {USER: build_user(USER, n, len(pool), args.seg_per_session, args.sessions_per_day, rng, pool)}
    if n_other:
        users[OTHER] = build_user(OTHER, n_other, len(pool), args.seg_per_session, args.sessions_per_day, rng, pool)
    res["generate_s"] = round(time.perf_counter() - t, 2)

    # ---- embeddings: full or pool-composed (decided explicitly, recorded)
    n_texts = sum(len(u["l1"]) for u in users.values())
    rate = pool_cache["rate"]
    projected = n_texts / rate
    mode = args.embed if args.embed != "auto" else ("full" if projected <= args.embed_budget_s else "pool")
    res["embedding"] = {"mode": mode, "requested": args.embed, "l1_texts": n_texts,
                        "minilm_texts_per_s": round(rate, 1),
                        "minilm_texts_per_cpu_s": round(pool_cache["cpu_rate"], 1),
                            "projected_full_embed_s": round(projected, 1), "budget_s": args.embed_budget_s,
                            "pool_turn_texts": len(pool)}
    log(f"[{n}] embeddings: {mode} ({n_texts} L1 texts; MiniLM {rate:.0f}/s -> {projected:.0f} s projected, "
        f"budget {args.embed_budget_s:.0f} s)")
    t = time.perf_counter()
    for u in users.values():
        if mode == "full":
            u["vecs"] = emb.embed([c["content"] for c in u["l1"]])
        else:
            pr = np.array([c["pair"] for c in u["l1"]])
            v = pool_vecs[pr[:, 0]] + pool_vecs[pr[:, 1]]
            u["vecs"] = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    res["embedding"]["node_vectors_s"] = round(time.perf_counter() - t, 2)
    if mode == "pool":
        sample = users[USER]["l1"][: args.fidelity_sample]
        true = emb.embed([c["content"] for c in sample])
        cos = np.sum(true * users[USER]["vecs"][: len(sample)], axis=1)
        res["embedding"]["composed_vs_true_cosine"] = {"n": len(sample), "mean": round(float(cos.mean()), 4),
                                                           "min": round(float(cos.min()), 4)}
        log(f"[{n}] composed vs true MiniLM vector of the full node text: mean cos {cos.mean():.3f}, "
            f"min {cos.min():.3f} over {len(sample)}")

    # ---- insert
    db_dir = Path(tempfile.mkdtemp(prefix="timem-recall-bench-", dir=args.db_dir))
    db = db_dir / f"bench-{n}.duckdb"
    store = Store(db, emb.model_id, emb.dim)
    if args.threads:
        store.con.execute(f"SET threads = {int(args.threads)}")
    res["duckdb_threads"] = store.con.execute("SELECT current_setting('threads')").fetchone()[0]
    rows = 0
    clk = Clock()
    for user, u in users.items():
        l1 = u["l1"]
        for b in range(0, len(l1), args.batch):
            chunk = l1[b:b + args.batch]
            store.add_nodes([_node(user, 1, c["id"], f"segment:{c['id']}", c["t"], c["t"], c["content"], [],
                                   c["session"]) for c in chunk], u["vecs"][b:b + args.batch])
            rows += len(chunk)
        log(f"[{n}] inserted {len(l1)} L1 of {user} ({clk.lap()})")
    res["insert_l1"] = clk.lap()
    res["insert_l1"]["rows"] = rows
    res["insert_l1"]["rows_per_cpu_s"] = round(rows / max(res["insert_l1"]["cpu_s"], 1e-9), 1)

    # parents: add_nodes with child_ids links each child (one UPDATE ... list_contains per parent node, a
    # full scan of `nodes` each). That is O(parents x table) -- measured on --link-sample parents, then
    # the rest are inserted with the same add_nodes and linked by one set-based UPDATE (same end state).
    clk = Clock()
    n_parents = 0
    link: dict[str, Any] = {}
    for user, u in users.items():
        vecs = u["vecs"]
        parents = u["parents"]
        n_parents += len(parents)

        def pnode(g: dict[str, Any], with_kids: bool, user: str = user) -> MemoryNode:
            return _node(user, g["level"], g["id"], g["key"], g["t"], g["t_end"], g["content"],
                         g["kids"] if with_kids else [], g["session"])

        def pvecs(gs: list[dict[str, Any]], vecs: np.ndarray = vecs) -> np.ndarray:
            v = np.stack([vecs[g["rows"]].mean(axis=0) for g in gs])
            return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

        head = parents[: args.link_sample] if user == USER else []
        if head:
            _, w, c = _timed(store.add_nodes, [pnode(g, True) for g in head], pvecs(head))
            link["add_nodes_with_links_per_parent_ms"] = {"wall": round(w / len(head), 2),
                                                          "cpu": round(c / len(head), 2)}
            link["sampled_parents"] = len(head)
        rest = parents[len(head):]
        for b in range(0, len(rest), args.batch):
            chunk = rest[b:b + args.batch]
            store.add_nodes([pnode(g, False) for g in chunk], pvecs(chunk))
        clk1 = Clock()
        pairs = [(g["id"], kid) for g in rest for kid in g["kids"]]
        kids_of = [(g["id"], g["kids"]) for g in rest]
        with store.transaction():
            store.con.execute("CREATE TEMP TABLE link_map AS SELECT unnest(?::VARCHAR[]) AS pid, "
                              "unnest(?::VARCHAR[]) AS cid", [[p for p, _ in pairs], [c for _, c in pairs]])
            store.con.execute("UPDATE nodes SET parent_id = m.pid FROM link_map m WHERE nodes.id = m.cid")
            store.con.execute("CREATE TEMP TABLE kids_map AS SELECT unnest(?::VARCHAR[]) AS pid, "
                              "unnest(?::VARCHAR[][]) AS kids", [[p for p, _ in kids_of], [k for _, k in kids_of]])
            store.con.execute("UPDATE nodes SET child_ids = k.kids FROM kids_map k WHERE nodes.id = k.pid")
            store.con.execute("DROP TABLE link_map")
            store.con.execute("DROP TABLE kids_map")
        link[f"set_based_link_{user}"] = clk1.lap()
    res["parents"] = n_parents
    res["insert_parents"] = clk.lap()
    res["parent_linking"] = link
    unlinked = store.con.execute("SELECT count(*) FROM nodes WHERE level < 5 AND parent_id IS NULL").fetchone()[0]
    res["unlinked_below_L5"] = unlinked
    res["rows_total"] = store.con.execute("SELECT count(*) FROM nodes").fetchone()[0]
    res["rows_per_user_level"] = {f"{u}/L{lv}": c for u, lv, c in store.con.execute(
        "SELECT user_id, level, count(*) FROM nodes GROUP BY ALL ORDER BY ALL").fetchall()}
    log(f"[{n}] {res['rows_total']} rows; parents {res['insert_parents']}; linking {link}; unlinked below L5: "
        f"{unlinked}")

    clk = Clock()
    store.refresh_fts(force=True)
    res["fts_build"] = clk.lap()
    store.con.execute("CHECKPOINT")
    res["db_bytes_before_hnsw"] = db.stat().st_size
    log(f"[{n}] FTS build {res['fts_build']} over {res['rows_total']} rows; file {db.stat().st_size / 1e6:.0f} MB")

    # ---- baseline (the user's L1 only, as the SQL filter would give)
    t = time.perf_counter()
    ua = users[USER]
    base = Baseline([c["id"] for c in ua["l1"]], ua["vecs"], [c["content"] for c in ua["l1"]])
    res["baseline_build_s"] = round(time.perf_counter() - t, 2)

    # ---- queries: plans and vectors precomputed for the stage measurements (recall_full does its own)
    qvecs = emb.embed(qs)
    plans = [planner.plan(q, T0 + timedelta(days=4000), cfg) for q in qs]
    qt = T0 + timedelta(days=4000)
    samples: dict[str, tuple[list[float], list[float]]] = {}
    stages: dict[str, list[float]] = {}
    agree: dict[str, list[float]] = {"vector_top40_overlap": [], "bm25_top40_overlap": [], "kept20_overlap": []}
    complexities: dict[str, int] = {}

    def rec(name: str, w: float, c: float) -> None:
        samples.setdefault(name, ([], []))
        samples[name][0].append(w)
        samples[name][1].append(c)

    # the store's in-memory copies (timem.store.memory_index) are loaded by the first search of each kind
    _, w, c = _timed(store.search_vector, USER, qvecs[0], 1, K_CAND)
    res["memory_index_first_vector_query"] = {"wall_s": round(w / 1000, 3), "cpu_s": round(c / 1000, 3)}
    _, w, c = _timed(store.search_bm25, USER, bm25_query(qs[0], plans[0]), 1, K_CAND)
    res["memory_index_first_bm25_query"] = {"wall_s": round(w / 1000, 3), "cpu_s": round(c / 1000, 3)}
    order = list(range(len(qs)))
    n_warm = min(args.warmup, len(qs))
    gc.collect()
    t_meas = time.perf_counter()
    for rep in range(args.repeat + 1):
        idxs = order[:n_warm] if rep == 0 else order[n_warm:]
        for i in idxs:
            q, qv, plan = qs[i], qvecs[i], plans[i]
            bq = bm25_query(q, plan)
            r, w, c = _timed(recall, store, emb, None, cfg, USER, q, qt,
                             options=RecallOptions(gate="score", persist=False))
            if rep:
                rec("recall_full", w, c)
                for k, v in r.trace.latency_ms.items():
                    stages.setdefault(k, []).append(v)
                complexities[r.trace.plan.complexity] = complexities.get(r.trace.plan.complexity, 0) + 1
            _, w, c = _timed(emb.embed, [planner.masked(q), q])
            if rep:
                rec("embed_query", w, c)
            state = RecallState(store, emb, None, cfg, USER, q, qt, query_vec=qv)
            sel, w, c = _timed(select_leaves, state, plan)
            if rep:
                rec("sql_leaves", w, c)
            sv, w, c = _timed(store.search_vector, USER, qv, 1, K_CAND)
            if rep:
                rec("sql_vector", w, c)
            sb, w, c = _timed(store.search_bm25, USER, bq, 1, K_CAND)
            if rep:
                rec("sql_bm25", w, c)
            _, w, c = _timed(vector_top, store.con, store.dim, USER, qv, 1, K_CAND)
            if rep:
                rec("duckdb_vector", w, c)
            _, w, c = _timed(bm25_top, store.con, USER, bq, 1, K_CAND)
            if rep:
                rec("duckdb_bm25", w, c)
            bl, w, c = _timed(base.leaves, qv, bq, K_CAND, cfg.recall.recall_lambda, cfg.recall.recall_top_k)
            if rep:
                rec("base_leaves", w, c)
            bv, w, c = _timed(base.vector, qv, K_CAND)
            if rep:
                rec("base_vector", w, c)
            bb, w, c = _timed(base.lexical, bq, K_CAND)
            if rep:
                rec("base_bm25", w, c)
            if rep == 1:
                agree["vector_top40_overlap"].append(len({x for x, _ in sv} & {x for x, _ in bv}) / K_CAND)
                agree["bm25_top40_overlap"].append(len({x for x, _ in sb} & {x for x, _ in bb}) / max(1, len(sb)))
                agree["kept20_overlap"].append(len({c.node_id for c in sel.kept} & set(bl)) / max(1, len(sel.kept)))
                assert all(x.startswith(USER) for x, _ in sv + sb), "another user's node became a candidate"
        if rep == 0:
            log(f"[{n}] warm-up done ({n_warm} queries)")
    res["measure_s"] = round(time.perf_counter() - t_meas, 1)
    res["latency_ms"] = {k: _summ(*v) for k, v in samples.items()}
    res["recall_stages_wall_ms"] = {k: {"p50": round(_pct(v, 50), 2), "p95": round(_pct(v, 95), 2)}
                                    for k, v in stages.items()}
    res["plan_complexities"] = complexities
    res["agreement_sql_vs_baseline"] = {k: round(statistics.fmean(v), 3) for k, v in agree.items() if v}
    res["rss_mb_after_queries"] = round(_rss_mb(), 0)
    res["load_after_queries"] = _loadavg()
    for k in ("recall_full", "sql_leaves", "base_leaves"):
        s = res["latency_ms"][k]
        log(f"[{n}] {k:12s} wall p50 {s['wall_p50']:8.1f} p95 {s['wall_p95']:8.1f} | cpu p50 {s['cpu_p50']:8.1f} "
            f"p95 {s['cpu_p95']:8.1f} ms")

    exact_kept: dict[int, set[str]] = {}

    def time_recall(tag: str) -> dict[str, Any]:
        """recall_full and Store.search_vector again over the same questions (e.g. with the HNSW index)."""
        walls: dict[str, tuple[list[float], list[float]]] = {"recall_full": ([], []), "sql_vector": ([], [])}
        st: dict[str, list[float]] = {}
        overlap: list[float] = []
        for rep in range(args.repeat + 1):
            for i in (order[:n_warm] if rep == 0 else order[n_warm:]):
                r, w, c = _timed(recall, store, emb, None, cfg, USER, qs[i], qt,
                                 options=RecallOptions(gate="score", persist=False))
                kept = {x.node_id for x in r.trace.candidates if x.kept}
                if tag == "exact":
                    exact_kept[i] = kept
                elif rep:
                    overlap.append(len(kept & exact_kept[i]) / max(1, len(exact_kept[i])))
                _, w2, c2 = _timed(store.search_vector, USER, qvecs[i], 1, K_CAND)
                if rep:
                    walls["recall_full"][0].append(w)
                    walls["recall_full"][1].append(c)
                    walls["sql_vector"][0].append(w2)
                    walls["sql_vector"][1].append(c2)
                    for k, v in r.trace.latency_ms.items():
                        st.setdefault(k, []).append(v)
        out = {"latency_ms": {k: _summ(*v) for k, v in walls.items()},
               "recall_stages_wall_ms": {k: {"p50": round(_pct(v, 50), 2), "p95": round(_pct(v, 95), 2)}
                                         for k, v in st.items()}}
        if overlap:
            out["kept20_overlap_vs_exact"] = round(statistics.fmean(overlap), 3)
        s = out["latency_ms"]["recall_full"]
        log(f"[{n}] recall_full ({tag}) wall p50 {s['wall_p50']:.1f} p95 {s['wall_p95']:.1f} ms "
            f"{out.get('kept20_overlap_vs_exact', '')}")
        return out

    if args.hnsw:
        time_recall("exact")  # the kept leaves of exact search, for the overlap below

        def with_index() -> dict[str, Any]:
            store.vector_index = "hnsw"
            try:
                return time_recall("hnsw")
            finally:
                store.vector_index = "exact"

        res["hnsw"] = hnsw_experiment(store, db, qvecs[n_warm:], args, n, log, with_index)
    store.close()
    if not args.keep_db:
        shutil.rmtree(db_dir, ignore_errors=True)
    res["load_end"] = _loadavg()
    return res


# ----------------------------------------------------------------------------- HNSW
def _plan_text(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> str:
    return "\n".join(r[1] for r in con.execute("EXPLAIN " + sql, params).fetchall())


def hnsw_experiment(store: Store, db: Path, qvecs: np.ndarray, args: argparse.Namespace, n: int,
                    log: Callable[[str], None], with_index: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Every query shape timed without the index (exact) and with it; recall vs the exact user top 40."""
    con, dim = store.con, store.dim
    out: dict[str, Any] = {"latency_ms": {}, "recall_at_40_vs_exact_user_top40": {}, "rows_returned_mean": {}}
    con.execute("SET hnsw_enable_experimental_persistence = true")
    vec = f"?::FLOAT[{dim}]"
    share = con.execute("SELECT count(*) FILTER (WHERE user_id = ? AND level = 1 AND status = 'active') / count(*) "
                        "FROM nodes", [USER]).fetchone()[0]
    total = con.execute("SELECT count(*) FROM nodes").fetchone()[0]
    over = int(min(total, np.ceil(K_CAND / max(share, 1e-9) * args.overfetch)))
    out["overfetch_limit"], out["user_l1_share"] = over, round(float(share), 3)
    sqls: dict[str, tuple[str, Callable[[list[float]], list[Any]]]] = {
        "store_search_vector": ((f"SELECT id, array_cosine_similarity(embedding, {vec}) AS score FROM nodes "
                                 "WHERE user_id = ? AND level = ? AND status = 'active' "
                                 "ORDER BY score DESC, id LIMIT ?"),
                                lambda q: [q, USER, 1, K_CAND]),
        "unfiltered_distance_topk": ((f"SELECT id, array_cosine_distance(embedding, {vec}) AS d FROM nodes "
                                      "ORDER BY d LIMIT ?"), lambda q: [q, K_CAND]),
        "filtered_distance_topk": ((f"SELECT id, array_cosine_distance(embedding, {vec}) AS d FROM nodes "
                                    "WHERE user_id = ? AND level = ? AND status = 'active' ORDER BY d LIMIT ?"),
                                   lambda q: [q, USER, 1, K_CAND]),
        "overfetch_then_filter": ((f"SELECT id, d FROM (SELECT id, user_id, level, status, "
                                   f"array_cosine_distance(embedding, {vec}) AS d FROM nodes ORDER BY d LIMIT {over}) "
                                   "WHERE user_id = ? AND level = ? AND status = 'active' ORDER BY d, id LIMIT ?"),
                                  lambda q: [q, USER, 1, K_CAND]),
    }
    exact: dict[int, set[str]] = {}  # the store's exact per-user top 40, from the first (no-index) pass

    def measure(name: str, key: str) -> None:
        sql, params = sqls[name]
        for qv in qvecs[: min(3, len(qvecs))]:  # warm-up
            con.execute(sql, params(qv.tolist())).fetchall()
        walls, cpus, recalls, counts = [], [], [], []
        for i, qv in enumerate(qvecs):
            rows, w, c = _timed(lambda s, p: con.execute(s, p).fetchall(), sql, params(qv.tolist()))
            walls.append(w)
            cpus.append(c)
            counts.append(len(rows))
            got = {r[0] for r in rows if r[0].startswith(USER + ":L1:")}
            if name == "store_search_vector" and i not in exact:
                exact[i] = got
            recalls.append(len(got & exact[i]) / K_CAND)
        out["latency_ms"][key] = _summ(walls, cpus)
        out["recall_at_40_vs_exact_user_top40"][key] = round(statistics.fmean(recalls), 3)
        out["rows_returned_mean"][key] = round(statistics.fmean(counts), 1)
        s = out["latency_ms"][key]
        log(f"[{n}] {key:34s} wall p50 {s['wall_p50']:7.1f} p95 {s['wall_p95']:7.1f} | cpu p50 {s['cpu_p50']:7.1f} "
            f"p95 {s['cpu_p95']:7.1f} ms | rows {out['rows_returned_mean'][key]} recall@40 "
            f"{out['recall_at_40_vs_exact_user_top40'][key]}")

    out["explain_no_index"] = {k: _plan_text(con, sql, p(qvecs[0].tolist())) for k, (sql, p) in sqls.items()}
    for name in sqls:
        measure(name, f"{name} (no index)")

    def mem_mb() -> dict[str, float]:
        rows = con.execute("SELECT tag, memory_usage_bytes FROM duckdb_memory()").fetchall()
        return {r[0]: round(r[1] / 2**20, 1) for r in rows if r[1]}

    gc.collect()
    rss0, mem0 = _rss_mb(), mem_mb()
    _, w, c = _timed(ensure_hnsw, con)
    out["build_s"], out["build_cpu_s"] = round(w / 1000, 2), round(c / 1000, 2)
    out["indexed_rows"] = total
    rss1, mem1 = _rss_mb(), mem_mb()
    out["rss_growth_mb"] = round(rss1 - rss0, 0)
    out["duckdb_memory_mb_before"], out["duckdb_memory_mb_after"] = mem0, mem1
    try:
        out["index_info"] = [dict(zip([d[0] for d in con.description], r, strict=True)) for r in
                             con.execute("SELECT * FROM pragma_hnsw_index_info()").fetchall()]
    except duckdb.Error as exc:
        out["index_info"] = f"unavailable: {exc}"
    _, w, c = _timed(con.execute, "CHECKPOINT")
    out["checkpoint_s"], out["checkpoint_cpu_s"] = round(w / 1000, 2), round(c / 1000, 2)
    out["db_bytes_after"] = db.stat().st_size
    log(f"[{n}] HNSW build {out['build_s']} s (cpu {out['build_cpu_s']} s) over {total} rows, "
        f"RSS +{out['rss_growth_mb']:.0f} MB, file {out['db_bytes_after'] / 1e6:.0f} MB")

    out["explain"] = {k: _plan_text(con, sql, p(qvecs[0].tolist())) for k, (sql, p) in sqls.items()}
    out["uses_hnsw"] = {k: "HNSW_INDEX_SCAN" in v for k, v in out["explain"].items()}
    log(f"[{n}] HNSW_INDEX_SCAN in plan: {out['uses_hnsw']}")
    for ef in args.ef_search:
        con.execute(f"SET hnsw_ef_search = {int(ef)}")
        for name in sqls:
            if name != "store_search_vector" or ef == args.ef_search[0]:
                measure(name, f"{name} (HNSW, ef_search {ef})")
    con.execute("RESET hnsw_ef_search")
    out["store_hnsw_mode"] = with_index()  # the store itself with vector_index = "hnsw" (default ef_search)

    # write cost: the same add_nodes batch (and its delete) with the index present vs after dropping it
    rng = np.random.default_rng(7)

    def batch(tag: str) -> tuple[list[MemoryNode], np.ndarray]:
        v = rng.normal(size=(args.write_batch, dim)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        ns = [_node("bench-c", 1, f"bench-c:{tag}:{i}", f"segment:{tag}:{i}", T0, T0, f"write probe {i}", [], "S0")
              for i in range(args.write_batch)]
        return ns, v

    for with_index in (True, False):
        if not with_index:
            drop_hnsw(con)
        ns, v = batch("with" if with_index else "without")
        tag = "with_index" if with_index else "without_index"
        _, w, c = _timed(store.add_nodes, ns, v)
        out[f"add_nodes_{tag}"] = {"wall_s": round(w / 1000, 3), "cpu_s": round(c / 1000, 3)}
        _, w, c = _timed(store.delete_nodes, [x.id for x in ns])
        out[f"delete_nodes_{tag}"] = {"wall_s": round(w / 1000, 3), "cpu_s": round(c / 1000, 3)}
    out["write_batch"] = args.write_batch
    log(f"[{n}] add_nodes({args.write_batch}) with index {out['add_nodes_with_index']}, "
        f"without {out['add_nodes_without_index']}")
    return out


# ----------------------------------------------------------------------------- report
def _f(x: float) -> str:
    return f"{x:,.1f}" if x < 1000 else f"{x:,.0f}"


def _lat_row(name: str, s: dict[str, float], extra: str = "") -> str:
    return (f"| {name} | {_f(s['wall_p50'])} | {_f(s['wall_p95'])} | {_f(s['cpu_p50'])} | {_f(s['cpu_p95'])} |"
            + (f" {extra} |" if extra else ""))


def markdown(doc: dict[str, Any]) -> str:
    m = doc["meta"]
    out = [
        "# Recall latency: DuckDB store vs brute-force numpy + rank_bm25 (issue 3 §9)", "",
        (f"Generated by `{m['command']}` (started {m['when']}, commit `{m['commit']}`, {m['machine']}, "
        f"{m['cpus']} CPUs, Python {m['python']}, duckdb {m['duckdb']}, total {_f(m.get('total_s', 0))} s, "
        f"max RSS {m.get('max_rss_mb', 0):.0f} MB)."), "",
        (f"**Host load.** Load average {m['load_start']} at start, {m.get('load_end')} at end; this process ran at "
        f"niceness {m['nice']} beside other jobs (thread settings {m['threads']}). Wall-clock numbers therefore "
        "include time spent waiting for a core. **CPU ms** is the process CPU time of the call (all threads), "
        "the intrinsic cost: on an idle host a call's wall time is about its CPU time (less where DuckDB "
        "spreads a query over its threads)."), "",
        "Methods, per query (LLM never called; the methods are interleaved query by query):", "",
        ("* `recall_full`: `recall(store, MiniLM, llm=None, config, user, q, t, RecallOptions(gate='score', "
        "persist=False))`: query embedding (the centroid planner's batch of 2 texts), plan, leaf SQL, ancestors, "
        "score gate, context."),
        "* `embed_query`: that MiniLM batch alone.",
        ("* `sql_leaves`: `select_leaves` with the query vector and question time given, i.e. `Store.search_vector` + "
        "`Store.search_bm25` + fusion; `sql_vector` / `sql_bm25`: each store search alone (now "
        "served from the store's in-memory copies, `timem.store.memory_index`; before, one DuckDB query each)."),
        ("* `duckdb_vector` / `duckdb_bm25`: the same searches as one DuckDB query each "
        "(`timem.store.search.vector_top` / `bm25_top`, user filter in SQL), the path `sql_*` took before."),
        ("* `base_leaves`: brute force over the user's L1 nodes held in memory: numpy cosine over the "
        "(N, 384) matrix + `rank_bm25.BM25Okapi` + the same `fuse`; `base_vector` / `base_bm25`: each alone."), "",
        "## Summary (ms; target from the issue: p95 <= 50 ms at 100k)", "",
        "| L1 nodes (user) | method | wall p50 | wall p95 | CPU p50 | CPU p95 |", "|---:|---|---:|---:|---:|---:|",
    ]
    for r in doc["sizes"]:
        for k in ("recall_full", "embed_query", "sql_leaves", "sql_vector", "sql_bm25", "duckdb_vector", "duckdb_bm25",
                  "base_leaves", "base_vector", "base_bm25"):
            if k in r["latency_ms"]:
                out.append(_lat_row(f"{r['n_l1_user']:,} | `{k}`", r["latency_ms"][k]))
    for r in doc["sizes"]:
        e, ln = r["embedding"], r["parent_linking"]
        out += ["", f"## {r['n_l1_user']:,} L1 nodes for the measured user", "",
                f"Table `nodes`: {r['rows_total']:,} rows ("
                + ", ".join(f"{k} {v:,}" for k, v in r["rows_per_user_level"].items()) + "). "
                f"Load {r['load_start']} -> {r['load_end']}. {r['latency_ms']['recall_full']['n']} timed queries per "
                f"method after {m['args']['warmup']} warm-up queries; DuckDB threads {r['duckdb_threads']}; "
                f"planner complexities {r['plan_complexities']}.", "",
                "`recall_full` stages from its trace, wall ms p50 / p95: "
                + ", ".join(f"{k} {_f(v['p50'])} / {_f(v['p95'])}" for k, v in r["recall_stages_wall_ms"].items())
                + ".", "",
                "Build (wall / CPU seconds):", "",
                f"* node vectors: **{e['mode']}** (requested `{e['requested']}`): {e['l1_texts']:,} L1 texts; MiniLM "
                f"ran at {e['minilm_texts_per_s']} texts/s wall ({e.get('minilm_texts_per_cpu_s', '?')} per CPU s) "
                f"when measured, so a full embedding was projected at {_f(e['projected_full_embed_s'])} s against a "
                f"budget of {_f(e['budget_s'])} s"
                + (f"; each node vector is the re-normalised sum of the real MiniLM vectors of its two turns "
                   f"(pool of {e['pool_turn_texts']:,} distinct turn texts); cosine to the true MiniLM vector of the "
                   f"full node text (date line and speakers included): mean {e['composed_vs_true_cosine']['mean']}, "
                   f"min {e['composed_vs_true_cosine']['min']} over {e['composed_vs_true_cosine']['n']} nodes"
                   if e["mode"] == "pool" else "") + ".",
                (f"* `add_nodes`, L1 of both users in batches of {m['args']['batch']}: {r['insert_l1']['wall_s']} / "
                f"{r['insert_l1']['cpu_s']} s ({_f(r['insert_l1']['rows_per_cpu_s'])} rows per CPU s)."),
                f"* {r['parents']:,} L2-L5 parents: {r['insert_parents']['wall_s']} / "
                f"{r['insert_parents']['cpu_s']} s. "
                f"`add_nodes` with `child_ids` (one `UPDATE ... WHERE id IN (unnest)` per parent) measured on "
                f"{ln.get('sampled_parents', 0)} parents: {ln.get('add_nodes_with_links_per_parent_ms')} ms per "
                "parent; the rest were inserted by `add_nodes` without children and linked by one set-based "
                "UPDATE per user (" + ", ".join(f"{k}: {v}" for k, v in ln.items() if k.startswith("set_based"))
                + f"). Unlinked nodes below L5: {r['unlinked_below_L5']}.",
                (f"* **FTS build** (`refresh_fts(force=True)`, all {r['rows_total']:,} rows of every user and level): "
                f"{r['fts_build']['wall_s']} / {r['fts_build']['cpu_s']} s. The index is a snapshot: the first BM25 "
                "query after any write pays this again."),
                (f"* file after CHECKPOINT: {r['db_bytes_before_hnsw'] / 1e6:.0f} MB; baseline build (BM25Okapi over "
                f"the user's texts, matrix in RAM): {r['baseline_build_s']} s."), "",
                (f"Agreement SQL vs baseline (mean over queries): {r['agreement_sql_vs_baseline']}. The vector lists "
                "should be identical (same vectors); BM25 differs by design (DuckDB: Porter stemmer, its stop list, "
                "statistics over the whole column including the other user and L2-L5; baseline: no stemming, the "
                "user's L1 only)."), ""]
        h = r.get("hnsw")
        if h:
            out += [f"### vss HNSW index at {r['n_l1_user']:,}", "",
                    (f"`CREATE INDEX ... USING HNSW (embedding) WITH (metric = 'cosine')` over all "
                     f"{h['indexed_rows']:,} "
                    f"rows (an index cannot be partial or per user): **{h['build_s']} s wall / {h['build_cpu_s']} s "
                    f"CPU**; RSS +{h['rss_growth_mb']:.0f} MB; file {r['db_bytes_before_hnsw'] / 1e6:.0f} -> "
                    f"{h['db_bytes_after'] / 1e6:.0f} MB after CHECKPOINT ({h['checkpoint_s']} s). "
                    f"`add_nodes` of {h['write_batch']} new nodes: {h['add_nodes_with_index']} with the index vs "
                    f"{h['add_nodes_without_index']} without; `delete_nodes` of them: "
                    f"{h['delete_nodes_with_index']} vs "
                    f"{h['delete_nodes_without_index']}."), "",
                    (f"HNSW_INDEX_SCAN in the plan: {h['uses_hnsw']}. Over-fetch limit {h['overfetch_limit']:,} = "
                    f"40 / (user's L1 share of the table {h['user_l1_share']}) x {m['args']['overfetch']}."), "",
                    "| query | wall p50 | wall p95 | CPU p50 | CPU p95 | rows returned "
                    "| recall@40 vs exact user top-40 |",
                    "|---|---:|---:|---:|---:|---:|---:|"]
            for k, s in h["latency_ms"].items():
                out.append(_lat_row(f"`{k}`", s, f"{h['rows_returned_mean'][k]} | "
                                                 f"{h['recall_at_40_vs_exact_user_top40'][k]}"))
            sm = h.get("store_hnsw_mode")
            if sm:
                out += ["", (f"**The store in HNSW mode** (`Store(vector_index=\"hnsw\")`: over-fetch "
                             f"{m['args']['overfetch']}x the user's share, doubling until 40 rows), "
                             "same questions:"), "",
                        "| method | wall p50 | wall p95 | CPU p50 | CPU p95 |", "|---|---:|---:|---:|---:|"]
                for k, s in sm["latency_ms"].items():
                    out.append(_lat_row(f"`{k}` (hnsw)", s))
                out += ["", "`recall_full` (hnsw) stages, wall ms p50 / p95: "
                        + ", ".join(f"{k} {_f(v['p50'])} / {_f(v['p95'])}"
                                    for k, v in sm["recall_stages_wall_ms"].items())
                        + f". Kept-20 leaves shared with exact search: {sm.get('kept20_overlap_vs_exact')}."]
            out.append("")
    out += ["EXPLAIN plans, questions and every raw number: `recall-latency.json`.", ""]
    return "\n".join(out)


# ----------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default=None, help="L1 nodes of the measured user, comma separated "
                    "(default 10000,100000; --quick: 2000)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2,000 nodes, 10 queries, small pool")
    ap.add_argument("--queries", type=int, default=None, help="timed questions (default 50; --quick: 10)")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up questions (default 5; --quick: 2)")
    ap.add_argument("--repeat", type=int, default=1, help="timed passes over the queries")
    ap.add_argument("--other-ratio", type=float, default=1.0, help="second user's L1 nodes / measured user's")
    ap.add_argument("--pool", type=int, default=None, help="distinct turn texts embedded for real (default 3000; "
                    "--quick: 300)")
    ap.add_argument("--embed", choices=["auto", "full", "pool"], default="auto")
    ap.add_argument("--embed-budget-s", type=float, default=300.0,
                    help="auto: embed every node text for real only if projected below this")
    ap.add_argument("--fidelity-sample", type=int, default=None,
                    help="nodes whose true vector is compared in pool mode (default 200; --quick: 30)")
    ap.add_argument("--seg-per-session", type=int, default=10)
    ap.add_argument("--sessions-per-day", type=int, default=3)
    ap.add_argument("--batch", type=int, default=5000, help="add_nodes batch size")
    ap.add_argument("--link-sample", type=int, default=100, help="parents inserted with add_nodes' own linking")
    ap.add_argument("--threads", type=int, default=0, help="DuckDB threads (0: DuckDB's default)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                    help="a Config override for recall, e.g. --set recall_index='\"segtree\"' (repeatable)")
    ap.add_argument("--hnsw", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--ef-search", default="64,256", help="hnsw_ef_search values to try")
    ap.add_argument("--overfetch", type=float, default=3.0, help="over-fetch factor for the post-filter variant")
    ap.add_argument("--write-batch", type=int, default=500)
    ap.add_argument("--db-dir", default=None, help="where the temporary DuckDB files go")
    ap.add_argument("--keep-db", action="store_true")
    ap.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "timem" / "bench"),
                    help="pool vectors are cached here (keyed by seed and pool size; texts checked)")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS / "recall-latency", help="writes OUT.md and OUT.json")
    args = ap.parse_args()
    defaults = {"sizes": ("10000,100000", "2000"), "queries": (50, 10), "warmup": (5, 2), "pool": (3000, 300),
                "fidelity_sample": (200, 30)}
    for name, (full, quick) in defaults.items():  # --quick changes only what was not given explicitly
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    if args.quick and args.out == RESULTS / "recall-latency":
        args.out = Path(tempfile.gettempdir()) / "recall-latency-quick"
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    args.ef_search = [int(x) for x in str(args.ef_search).split(",")]
    t_all = time.perf_counter()

    def log(msg: str) -> None:
        print(f"{time.perf_counter() - t_all:7.1f}s {msg}", file=sys.stderr, flush=True)

    meta: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False,
                              cwd=Path(__file__).parent).stdout.strip(),
        "command": (f"nice -n {os.nice(0)} " if os.nice(0) else "") + ".venv/bin/python bench/recall_latency.py "
        + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()} {platform.system()}", "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "duckdb": duckdb.__version__, "nice": os.nice(0), "load_start": _loadavg(),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
    log(f"load {meta['load_start']}, nice {meta['nice']}, sizes {sizes}")
    emb = MiniLMEmbedder()
    import torch

    meta["threads"] = {**{v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
                       "torch": torch.get_num_threads()}
    cfg = Config(llm_backend="none", planner="centroid", gate="score",
                 **{k: json.loads(v) for k, _, v in (x.partition("=") for x in args.set)})
    meta["config_overrides"] = list(args.set)
    planner = CentroidPlanner(emb)  # centroids once per process, as recall() would
    qs = questions(args.queries + args.warmup, args.seed + 1)
    emb.embed(qs[:4])  # warm the model
    pool = turn_pool(args.pool, args.seed)
    # MiniLM's rate, measured now (it decides --embed auto), on up to 200 pool texts
    sample = pool[:200]
    _, w, c = _timed(emb.embed, sample)
    rate, cpu_rate = len(sample) / (w / 1000), len(sample) / (c / 1000)
    cache = Path(args.cache_dir) / f"recall-latency-pool-{args.seed}-{len(pool)}.npz"
    if cache.exists() and np.load(cache)["texts"].tolist() == pool:
        pool_vecs, how = np.load(cache)["vecs"], f"loaded from {cache}"
    else:
        t = time.perf_counter()
        pool_vecs = emb.embed(pool)
        how = f"embedded in {time.perf_counter() - t:.0f} s"
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, texts=np.array(pool), vecs=pool_vecs)
    pool_cache = {"texts": pool, "vecs": pool_vecs, "rate": rate, "cpu_rate": cpu_rate}
    meta["pool"] = {"turn_texts": len(pool), "vectors": how, "minilm_texts_per_s": round(rate, 1),
                    "minilm_texts_per_cpu_s": round(cpu_rate, 1)}
    log(f"MiniLM {rate:.0f} texts/s now; pool of {len(pool)} turn texts {how}")
    meta["questions"] = qs
    doc: dict[str, Any] = {"meta": meta, "sizes": []}
    for n in sizes:
        doc["sizes"].append(run_size(n, args, emb, planner, cfg, pool_cache, qs, log))
        meta["load_end"] = _loadavg()
        meta["total_s"] = round(time.perf_counter() - t_all, 1)
        meta["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")
        args.out.with_suffix(".md").write_text(markdown(doc), encoding="utf-8")
        log(f"wrote {args.out.with_suffix('.md')} and .json")
    log(f"done in {time.perf_counter() - t_all:.0f} s")


if __name__ == "__main__":
    main()
