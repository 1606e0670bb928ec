"""Ancestor propagation: lift the kept leaves to the tree levels the plan chose (TiMem §3.3).

Leaves are visited in **descending fused score** (rank 1 first), not in time order: the
reference implementation walks leaves chronologically, so with small quotas its parents come
from the earliest sessions rather than from the most relevant ones.

From each leaf the walk follows parent links (``nodes.parent_id``) upward. A node at a level the
plan includes is added if that level's quota is not yet full and it is new; a level the plan
leaves out, or that is absent from the tree (e.g. an L1 linked straight to an L3), is passed
through, not the end of the climb. Inactive (deleted / superseded) nodes are passed through
without being added. The walk for a leaf ends at a node without parent or above the plan's top
level. Parents are fetched one store query per tree level (:meth:`MemoryStore.lineage`), with the user
filter in SQL.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from timem.models import MemoryNode, NodeStatus
from timem.recall.leaves import Candidate
from timem.recall.planner import RecallPlan
from timem.store.ports import MemoryStore


class AncestorRecord(BaseModel):
    """One ancestor met on the walk, added or not, and why.

    ``via_leaf`` / ``leaf_rank`` name the first (best-ranked) leaf that reached it; ``reached_by``
    lists every kept leaf that reached it, in walk order; ``path`` is the node ids from that first
    leaf's parent up to this node.
    """

    node_id: str
    level: int
    via_leaf: str
    leaf_rank: int
    added: bool
    reason: str
    reached_by: list[str] = Field(default_factory=list)
    path: list[str] = Field(default_factory=list)


def fetch_lineage(store: MemoryStore, user_id: str, leaves: Sequence[Candidate], plan: RecallPlan
                  ) -> tuple[dict[str, MemoryNode], dict[str, str | None]]:
    """The kept leaves and every ancestor up to the plan's top level, one query per tree level (see
    :meth:`MemoryStore.lineage`): ``(nodes by id, parent id by node id)``."""
    top = max([lv for lv, q in plan.levels.items() if q > 0] + [1])
    return store.lineage(user_id, [c.node_id for c in leaves], top)


def lift_ancestors(store: MemoryStore, user_id: str, leaves: Sequence[Candidate], plan: RecallPlan,
                   lineage: tuple[dict[str, MemoryNode], dict[str, str | None]] | None = None
                   ) -> tuple[list[MemoryNode], list[AncestorRecord]]:
    """Ancestors of ``leaves`` at the plan's levels above L1, honouring ``plan.levels`` quotas.

    Args:
        leaves: the kept leaves (any order; they are walked by ``rank``).
        lineage: :func:`fetch_lineage`'s result if the caller already has it (else fetched here).

    Returns:
        ``(added nodes in the order they were added, records of every ancestor met)``.
    """
    targets = {lv: q for lv, q in plan.levels.items() if lv > 1 and q > 0}
    if not targets or not leaves:
        return [], []
    top = max(targets)
    ordered = sorted(leaves, key=lambda c: c.rank)
    found, parent_of = lineage or fetch_lineage(store, user_id, leaves, plan)
    nodes = {nid: n for nid, n in found.items() if int(n.level) > 1}
    counts = dict.fromkeys(targets, 0)
    records: dict[str, AncestorRecord] = {}
    added: list[MemoryNode] = []
    for leaf in ordered:
        path: list[str] = []
        cur = parent_of.get(leaf.node_id)
        while cur is not None:
            node = nodes[cur]
            level = int(node.level)
            if level > top or cur in path:  # above the plan, or a (corrupt) cycle
                break
            path.append(cur)
            if level in targets and node.status == NodeStatus.ACTIVE:
                if cur in records:
                    records[cur].reached_by.append(leaf.node_id)
                else:
                    ok = counts[level] < targets[level]
                    reason = (f"L{level} ancestor of leaf rank {leaf.rank}" if ok
                              else f"L{level} quota ({targets[level]}) already full")
                    records[cur] = AncestorRecord(node_id=cur, level=level, via_leaf=leaf.node_id,
                                                  leaf_rank=leaf.rank, added=ok, reason=reason,
                                                  reached_by=[leaf.node_id], path=list(path))
                    if ok:
                        counts[level] += 1
                        added.append(node)
            cur = parent_of.get(cur)
    return added, list(records.values())
