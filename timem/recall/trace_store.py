"""The persisted (compact) form of a recall trace: ids, scores and decisions, not texts the store holds.

A whole :class:`~timem.recall.trace.RecallTrace` as JSON is 55-110 KB (160 candidates of 14 fields each,
a hundred gate decisions, the context's text); 3,921 of them took 435 MB of a 459 MB file. What is
persisted instead (:func:`compact`) is a JSON object, ``"format": 2``:

* every scalar field as in the trace (``trace_id``, ``query``, ``question_time``, ``bm25_query``,
  ``context_tokens``, ``answer`` ...) and the short structured ones whole: ``settings``, ``plan``, ``items``
  (the memory items given, with the line each read as: an item can change later, the line is what this
  recall said), ``latency_ms``, ``llm_calls``, ``notes``;
* ``ids``: every memory id the trace names, in first-seen order; below, a memory is its index there;
* ``candidates``, ``ancestors``, ``gate.decisions``: **columns** (``{field: [values]}``), a field left out
  when every value is its default, ``rank`` left out when the candidates are listed 1..n in rank order;
  floats exactly as recalled (JSON's shortest round-trip form);
* ``node_ids``: the memories of the context, as indices;
* ``context``: ``{"sha": …, "passage_tokens": …, "layout": …, "timezone": …}`` when the context text is
  rebuilt from its memories (:func:`rebuild_context`: the item lines, then the memories rendered as recall
  rendered them, photo captions in the same form, an over-long memory cut to the same passage). :func:`compact`
  checks that the rebuild gives the recalled text exactly, and stores ``{"text": …}`` instead when it does not (a
  caller that changed the context after recall, e.g. a benchmark restricting levels; a caption or speaker label
  left out or shortened by ``caption_cut`` / ``speaker_labels``).

The store zlib-compresses the document (:mod:`timem.store.traces`): about 5 KB per trace on LoCoMo
(``bench/results/trace-size.md``). :func:`expand` turns documents back into traces, joining the store for
the context's memories in one query per user: a memory erased since is left out of the context and a
note says so; a memory edited since shows its current text, and a note says the context differs from
what the recall gave (the stored ``sha`` no longer matches). Documents without ``format`` (whole traces,
written before) load as they are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from timem.models import MemoryNode
from timem.recall.ancestors import AncestorRecord
from timem.recall.condense import passage
from timem.recall.context import Layout, best_passage, count_context_tokens, render_context
from timem.recall.density import with_captions
from timem.recall.gating import GateDecision
from timem.recall.leaves import Candidate
from timem.recall.trace import RecallTrace
from timem.settings import StoreSettings
from timem.store.ports import MemoryStore

FORMAT = 2
#: per row model: the fields holding one memory id, and those holding a list of memory ids
_ID_FIELDS: dict[type[BaseModel], tuple[set[str], set[str]]] = {
    Candidate: ({"node_id", "duplicate_of"}, set()),
    AncestorRecord: ({"node_id", "via_leaf"}, {"reached_by", "path"}),
    GateDecision: ({"node_id"}, set()),
}


class _Ids:
    """Memory ids <-> their index in the document's ``ids`` list."""

    def __init__(self, ids: Sequence[str] = ()) -> None:
        self.ids = list(ids)
        self._at = {nid: i for i, nid in enumerate(self.ids)}

    def index(self, nid: str | None) -> int | None:
        if nid is None:
            return None
        if nid not in self._at:
            self._at[nid] = len(self.ids)
            self.ids.append(nid)
        return self._at[nid]

    def name(self, i: int | None) -> str | None:
        return None if i is None else self.ids[i]


def _columns(rows: Sequence[BaseModel], model: type[BaseModel], ids: _Ids) -> dict[str, list[Any]]:
    """Rows of ``model`` as ``{field: [values]}`` (JSON values; memory ids as indices); a field whose every
    value equals its default is left out."""
    if not rows:
        return {}
    one, many = _ID_FIELDS[model]
    dumped = [r.model_dump(mode="json") for r in rows]
    out: dict[str, list[Any]] = {}
    for name, info in model.model_fields.items():
        vals = [d[name] for d in dumped]
        default = info.get_default(call_default_factory=True)
        if default is not PydanticUndefined and all(v == default and type(v) is type(default) for v in vals):
            continue
        if name in one:
            vals = [ids.index(v) for v in vals]
        elif name in many:
            vals = [[ids.index(x) for x in v] for v in vals]
        out[name] = vals
    return out


def _rows(cols: Mapping[str, list[Any]], model: type[BaseModel], ids: _Ids, n: int) -> list[dict[str, Any]]:
    """The inverse of :func:`_columns` for ``n`` rows, as dicts for ``model`` (left-out fields take their
    defaults when validated)."""
    one, many = _ID_FIELDS[model]
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    for name, vals in cols.items():
        if len(vals) != n:
            raise ValueError(f"trace column {name!r} has {len(vals)} values for {n} rows")
        if name in one:
            vals = [ids.name(v) for v in vals]
        elif name in many:
            vals = [[ids.name(x) for x in v] for v in vals]
        for row, v in zip(rows, vals, strict=True):
            row[name] = v
    return rows


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def passage_tokens(trace: RecallTrace) -> int:
    """The token cap an over-long memory was cut to (:func:`timem.recall.gating.apply_budget`): a quarter of
    the budget left after the memory items, at least 32."""
    lines = [u.line for u in trace.items]
    item_tokens = count_context_tokens("\n".join(lines)) + 2 if lines else 0
    budget = max(0, int(trace.settings.get("token_budget", 1000)) - item_tokens)
    return max(32, budget // 4)


def rebuild_context(trace: RecallTrace, nodes: Mapping[str, MemoryNode], layout: Layout, tz: ZoneInfo,
                    passages: Collection[str] = (), passage_tokens: int = 0) -> str:
    """The context of ``trace`` from its memories (``nodes`` by id; absent ones are left out): the memory
    items' lines, a blank line, then the memories rendered in ``layout`` (dates in ``tz``), each one in
    ``trace.condensed`` cut to its passage within that cap, then those in ``passages`` cut to their passage of
    at most ``passage_tokens`` for the question, as recall cut them (:func:`timem.recall.context.best_passage`)."""
    form = trace.settings.get("caption_form", "whole")

    def shown(nid: str) -> MemoryNode:
        node = with_captions(nodes[nid], form) if form == "short" else nodes[nid]
        if nid in trace.condensed:
            node = passage(node, trace.query, set(trace.condense_stems), trace.condensed[nid])
        return best_passage(node, trace.query, passage_tokens) if nid in passages else node

    given = [shown(nid) for nid in trace.node_ids if nid in nodes]
    body = render_context(given, tz, layout) if given else ""
    lines = [u.line for u in trace.items]
    return "\n".join(lines) + ("\n\n" + body if body else "") if lines else body


def _context_spec(trace: RecallTrace, sources: Mapping[str, MemoryNode], ids: _Ids) -> dict[str, Any]:
    """How the context is persisted: as a recipe to rebuild it when that gives the recalled text exactly."""
    if any(nid not in sources for nid in trace.node_ids):
        return {"text": trace.context}
    layout = trace.settings.get("context_layout", "grouped")
    zone = trace.settings.get("timezone", "UTC")
    cap = passage_tokens(trace)
    stems = set(trace.condense_stems)
    form = trace.settings.get("caption_form", "whole")
    whole = {nid: with_captions(sources[nid], form) if form == "short" else sources[nid] for nid in trace.node_ids}
    shown = {nid: passage(whole[nid], trace.query, stems, trace.condensed[nid]) if nid in trace.condensed
             else whole[nid] for nid in trace.node_ids}
    cut = [nid for nid in trace.node_ids if best_passage(shown[nid], trace.query, cap) is not shown[nid]]
    try:
        rebuilt = rebuild_context(trace, sources, layout, ZoneInfo(zone), cut, cap)
    except (ValueError, KeyError):  # an unknown layout or zone in hand-made settings: keep the text
        return {"text": trace.context}
    if rebuilt != trace.context:
        return {"text": trace.context}
    return {"sha": _sha(trace.context), "layout": layout, "timezone": zone, "passage_tokens": cap,
            "passages": [ids.index(nid) for nid in cut]}


def compact(trace: RecallTrace, sources: Mapping[str, MemoryNode]) -> dict[str, Any]:
    """The document persisted for ``trace`` (see the module doc).

    Args:
        sources: the context's memories as stored when it was recalled (id -> node; the recall pipeline
            hands them over, :meth:`RecallTrace.attach_sources`); the context is kept as text when a memory
            is missing here or the rebuild does not give the recalled text exactly.
    """
    doc = trace.model_dump(mode="json", exclude={"candidates", "ancestors", "gate", "node_ids", "context"})
    ids = _Ids()
    ranked = list(trace.candidates)  # in the trace's order (rank order, as recall lists them)
    cands = _columns(ranked, Candidate, ids)
    if cands.get("rank") == list(range(1, len(ranked) + 1)):
        del cands["rank"]
    gate = trace.gate.model_dump(mode="json", exclude={"decisions"})
    gate["decisions"] = _columns(trace.gate.decisions, GateDecision, ids)
    doc.update(format=FORMAT, candidates=cands, n_candidates=len(ranked),
               ancestors=_columns(trace.ancestors, AncestorRecord, ids), n_ancestors=len(trace.ancestors),
               gate=gate, n_decisions=len(trace.gate.decisions), node_ids=[ids.index(n) for n in trace.node_ids],
               context=_context_spec(trace, sources, ids))
    doc["ids"] = ids.ids
    return doc


def _expand_one(doc: Mapping[str, Any], nodes: Mapping[str, MemoryNode]) -> RecallTrace:
    """One compact document -> its trace (``nodes``: the user's memories by id that still exist)."""
    ids = _Ids(doc["ids"])
    n = int(doc["n_candidates"])
    cands = dict(doc["candidates"])
    cands.setdefault("rank", list(range(1, n + 1)))
    spec = doc["context"]
    skip = {"format", "ids", "n_candidates", "n_ancestors", "n_decisions", "candidates", "ancestors", "gate",
            "node_ids", "context"}
    trace = RecallTrace.model_validate({  # one validation of the whole trace (as a whole one loads)
        **{k: v for k, v in doc.items() if k not in skip},
        "candidates": _rows(cands, Candidate, ids, n),
        "ancestors": _rows(doc["ancestors"], AncestorRecord, ids, int(doc["n_ancestors"])),
        "gate": {**doc["gate"], "decisions": _rows(doc["gate"]["decisions"], GateDecision, ids,
                                                   int(doc["n_decisions"]))},
        "node_ids": [ids.name(i) for i in doc["node_ids"]], "context": spec.get("text", "")})
    if "text" in spec:
        return trace
    trace.context = rebuild_context(trace, nodes, spec["layout"], ZoneInfo(spec["timezone"]),
                                    {ids.ids[i] for i in spec["passages"]}, int(spec["passage_tokens"]))
    gone = [nid for nid in trace.node_ids if nid not in nodes]
    if gone:
        trace.notes.append(f"context rebuilt from its memories: {len(gone)} of {len(trace.node_ids)} no longer "
                           f"exist (erased) and are left out: {', '.join(gone)}")
    elif _sha(trace.context) != spec["sha"]:
        trace.notes.append("context rebuilt from its memories as they read now: a memory was edited since this "
                           "recall, so the text differs from the context it gave")
    return trace


def _context_ids(doc: Mapping[str, Any]) -> Iterable[str]:
    if doc.get("format") != FORMAT or "text" in doc["context"]:
        return []
    return [doc["ids"][i] for i in doc["node_ids"]]


def expand(store: MemoryStore, docs: Sequence[Mapping[str, Any]]) -> list[RecallTrace]:
    """Stored documents (:meth:`MemoryStore.traces`) -> traces, in order: compact ones rebuilt with their
    context's memories read from ``store`` (one query per user, any status), whole ones validated.

    Raises:
        pydantic.ValidationError / ValueError: a document that is neither form (a damaged row).
    """
    wanted: dict[str, set[str]] = {}
    for d in docs:
        wanted.setdefault(str(d["user_id"]), set()).update(_context_ids(d))
    nodes = {user: {n.id: n for n in store.nodes(user_id=user, ids=sorted(ids), status=None)} if ids else {}
             for user, ids in wanted.items()}
    return [_expand_one(d, nodes[str(d["user_id"])]) if d.get("format") == FORMAT else RecallTrace.model_validate(d)
            for d in docs]


def context_sources(store: MemoryStore, trace: RecallTrace) -> dict[str, MemoryNode]:
    """The context's memories of ``trace`` as the store holds them now (any status), for a trace that came
    without them (e.g. one rebuilt from JSON)."""
    if not trace.node_ids:
        return {}
    return {n.id: n for n in store.nodes(user_id=trace.user_id, ids=list(trace.node_ids), status=None)}


def save_trace(store: MemoryStore, trace: RecallTrace, retention: StoreSettings | None = None) -> int:
    """Persist ``trace`` in the compact form (insert or replace by ``trace_id``), then apply the retention rule of
    ``retention`` (default: :class:`~timem.settings.StoreSettings`' defaults); returns how many older traces it
    deleted. The context's memories come from :meth:`RecallTrace.attach_sources`, else from the store."""
    keep = retention or StoreSettings()
    sources = trace.sources
    if any(nid not in sources for nid in trace.node_ids):
        sources = {**context_sources(store, trace), **sources}
    return store.save_trace(trace.trace_id, trace.user_id, trace.query, compact(trace, sources),
                            keep_per_user=keep.trace_keep_per_user, max_age_days=keep.trace_max_age_days)


def load_traces(store: MemoryStore, user_id: str | None = None, limit: int = 100) -> list[RecallTrace]:
    """Saved traces, newest first, whole again (:func:`expand`: the context rebuilt from its memories; one erased
    since is left out and a note says so)."""
    return expand(store, store.traces(user_id, limit=limit))
