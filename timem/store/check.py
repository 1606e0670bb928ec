"""``timem check``: verify the Temporal Memory Tree invariants of a store.

Checked, per user:
* temporal containment: every active parent's span contains each active child's span;
* links: a parent's ``child_ids`` and the children's ``parent_id`` agree;
* every active L1 segment has source turns, and they exist;
* every turn's id is ``user:session:seq`` of its own user, session and seq, with no ``:`` inside the user or
  session id (such ids can collide: one user's turn stored under another's);
* no orphan below the top level, except nodes whose parent window is still open in event time, and
  except users with L1 segments only (imported with ``--llm none`` or ``--l1-only``: consolidation
  has not run yet, which is a state, not damage);
* at most one open memory item per subject and single-valued attribute, as the items are read (a value whose
  successor was forgotten holds again until the next one: :func:`timem.item_holding.as_held`); two current home
  cities or jobs are a finding (rule ``item-open``), listing their values and ids;
* search indexes in sync: the BM25 index covers every node and was made with today's tokenizer
  (:func:`timem.store.bm25.tokenizer_current`); every vector is a finite unit vector; the table of the dates L1
  texts mention (``node_mentions``, :mod:`timem.store.mentions`) holds what each text mentions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from timem.config import Config
from timem.item_holding import as_held, open_twice
from timem.models import ID_SEPARATOR, Level
from timem.store.ports import IndexHealth, MemoryStore
from timem.tree.windows import closed_sessions, parent_window

#: how far past its calendar window an L3-L5 span may reach: a session is consolidated into the day it
#: started, so a conversation going on past midnight stretches that day by hours, not by days
OVERRUN = timedelta(days=1)


@dataclass(frozen=True)
class Violation:
    user_id: str | None
    node_id: str | None
    rule: str
    detail: str


def check_store(store: MemoryStore, config: Config, user_id: str | None = None) -> list[Violation]:
    """All invariant violations (empty list = healthy)."""
    out: list[Violation] = []
    for uid in [user_id] if user_id else store.users():
        out += _check_user(store, config, uid)
    out += _check_indexes(store)
    out += _check_zone(store, config)
    return out


def _check_user(store: MemoryStore, config: Config, uid: str) -> list[Violation]:
    out: list[Violation] = []
    nodes = {n.id: n for n in store.nodes(uid)}
    parents = store.parent_ids(list(nodes))
    sessions = store.sessions(uid)
    idle = timedelta(minutes=config.time.session_idle_timeout_minutes)
    closed: dict[str, bool] = {}
    if sessions:
        watermark = max(s.last_event_at for s in sessions)
        closed = closed_sessions(sessions, watermark, idle)
    l1_only = all(n.level == Level.SEGMENT for n in nodes.values())
    out += _check_turn_ids(store, uid)
    out += _check_items(store, uid)
    for n in nodes.values():
        for cid in n.child_ids:
            child = nodes.get(cid)
            if child is None:
                continue  # superseded or deleted children are history, not violations
            if not n.span.contains(child.span):
                out.append(Violation(uid, n.id, "containment", f"does not contain child {cid}"))
            if parents.get(cid) != n.id:
                out.append(Violation(uid, cid, "link", f"listed by {n.id} but its parent_id is {parents.get(cid)}"))
        if n.level >= Level.DAY:  # a day, week or month memory stays near its calendar window
            win = parent_window(Level(n.level), n.span_start, config.time.tz)
            if n.span_end > win.end + OVERRUN:
                out.append(Violation(uid, n.id, "window", f"L{int(n.level)} spans {n.span_start:%Y-%m-%d %H:%M} .. "
                                     f"{n.span_end:%Y-%m-%d %H:%M} UTC, more than a day past its calendar window (ends "
                                     f"{win.end:%Y-%m-%d %H:%M}): a session continued on a later day; import "
                                     "the later turns as a new session"))
        if n.level == Level.SEGMENT:
            if not n.source_turn_ids:
                out.append(Violation(uid, n.id, "source-turns", "L1 segment without source turns"))
            elif len(store.turns(uid, ids=n.source_turn_ids)) != len(n.source_turn_ids):
                out.append(Violation(uid, n.id, "source-turns", "some source turns are missing"))
        if n.level < Level.PROFILE and not l1_only and parents.get(n.id) not in nodes:
            if n.level == Level.SEGMENT:
                still_open = not closed.get(n.session_id or "", True)
            elif n.level == Level.SESSION:
                day = parent_window(Level.DAY, n.span_start, config.time.tz)
                still_open = watermark is not None and watermark < day.end
            else:
                still_open = watermark is not None and watermark < parent_window(Level(n.level + 1), n.span_start,
                                                                                  config.time.tz).end
            if not still_open:
                out.append(Violation(uid, n.id, "orphan", f"L{int(n.level)} node of a closed window has no "
                                     "active parent; run `timem consolidate --flush` (if the audit log has "
                                     "`consolidation-failed` for its window: with a larger model or an "
                                     "endpoint) or re-ingest"))
    return out


def _check_turn_ids(store: MemoryStore, uid: str) -> list[Violation]:
    """Turns whose id is not ``user:session:seq`` of their own fields, or whose user or session id holds ``:``."""
    out: list[Violation] = []
    for t in store.turns(uid):
        if ID_SEPARATOR in t.user_id or ID_SEPARATOR in t.session_id:
            out.append(Violation(uid, None, "turn-id", f"turn {t.id}: user id {t.user_id!r} or session id "
                                 f"{t.session_id!r} holds ':', so its turn ids can collide with another user's; "
                                 "re-import the user under an id without ':'"))
        elif t.id != ID_SEPARATOR.join((t.user_id, t.session_id, str(t.seq))):
            out.append(Violation(uid, None, "turn-id", f"turn {t.id} belongs to session {t.session_id!r} seq {t.seq} "
                                 "of this user, so its id should be "
                                 f"{ID_SEPARATOR.join((t.user_id, t.session_id, str(t.seq)))}; re-import the user"))
    return out


def _check_items(store: MemoryStore, uid: str) -> list[Violation]:
    """Two or more open items of one subject and single-valued attribute, as read (:func:`as_held`)."""
    twice = open_twice(as_held(store.items(uid)))
    return [Violation(uid, None, "item-open", f"{subject}'s {attribute} has {len(items)} current values: "
                      + ", ".join(f"{i.value} ({i.id}, from {i.valid_from:%Y-%m-%d})" for i in items)
                      + "; forget the one that no longer holds (`timem forget \"<value>\"`)")
            for (_, subject, attribute), items in sorted(twice.items())]


def _check_indexes(store: IndexHealth) -> list[Violation]:
    out: list[Violation] = []
    health = store.index_health()
    if health["bm25_documents"] != health["nodes"] or health["bm25_stale"]:
        out.append(Violation(None, None, "fts", f"the BM25 index holds {health['bm25_documents']} documents for "
                                                f"{health['nodes']} nodes (out of step: "
                                                f"{', '.join(health['bm25_stale'][:5]) or 'extra documents'}); "
                                                "rebuild it with `timem check --repair`"))
    if not health["bm25_tokenizer_current"]:
        out.append(Violation(None, None, "fts", "the BM25 index was made with another tokenizer than this TiMem's "
                                                "(an older one split \"LH1234\" into \"lh\" and dropped numbers), so "
                                                "its terms differ from the queries'; rebuild it with "
                                                "`timem check --repair`"))
    out += [Violation(None, i, "vector", "embedding is not a unit vector") for i in health["non_unit_vectors"]]
    out += [Violation(None, i, "mentions", "the dates stored for this segment (node_mentions) differ from those its "
                                           "text mentions; rebuild them with `timem check --repair`")
            for i in health["mentions_stale"]]
    return out


def _check_zone(store: IndexHealth, config: Config) -> list[Violation]:
    """The file's days, weeks and months were cut in another zone than the configured ``timezone``: new windows
    would be cut differently from the old ones (and the old ones read with the wrong day boundaries)."""
    recorded = store.calendar_zone()
    if recorded is None or recorded == config.time.timezone:
        return []
    return [Violation(None, None, "zone", f"this file's L3-L5 windows were cut in {recorded}, the settings say "
                                          f"timezone = {config.time.timezone!r}; set timezone = {recorded!r} for "
                                          "this file (or import into a new one)")]
