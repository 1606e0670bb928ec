"""The in-memory copy of one user's vectors of one level, and its exact top k by cosine (:mod:`timem.store.memory_index`
caches the copies and brings them to the current nodes version).

A copy (:class:`Vectors`) holds the active nodes' ids and their ``(n, dim)`` float32 embeddings, in a buffer that
grows by doubling, with a live mask (a removed node is masked, the buffer compacted when half of it is dead).

**Same answers as the SQL.** numpy only shortlists vectors: every node whose numpy cosine is within :data:`MARGIN`
of the ``k``-th best (float32 sums of 384 products differ from DuckDB's by less than ``γ₃₈₄ ≈ 2.3e-5``), then the
shortlist is scored with DuckDB's ``array_cosine_similarity`` arithmetic reproduced bit for bit
(:func:`exact_cosines`), so the cosines and their order (ties by id) are those of
:func:`timem.store.search.vector_top`.

Memory: ``4·dim`` bytes per node (1.5 KB at dim 384: 154 MB for 100k nodes), ``2·dim`` more for a copy of
:data:`HALF_SCAN_MIN_ROWS` rows or more where a float16 or bfloat16 scan is the fastest (:func:`scan_dtype`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, NamedTuple

import duckdb
import numpy as np

from timem.store.memory_steps import ACTIVE, Change

#: numpy-vs-DuckDB cosine slack of the shortlist (the two differ by < 5e-5)
MARGIN = 1e-3
#: bound on the error of a float32 dot product of two unit vectors of dimension 384 (``γ₃₈₄``, any summation order)
F32_DOT_ERROR = 2.3e-5
#: bound on the error of the float16 scan's dot product of two unit vectors (:func:`dots`): both rounded to float16
#: (``2u``, ``u = 2⁻¹¹``, by Cauchy–Schwarz), products summed in float32 (``γ₃₈₄``), the result rounded to float16
#: (``u``); :func:`half_scan` checks the summation on first use
HALF_DOT_ERROR = 1.5e-3
#: room a patched copy's buffers get when they must grow, as a share of their rows (chat writes append a row or two:
#: doubling would hold 231 MB more for a 100k-node user after its first write)
GROWTH = 0.125
#: bound on the error of the bfloat16 scan's dot product of two unit vectors (:func:`dots`): both rounded to bfloat16
#: (``2u``, ``u = 2⁻⁸``), products summed in float32 (``γ₃₈₄``), the result rounded to bfloat16 (``u``);
#: :func:`bf16_scan` checks the summation
BF16_DOT_ERROR = 1.2e-2
#: a copy gets float16 rows from this many rows on: below, the float32 scan is a few ms and the extra 2 bytes per
#: dimension would crowd other users out of the working set (at 10k rows: ~1.5 against ~0.6 ms; at 100k: 12 vs 5)
HALF_SCAN_MIN_ROWS = 20_000


def exact_cosines(rows: np.ndarray, query_vec: np.ndarray) -> list[float]:
    """DuckDB's ``array_cosine_similarity(row, query)`` over ``FLOAT[dim]`` values, bit for bit, per row of
    ``rows`` ``(m, dim)``, computed in numpy.

    DuckDB (``CosineSimilarityOp``) sums ``x·y``, ``x·x`` and ``y·y`` in float32, element by element in order,
    divides the dot product by ``sqrt(|x|²·|y|²)`` and clamps with ``max(-1, min(s, 1))`` (so a zero vector,
    whose ratio is NaN, gives -1). ``np.cumsum`` along a row accumulates in the same order, so the results are
    identical (``tests/test_store_search.py`` checks it against DuckDB on real and random vectors), without a
    query per call."""
    v = np.asarray(rows, dtype=np.float32)
    q = np.asarray(query_vec, dtype=np.float32)
    if not len(v):
        return []
    dot = np.cumsum(v * q, axis=1, dtype=np.float32)[:, -1]
    nl = np.cumsum(v * v, axis=1, dtype=np.float32)[:, -1]
    nr = np.cumsum(q * q, dtype=np.float32)[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        sim = dot / np.sqrt(nl * nr)
    sim = np.where(np.float32(1) < sim, np.float32(1), sim)  # std::min(s, 1): NaN stays NaN
    sim = np.where(np.float32(-1) < sim, sim, np.float32(-1))  # std::max(-1, s): NaN becomes -1
    return [float(x) for x in sim]


@dataclass(frozen=True)
class Vectors:
    """Active nodes of one user and level: ``ids[k]`` has vector ``buf[k]``; ``k`` is live while ``alive[k]``."""

    ids: list[str]  #: position -> node id (arrival order; a position is never reused)
    where: dict[str, int]  #: node id -> its live position
    buf: np.ndarray  #: (capacity, dim) float32; rows ``[0, len(ids))`` are used
    alive: np.ndarray  #: bool per used position
    #: ``buf`` rounded for the scan :func:`scan_dtype` chose (same rows): float16, or bfloat16 bits (uint16); None for
    #: the float32 scan
    half: np.ndarray | None = None
    #: the positions' identity: a patched copy keeps its source's (its rows keep their positions), a load or a
    #: compaction makes a new one
    space: object = field(default_factory=object, compare=False, repr=False)

    @property
    def nbytes(self) -> int:
        extra = 0 if self.half is None else self.half.nbytes
        return int(self.buf.nbytes + self.alive.nbytes + extra) + 96 * len(self.ids)

    def of(self, node_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors of those of ``node_ids`` the copy holds (live), by id, each a fresh ``(dim,)`` array."""
        return {i: self.buf[k].copy() for i in node_ids if (k := self.where.get(i)) is not None}


def grow(buf: np.ndarray, used: int, rows: np.ndarray, headroom: float = 1.0) -> np.ndarray:
    """``buf`` with ``rows`` written after its first ``used`` rows, reallocated when full (to ``1 + headroom`` times
    its rows: doubling by default). Rows below ``used`` are never written, so a copy that shares ``buf`` keeps
    seeing its own rows."""
    need = used + len(rows)
    if need > len(buf):
        bigger = np.empty((max(need, int((1 + headroom) * len(buf)), 16), buf.shape[1]), dtype=buf.dtype)
        bigger[:used] = buf[:used]
        buf = bigger
    buf[used:need] = rows
    return buf


def load(con: duckdb.DuckDBPyConnection, user_id: str, level: int, dim: int) -> Vectors:
    """The active nodes of ``user_id`` and ``level`` with their vectors, read from DuckDB (ids in order)."""
    # ordered by id here, not in SQL: DuckDB's sort of 10k rows carrying 1.5 KB arrays took ~50 ms of a ~75 ms load
    # (bench/recall_many_users.py); Python's str order is DuckDB's binary VARCHAR order (UTF-8 bytes = code points)
    tbl = con.execute("SELECT id, embedding FROM nodes WHERE user_id = ? AND level = ? "
                      "AND status = 'active'", [user_id, level]).to_arrow_table()
    n = tbl.num_rows
    flat = tbl.column("embedding").combine_chunks().flatten().to_numpy() if n else np.zeros(0, np.float32)
    raw = tbl.column("id").to_pylist()
    order = sorted(range(n), key=raw.__getitem__)
    ids = [raw[k] for k in order]
    mat = np.asarray(flat, dtype=np.float32).reshape(n, dim)[np.asarray(order, dtype=np.int64)] if n \
        else np.zeros((0, dim), np.float32)
    return Vectors(ids, {i: k for k, i in enumerate(ids)}, mat, np.ones(n, dtype=bool), _halved(mat, n))


def patched(old: Vectors, user_id: str, level: int, chain: Sequence[Change]) -> Vectors:
    """``old`` after the ``chain`` of writes (a new copy; ``old`` is not changed): the user's active nodes of
    ``level`` they removed masked, those they added appended; compacted when half of it is dead."""
    ids, where, alive = list(old.ids), dict(old.where), old.alive.copy()
    new_alive: list[bool] = []
    rows: list[np.ndarray] = []
    n0 = len(old.ids)
    for change in chain:
        for d in change.removed:
            if d.user_id == user_id and d.level == level and d.status == ACTIVE and d.node_id in where:
                k = where.pop(d.node_id)
                if k < n0:
                    alive[k] = False
                else:
                    new_alive[k - n0] = False
        for d, v in zip(change.added, change.vecs, strict=True):
            if d.user_id == user_id and d.level == level and d.status == ACTIVE:
                where[d.node_id] = len(ids)
                ids.append(d.node_id)
                rows.append(v)
                new_alive.append(True)
    buf = grow(old.buf, n0, np.stack(rows), GROWTH) if rows else old.buf
    half = old.half
    if rows and half is not None:
        half = grow(half, n0, _lower(np.stack(rows), "float16" if half.dtype == np.float16 else "bfloat16"), GROWTH)
    elif half is None:
        half = _halved(buf, len(ids))
    value = Vectors(ids, where, buf, np.concatenate([alive, np.array(new_alive, dtype=bool)]), half, old.space)
    if len(value.where) * 2 < len(value.ids):  # half dead: compact
        keep = np.flatnonzero(value.alive)
        kept = [value.ids[k] for k in keep.tolist()]
        value = Vectors(kept, {i: k for k, i in enumerate(kept)}, value.buf[keep].copy(),
                        np.ones(len(kept), dtype=bool), None if half is None else half[keep].copy())
    return value


class Dots(NamedTuple):
    """A query's approximate dot products with every used row of one copy (:func:`dots`)."""

    vectors: Vectors
    values: np.ndarray  #: ``(len(vectors.ids),)`` float32; a dead row's value is meaningless
    error: float  #: bound on ``|values[k] - exact dot product|`` for unit vectors


@cache
def _torch() -> Any:
    """torch (installed with the MiniLM embedder), or None."""
    try:
        import torch
    except ImportError:
        return None
    return torch


@cache
def half_scan() -> bool:
    """Whether :func:`dots` scans float16 rows with torch: torch is installed, and its float16 matrix-vector product
    sums in float32 here (checked once on vectors where a float16 sum is off by ~1e-2; some CPUs' kernels sum
    in float16, which :data:`HALF_DOT_ERROR` would not bound). A float16 scan reads half the bytes of a float32
    one: at 100k rows of dim 384, 4.7 against 14.9 ms on the bench machine (``bench/results/recall-latency.md``)."""
    torch = _torch()
    if torch is None:
        return False
    probe = np.full((8, 384), 1 / np.sqrt(384), np.float32).astype(np.float16)
    probe[1::2, ::3] *= -0.5
    exact = probe.astype(np.float64) @ probe[0].astype(np.float64)  # of the rounded inputs: summation and output
    got = torch.mv(torch.from_numpy(probe), torch.from_numpy(probe[0])).double().numpy()
    return bool(np.all(np.abs(got - exact) <= 2.0 ** -11 * np.abs(exact) + 1e-4))


@cache
def bf16_scan() -> bool:
    """Whether :func:`dots` may scan bfloat16 rows with torch: torch is installed and its bfloat16 matrix-vector
    product sums in float32 here (the check of :func:`half_scan`, at bfloat16's rounding: a bfloat16 sum of the probe
    is off by ~0.5)."""
    torch = _torch()
    if torch is None:
        return False
    probe = torch.from_numpy(np.full((8, 384), 1 / np.sqrt(384), np.float32))
    probe[1::2, ::3] *= -0.5
    rounded = probe.to(torch.bfloat16)
    exact = rounded.double().numpy() @ rounded[0].double().numpy()
    got = torch.mv(rounded, rounded[0]).double().numpy()
    return bool(np.all(np.abs(got - exact) <= 2.0 ** -8 * np.abs(exact) + 1e-4))


#: the scan :func:`scan_dtype` chose for this process: ``"float32"`` (numpy), ``"float16"`` or ``"bfloat16"``
#: (torch); empty until the first large copy
_SCAN: list[str] = []
_PROBE_REPEATS = 5
_PROBE_LOCK = threading.Lock()


def _lower(rows: np.ndarray, kind: str) -> np.ndarray:
    """``rows`` ``(n, dim)`` float32 rounded for a ``kind`` scan: float16, or bfloat16 (to nearest even, by torch) as
    its bits in a uint16 array (numpy has no bfloat16)."""
    if kind == "float16":
        return rows.astype(np.float16)
    torch = _torch()
    wide = torch.from_numpy(np.ascontiguousarray(rows, dtype=np.float32))
    return np.asarray(wide.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16))


def _bf16_floats(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bits (uint16) as float32 values: the upper half of a float32 (exact)."""
    return np.asarray((bits.astype(np.uint32) << 16).view(np.float32))


def scan_dtype(mat: np.ndarray, lowered: dict[str, np.ndarray] | None = None) -> str:
    """The fastest scan of ``mat`` ``(n, dim)`` float32 on this CPU among numpy's float32 product and torch's float16
    and bfloat16 ones (those :func:`half_scan` / :func:`bf16_scan` allow): timed once per process, on the first copy
    large enough (the best of :data:`_PROBE_REPEATS` runs each, ~0.1 s with the conversions at 100k rows), then
    remembered.

    Which is fastest depends on the CPU's kernels, not on the data: at 100k rows of dim 384, float16 took 4.7 ms
    against 14.9 for float32 on an AMD EPYC; on an AVX-512 Xeon float16 took 6.6, float32 4.7 and bfloat16 (AVX-512
    BF16) 2.1 ms (``bench/results/recall-latency-many-users.md``). The choice changes no result: every scan only
    shortlists, within its error bound, and the exact cosines decide (:func:`top`).

    ``lowered``: when this call runs the probe, it puts there ``mat`` as the probe rounded it (:func:`_lower`) for
    each half kind it timed, so that the caller need not convert it again."""
    with _PROBE_LOCK:  # two threads loading their first large copies probe once
        if not _SCAN:
            _SCAN.append(_probe(mat, {} if lowered is None else lowered))
    return _SCAN[0]


def _probe(mat: np.ndarray, lowered: dict[str, np.ndarray]) -> str:
    """:func:`scan_dtype`'s timing, not remembered; the rounded copies it timed go into ``lowered``."""
    torch = _torch()
    q = np.full(mat.shape[1], 1 / np.sqrt(mat.shape[1]), np.float32)
    scans: dict[str, Any] = {"float32": lambda: mat @ q}
    if half_scan():
        lowered["float16"] = _lower(mat, "float16")
        th, tq = torch.from_numpy(lowered["float16"]), torch.from_numpy(q.astype(np.float16))
        scans["float16"] = lambda: torch.mv(th, tq).float().numpy()
    if bf16_scan():
        lowered["bfloat16"] = _lower(mat, "bfloat16")
        tb = torch.from_numpy(lowered["bfloat16"].view(np.int16)).view(torch.bfloat16)
        tbq = torch.from_numpy(q).to(torch.bfloat16)
        scans["bfloat16"] = lambda: _bf16_floats(torch.mv(tb, tbq).view(torch.int16).numpy().view(np.uint16))

    def best(scan: Any) -> float:
        times = []
        for _ in range(_PROBE_REPEATS):
            t0 = time.perf_counter()
            scan()
            times.append(time.perf_counter() - t0)
        return min(times)

    timed = {kind: best(scan) for kind, scan in scans.items()}
    return min(timed, key=timed.__getitem__)


def _halved(mat: np.ndarray, rows: int) -> np.ndarray | None:
    """The first ``rows`` of ``mat`` rounded for a float16 or bfloat16 scan (same shape; :func:`_lower`), when
    ``rows`` ≥ :data:`HALF_SCAN_MIN_ROWS` and :func:`scan_dtype` chose one of those; else None."""
    if rows < HALF_SCAN_MIN_ROWS or _SCAN == ["float32"]:
        return None
    lowered: dict[str, np.ndarray] = {}
    kind = scan_dtype(mat[:rows], lowered)
    if kind == "float32":
        return None
    out = np.zeros(mat.shape, np.float16 if kind == "float16" else np.uint16)  # rows past ``rows``: unset
    out[:rows] = lowered[kind] if kind in lowered else _lower(mat[:rows], kind)
    return out


def dots(v: Vectors, query_vec: np.ndarray) -> Dots:
    """The dot products of ``query_vec`` ``(dim,)`` with every used row of the copy: torch over its float16 rows
    (within :data:`HALF_DOT_ERROR`) or bfloat16 rows (within :data:`BF16_DOT_ERROR`) when it has them, else numpy
    over the float32 rows (within :data:`F32_DOT_ERROR`). Only shortlists: exact cosines come from
    :func:`exact_cosines`."""
    n = len(v.ids)
    q = np.asarray(query_vec, dtype=np.float32)
    if v.half is not None and v.half.dtype == np.float16:
        torch = _torch()
        got = torch.mv(torch.from_numpy(v.half[:n]), torch.from_numpy(q.astype(np.float16)))
        return Dots(v, got.float().numpy(), HALF_DOT_ERROR)
    if v.half is not None:  # bfloat16 bits
        torch = _torch()
        got = torch.mv(torch.from_numpy(v.half[:n].view(np.int16)).view(torch.bfloat16),
                       torch.from_numpy(q).to(torch.bfloat16))
        return Dots(v, _bf16_floats(got.view(torch.int16).numpy().view(np.uint16)), BF16_DOT_ERROR)
    return Dots(v, v.buf[:n] @ q, F32_DOT_ERROR)


def top(v: Vectors, query_vec: np.ndarray, limit: int, approx: Dots | None = None) -> list[tuple[str, float]]:
    """Top ``limit`` nodes of the copy by cosine with ``query_vec`` (``(dim,)`` unit vector), as ``(id, cosine)``:
    the rows and order of :func:`timem.store.search.vector_top` (exact). ``approx``: :func:`dots` of the same
    query and copy, when already computed (its dead rows are overwritten). The shortlist keeps every row within
    ``MARGIN + 2·error`` of the ``limit``-th best approximation: a row of the exact top can be no lower."""
    n = len(v.ids)
    live = len(v.where)
    if not live or limit <= 0:
        return []
    found = dots(v, query_vec) if approx is None else approx
    approx_values = found.values
    approx_values[~v.alive] = -np.inf
    if live > limit:
        kth = np.partition(approx_values, n - limit)[n - limit]
        short = np.flatnonzero((approx_values >= kth - MARGIN - 2 * found.error) & v.alive)
    else:
        short = np.flatnonzero(v.alive)
    exact = exact_cosines(v.buf[short], query_vec)
    scored = sorted(zip(exact, short.tolist(), strict=True), key=lambda t: (-t[0], v.ids[t[1]]))
    return [(v.ids[k], c) for c, k in scored[:limit]]
