"""Extractive consolidation (no LLM): a memory is its children's most informative sentences, verbatim.

Deterministic and grounded by construction: every output line is a sentence of a child's content,
with the speaker prefix it had there (``Caroline: ...``); nothing is reworded, nothing is attributed
anew (a line without a known speaker prefix stays without one).

* **Units.** Each child content line is parsed: L1's ``On 8 May 2023 (Monday) 13:56:`` header is
  skipped, and so is a hybrid node's title (the block before its first blank line); a leading short
  date (``8 May: ``, written by L4/L5) is read back; a prefix ``Name: `` counts as a speaker only if
  ``Name`` is one of the user's speakers. In a verbatim L1 a line without a prefix continues the
  turn above it (a reply of several lines) and keeps that turn's speaker. The rest is split into sentences
  (:func:`timem.prompts.common.split_sentences`); each sentence is a unit that keeps its line's
  speaker and date. Identical units are kept once (the first).
* **Score** = 0.4 * centrality (cosine to the window's mean embedding, clipped to [0, 1])
  + 0.6 * salience in [0, 1]: content words (CJK characters count, so Chinese and Japanese lines are
  not penalised for lacking capitals), numbers and resolved dates, capitalised names other than the
  speakers', first-person facts ("I am / I have / my ...", 我 / 私 / 저 ...); questions and fillers
  score lower.
* **Selection**: maximal marginal relevance (``MMR_LAMBDA`` * score - (1 - ``MMR_LAMBDA``) * the
  highest cosine to a unit already chosen) until no remaining unit fits the level's token cap
  (cl100k, :func:`timem.tokens.count_tokens`, counted on the rendered memory). Ties go to the
  earlier unit; there is no randomness, so the same children give the same bytes.
* **Rendering**: chosen units in source order; sentences of one source line are joined again into
  one line. L4 and L5 (several days) prefix each line with its short date (``8 May: Caroline: ...``).
  L5 is one block per participant (speakers, not assistants) from their first-person statements
  (their other statements if they have none), the cap shared equally among them.
* **Assistants.** Sentences by an assistant speaker (the speaker of role-``assistant`` turns, e.g. the
  studio chat's ``Assistant``) are left out of L2-L5 whenever the window holds any other sentence: a
  chat assistant's answer (possibly wrong) is not a fact the user stated. The verbatim L1 keeps it,
  labelled ``Assistant: ...``; a window of nothing but assistant lines keeps them with that label.

All embeddings of a window are computed in one ``embedder.embed`` batch (:class:`EmbeddingCache` lets
the consolidator embed each sentence once across levels).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from zoneinfo import ZoneInfo

import numpy as np

from timem.consolidation.grounding import content_words
from timem.embed.protocol import Embedder
from timem.models import Level, MemoryNode
from timem.prompts.common import split_sentences
from timem.tokens import count_tokens

MODEL_ID = "extractive"  #: ``model_id`` of every extractive node (no model wrote it)
PROMPT_VERSION = "extractive-v1"  #: recorded as the node's ``prompt_version`` (selection rules, not a prompt)
MMR_LAMBDA = 0.7
#: weight of centrality against salience. Not min-max scaled: MiniLM is an English model, and on a
#: Chinese session scaling its weak centrality differences pushed the most factual line to the bottom.
W_CENTRAL = 0.4
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_L1_HEAD = re.compile(r"^On \d{1,2} [A-Za-z]+ \d{4} \([A-Za-z]+\) \d{1,2}:\d{2}:$")
_DATE_PREFIX = re.compile(r"^(\d{1,2}) (" + "|".join(_MONTHS) + r"): ")
_NUMBER = re.compile(r"\d|[一二三四五六七八九十百千万两]+[个岁年月日天号点]")
_RESOLVED = re.compile(r"\[=")
_NAME = re.compile(r"\b[A-Z][a-zA-Z'’-]+")
_FIRST_PERSON_FACT = re.compile(
    r"\b(I am|I'm|I have|I've|I had|I was|I work|I live|I got|I went|I started|I love|I like|I just|"
    r"I recently|I finally|my|My)\b|我(是|有|在|的|喜欢|爱|住|叫|去|买|学|养|开始|刚|最近|已经)|"
    r"(私|僕|俺)(は|の|が|も)|(저는|나는|제가|내가)")
_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|I'd|I'll|my|My|me|mine|myself)\b|[我私僕俺]|저는|나는|제가|내가")
_CJK_STOP = re.compile(r"[。！？]$")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


@dataclass(frozen=True)
class Unit:
    """One selectable sentence.

    ``speaker`` is ``None`` when its line had no known speaker prefix; ``day`` is its (local) date;
    ``src`` identifies the source line (child index, line index) and ``pos`` the unit's place in
    source order.
    """

    speaker: str | None
    text: str
    day: date
    src: tuple[int, int]
    pos: int

    @property
    def line(self) -> str:
        """``Speaker: sentence`` (or the bare sentence)."""
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


class EmbeddingCache:
    """An :class:`Embedder` that remembers the vector of every text it embedded (up to ``max_items``).

    Upper levels select from their children's selections, so the same sentences come back at L3, L4
    and L5; the consolidator keeps one cache so that each is embedded once per process. Texts not yet
    seen are embedded in one batch per call.
    """

    def __init__(self, embedder: Embedder, max_items: int = 50_000) -> None:
        self.embedder, self.max_items = embedder, max_items
        self.model_id, self.dim = embedder.model_id, embedder.dim
        self._vecs: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32, L2-normalised (the wrapped embedder's vectors)."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._vecs))
        if missing:
            if len(self._vecs) + len(missing) > self.max_items:
                self._vecs.clear()
            for t, v in zip(missing, np.asarray(self.embedder.embed(missing), dtype=np.float32), strict=True):
                self._vecs[t] = v
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vecs[t] for t in texts])


def short_date(d: date) -> str:
    """``8 May`` (the line prefix of multi-day memories)."""
    return f"{d.day} {_MONTHS[d.month - 1]}"


def _split_speaker(line: str, speakers: Sequence[str]) -> tuple[str | None, str]:
    for name in speakers:  # longest first (see :func:`parse_units`)
        if line.startswith(f"{name}: "):
            return name, line[len(name) + 2:]
    return None, line


def parse_units(children: Sequence[MemoryNode], speakers: Sequence[str], tz: ZoneInfo,
                assistants: Sequence[str] = ()) -> list[Unit]:
    """The units (sentences with speaker and date) of ``children``, in source order (see module doc).

    Args:
        children: the nodes being consolidated, oldest first.
        speakers: the user's speaker names; only these count as ``Name: `` prefixes.
        tz: the users' zone (a unit without a date prefix gets its child's span start date there).
        assistants: assistant speaker names; their units are dropped unless nothing else is left.
    """
    names = sorted(set(speakers), key=lambda s: (-len(s), s))
    out: list[Unit] = []
    seen: set[tuple[str | None, str]] = set()
    for ci, child in enumerate(children):
        body = child.content.strip()
        if child.mode == "hybrid" and "\n\n" in body:
            body = body.split("\n\n", 1)[1]  # the LLM title is not a selection
        default_day = child.span_start.astimezone(tz).date()
        turn_speaker: str | None = None  # verbatim L1: the speaker of the turn a continuation line belongs to
        for li, raw in enumerate(body.splitlines()):
            line = raw.strip()
            if not line or _L1_HEAD.match(line):
                continue
            day = default_day
            m = _DATE_PREFIX.match(line)
            if m and int(child.level) >= int(Level.WEEK):  # L4 weeks never cross a month, so not a year
                try:
                    day = date(default_day.year, _MONTHS.index(m.group(2)) + 1, int(m.group(1)))
                    line = line[m.end():]
                except ValueError:
                    pass
            speaker, text = _split_speaker(line, names)
            if child.mode == "verbatim":
                if speaker is None:
                    speaker = turn_speaker
                turn_speaker = speaker
            for sent in split_sentences(text):
                key = (speaker, sent)
                if key in seen:
                    continue
                seen.add(key)
                out.append(Unit(speaker, sent, day, (ci, li), len(out)))
    skip = set(assistants)
    if skip and any(u.speaker not in skip for u in out):
        out = [Unit(u.speaker, u.text, u.day, u.src, i) for i, u in enumerate(u for u in out if u.speaker not in skip)]
    return out


def salience(unit: Unit, speakers: Sequence[str]) -> float:
    """Informativeness of one unit in [0, 1] (see module doc); pure, language-aware."""
    text = unit.text
    cjk = len(_CJK.findall(text))
    latin = len([w for w in content_words(text) if not _CJK.match(w)])
    words = latin + cjk / 2.0
    s = 0.35 * min(1.0, words / 10.0)
    if _NUMBER.search(text) or _RESOLVED.search(text):
        s += 0.2
    names = {m.group() for m in _NAME.finditer(text)  # not the sentence's first word, a speaker, or I'm / I've
             if m.start() > 0 and m.group() not in speakers and not m.group().startswith(("I'", "I’"))}
    s += 0.15 * min(1.0, len(names) / 2.0)
    if _FIRST_PERSON_FACT.search(text):
        s += 0.25
    if words < 3:
        s -= 0.2
    if text.rstrip().endswith(("?", "？")):
        s -= 0.15
    return float(min(1.0, max(0.0, s + 0.05)))


def _scores(units: Sequence[Unit], vecs: np.ndarray, speakers: Sequence[str]) -> np.ndarray:
    if len(units) == 1:
        return np.array([1.0])
    centroid = vecs.mean(axis=0)
    norm = float(np.linalg.norm(centroid))
    central = np.clip(vecs @ (centroid / norm), 0.0, 1.0) if norm > 0 else np.zeros(len(units))
    sal = np.array([salience(u, speakers) for u in units])
    return np.round(W_CENTRAL * central + (1 - W_CENTRAL) * sal, 6)


def mmr_select(units: Sequence[Unit], vecs: np.ndarray, scores: np.ndarray, fits: Callable[[list[Unit]], bool],
               lam: float | None = None) -> list[Unit]:
    """Greedy MMR over ``units`` (rows of ``vecs``, L2-normalised) while ``fits(chosen)`` holds
    (``lam``: relevance weight, default :data:`MMR_LAMBDA`).

    A unit that does not fit is skipped for good and the next best is tried, so shorter units can
    still fill the cap. Ties go to the lower index. Returns the chosen units in choice order.
    """
    lam = MMR_LAMBDA if lam is None else lam
    chosen: list[int] = []
    left = list(range(len(units)))
    sims = vecs @ vecs.T if len(units) else np.zeros((0, 0))
    while left:
        if chosen:
            red = np.round(sims[np.ix_(left, chosen)].max(axis=1), 6)
        else:
            red = np.zeros(len(left))
        mmr = np.round(lam * scores[left] - (1 - lam) * red, 6)
        best = left[int(np.argmax(mmr))]  # argmax returns the first maximum: the earliest unit
        left.remove(best)
        if fits([units[i] for i in chosen + [best]]):
            chosen.append(best)
    return [units[i] for i in chosen]


def render_units(units: Sequence[Unit], *, dated: bool) -> str:
    """Chosen units in source order, one line each; consecutive sentences of one source line are joined again
    (with a space, none after CJK punctuation), so every line is a verbatim piece of its source line.
    Lines get a ``8 May: `` prefix if ``dated``."""
    lines: list[str] = []
    last: Unit | None = None
    for u in sorted(units, key=lambda u: u.pos):
        if last is not None and u.src == last.src and u.pos == last.pos + 1:  # the next sentence of that line
            lines[-1] += ("" if _CJK_STOP.search(last.text) else " ") + u.text
        else:
            lines.append((f"{short_date(u.day)}: " if dated else "") + u.line)
        last = u
    return "\n".join(lines)


def _truncate(unit: Unit, cap: int, dated: bool) -> Unit:
    """``unit`` cut at a word (CJK: character) boundary, with "…", so that it renders within ``cap`` tokens."""
    parts = list(unit.text) if _CJK.search(unit.text) and " " not in unit.text else unit.text.split(" ")
    joiner = "" if len(parts) == len(unit.text) else " "
    lo, hi = 0, len(parts)
    while lo < hi:  # the longest prefix that fits
        mid = (lo + hi + 1) // 2
        cand = Unit(unit.speaker, joiner.join(parts[:mid]) + "…", unit.day, unit.src, unit.pos)
        if count_tokens(render_units([cand], dated=dated)) <= cap:
            lo = mid
        else:
            hi = mid - 1
    return Unit(unit.speaker, joiner.join(parts[:lo]) + "…", unit.day, unit.src, unit.pos)


def select(units: Sequence[Unit], embedder: Embedder, cap: int, *, dated: bool, speakers: Sequence[str] = ()
           ) -> list[Unit]:
    """MMR selection of ``units`` whose rendering stays within ``cap`` cl100k tokens.

    If not even the best unit fits on its own, it is cut (see :func:`_truncate`) rather than
    returning nothing. Returns the chosen units (any order; :func:`render_units` sorts them).
    """
    if not units:
        return []
    vecs = np.asarray(embedder.embed([u.line for u in units]), dtype=np.float32)
    scores = _scores(units, vecs, speakers)
    chosen = mmr_select(units, vecs, scores, lambda us: count_tokens(render_units(us, dated=dated)) <= cap)
    if not chosen:
        chosen = [_truncate(units[int(np.argmax(scores))], cap, dated)]
    return chosen


def extract(level: Level, children: Sequence[MemoryNode], embedder: Embedder, cap: int, tz: ZoneInfo, *,
            speakers: Sequence[str], participants: Sequence[str] = (), assistants: Sequence[str] = ()) -> str:
    """The extractive memory of one window: its children's best sentences within ``cap`` tokens.

    Args:
        level: the level being written (2-5); L4/L5 lines are dated, L5 is one block per participant.
        children: the window's children, oldest first (non-empty).
        embedder: any :class:`Embedder`; one batch per window (per participant at L5).
        cap: cl100k token cap of the result (>= 16).
        tz: the users' zone (dates of the lines).
        speakers: every speaker name of the user (turn speakers), to recognise ``Name: `` prefixes.
        participants: L5 only: the people to profile (speakers, not assistants), in order.
        assistants: assistant speaker names, left out when the window has other lines (module doc).

    Returns:
        The content (non-empty when the children have any text); ``count_tokens(result) <= cap``.
    """
    units = parse_units(children, speakers, tz, assistants)
    dated = int(level) >= int(Level.WEEK)
    if int(level) != int(Level.PROFILE) or not participants:
        return render_units(select(units, embedder, cap, dated=dated, speakers=speakers), dated=dated)
    people = [p for p in participants if any(u.speaker == p for u in units)]
    if not people:
        return render_units(select(units, embedder, cap, dated=True, speakers=speakers), dated=True)
    blocks: list[str] = []
    share = (cap - (len(people) - 1)) // len(people)
    for person in people:
        own = [u for u in units if u.speaker == person]
        first = [u for u in own if _FIRST_PERSON.search(u.text)] or own
        chosen = select(first, embedder, max(share, 1), dated=True, speakers=speakers)
        blocks.append(render_units(chosen, dated=True))
    content = "\n".join(b for b in blocks if b)
    while content and count_tokens(content) > cap:  # joins may add a token; drop the last line until it fits
        lines = content.splitlines()
        content = "\n".join(lines[:-1])
    return content
