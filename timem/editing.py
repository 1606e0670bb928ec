"""Correcting and erasing memories (the studio's Memories page and the CLI).

* :func:`edit_memory` — new content, re-embedded; the FTS snapshot is marked dirty; every active
  ancestor is marked *stale* and re-consolidated in its own mode (an extractive one without an LLM too;
  hybrid and abstractive ones need the LLM and otherwise stay stale).
* :func:`soft_delete` / :func:`restore` — status ``deleted`` with an audit record, undoable; the
  parent is re-consolidated without the node (and with it again after a restore). Memory items
  (:mod:`timem.memory`) with no active source left are soft-deleted with it and come back with it
  (unless forgotten explicitly); a hard erase deletes the items read only from the erased segments.
* :func:`erase` / :func:`erase_user` — hard erase: rows, vectors, FTS entries (rebuilt at once),
  the LLM-cache entries whose request mentions the erased text, the recall traces that name or
  quote it; audit details quoting it are redacted; ancestors re-consolidated; finally the file is
  rewritten so that no freed block still holds the text (:meth:`timem.store.Store.compact`).
  The audit keeps only ids, counts and the action, never the erased text.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from timem.consolidation.consolidator import Consolidator
from timem.consolidation.profile_facts import last_instant, listed_in
from timem.errors import InputError, NotFoundError
from timem.models import Level, MemoryItem, MemoryNode, NodeStatus
from timem.store.ports import MemoryStore


def ancestors(store: MemoryStore, node_id: str) -> list[MemoryNode]:
    """Active ancestors of a node, nearest first."""
    out: list[MemoryNode] = []
    pid = store.parent_ids([node_id]).get(node_id)
    while pid:
        parent = store.node(pid)
        if parent.status == NodeStatus.ACTIVE:
            out.append(parent)
        pid = store.parent_ids([pid]).get(pid)
    return out


def _mark_stale(store: MemoryStore, node_ids: Sequence[str]) -> set[str]:
    users = set()
    for nid in node_ids:
        for a in ancestors(store, nid):
            store.update_node(a.id, stale=True)
            users.add(a.user_id)
    return users


def profiles_of(store: MemoryStore, items: Sequence[MemoryItem]) -> list[MemoryNode]:
    """Active L5 profiles whose facts block lists one of ``items`` or should (the item holds at the window's
    end, :mod:`timem.consolidation.profile_facts`): the profiles to rewrite when those items are forgotten or
    restored."""
    out: dict[str, MemoryNode] = {}
    for uid in sorted({i.user_id for i in items}):
        for p in store.nodes(uid, Level.PROFILE):
            if any(listed_in(i, p.content) or i.valid_at(last_instant(p.span_end)) for i in items):
                out[p.id] = p
    return list(out.values())


def refresh_profiles(store: MemoryStore, cons: Consolidator, items: Sequence[MemoryItem], *,
                     actor: str = "user") -> int:
    """Rewrite, in place and in every mode, the facts block of :func:`profiles_of` ``items`` from the items that
    hold now (an item was forgotten, restored or erased); the rest of each profile is unchanged, the vector
    is re-embedded, and the audit names only ids (``profile-facts-refreshed``). Returns profiles changed."""
    changed = 0
    for p in profiles_of(store, items):
        new = cons.with_profile_facts(p.user_id, p.span, p.content)
        if new != p.content:
            store.update_node(p.id, content=new, embedding=cons.embedder.embed([new])[0])
            store.audit("profile-facts-refreshed", p.user_id, p.id, {"actor": actor, "items": [i.id for i in items]})
            changed += 1
    return changed


def reconsolidate(store: MemoryStore, cons: Consolidator, users: set[str]) -> list[MemoryNode]:
    """Re-consolidate the stale nodes of ``users`` (each in its own mode), rebuild their segment trees and
    refresh the BM25 index; returns the nodes written."""
    written: list[MemoryNode] = []
    for uid in sorted(users):  # each stale ancestor in its own mode; without an LLM only extractive ones
        written += cons.consolidate(uid)
    # the segment trees average the L1 vectors: rebuilt without (or with) the changed memories
    rc = cons.config.recall
    store.segment_tree.sync_users(sorted(users), rc.segtree_threshold, rc.segtree_max_children, rebuild=True)
    store.refresh_fts()
    return written


def edit_memory(store: MemoryStore, cons: Consolidator, node_id: str, content: str, *,
                actor: str = "user") -> MemoryNode:
    """Replace a node's content; returns the updated node.

    Raises:
        InputError: empty content. NotFoundError: unknown id.
    """
    if not content.strip():
        raise InputError("the new content is empty; delete the memory instead", field="content")
    node = store.node(node_id)
    vec = cons.embedder.embed([content.strip()])[0]
    with store.transaction():
        store.update_node(node_id, content=content.strip(), embedding=vec)
        store.audit("edit", node.user_id, node_id, {"actor": actor, "old_chars": len(node.content)})
        users = _mark_stale(store, [node_id]) | {node.user_id}
    reconsolidate(store, cons, users)
    return store.node(node_id)


def soft_delete(store: MemoryStore, cons: Consolidator, node_ids: Sequence[str], *, actor: str = "user",
                keep_items: Collection[str] = ()) -> None:
    """Mark nodes deleted (undo with :func:`restore`); parents are re-consolidated without them. The memory items
    read only from them go too, except ``keep_items`` (forget by text keeps the earlier value that a forgotten fact
    replaced in the same message: :attr:`timem.memory.forget.ForgetPreview.kept`)."""
    users: set[str] = set()
    with store.transaction():
        for nid in node_ids:
            node = store.node(nid)
            users |= _mark_stale(store, [nid]) | {node.user_id}
            store.update_node(nid, status=NodeStatus.DELETED)
            store.audit("soft-delete", node.user_id, nid, {"actor": actor})
        orphans = [i for i in store.items_without_active_source(node_ids) if i.id not in keep_items]
        for item in orphans:  # memory items read only from them go too
            store.update_item(item.id, status="deleted")
            store.audit("item-sources-deleted", item.user_id, item.id, {"actor": actor, "segments": list(node_ids)})
        refresh_profiles(store, cons, orphans, actor=actor)
    reconsolidate(store, cons, users)


@dataclass(frozen=True)
class Restored:
    """What :func:`restore` brought back: the ``segment`` (active again), the memory ``items`` read from it that
    came back with it, and those read from it that stay forgotten (``still_forgotten``: forgotten by name, e.g. by
    ``timem forget TEXT``, not only with their sources; a restore never brings those back)."""

    segment: MemoryNode
    items: list[MemoryItem] = field(default_factory=list)
    still_forgotten: list[MemoryItem] = field(default_factory=list)


def restore(store: MemoryStore, cons: Consolidator, node_id: str, *, actor: str = "user") -> Restored:
    """Undo a soft delete; returns the node (active again) with the items that came back and those that stay
    forgotten (:class:`Restored`).

    Raises:
        NotFoundError: unknown id. InputError: the node is not soft-deleted.
    """
    node = store.node(node_id)
    if node.status != NodeStatus.DELETED:
        raise InputError(f"memory {node_id} is {node.status.value}, not deleted; nothing to undo", field="status")
    with store.transaction():
        store.update_node(node_id, status=NodeStatus.ACTIVE)
        store.audit("restore", node.user_id, node_id, {"actor": actor})
        deleted = [i for i in store.items_from_sources([node_id]) if i.status == "deleted"]
        back = [i for i in deleted if not store.was_forgotten(i.id)]  # back with their source, unless forgotten
        for item in back:
            store.update_item(item.id, status="active")
            store.audit("item-restored", item.user_id, item.id, {"actor": actor, "segment": node_id})
        users = _mark_stale(store, [node_id]) | {node.user_id}
        refresh_profiles(store, cons, back, actor=actor)
    reconsolidate(store, cons, users)
    kept = {i.id for i in back}
    return Restored(store.node(node_id), [store.item(i.id) for i in back],
                    [i for i in deleted if i.id not in kept])


def erase(store: MemoryStore, cons: Consolidator, node_ids: Sequence[str], *, actor: str = "user") -> dict[str, float]:
    """Hard-erase nodes (L1: with their source turns) and every LLM-cache entry quoting them; ancestors are
    re-consolidated without them and the superseded ancestor versions that summarised them are erased too.
    Erasing an L2–L5 node whose children remain regenerates it from those children.

    Then the recall traces that name or quote an erased node are deleted and audit details quoting it
    redacted (:meth:`MemoryStore.forget_text`, audited as ``erase-traces`` with counts only), the FTS index is
    rebuilt, and the database file is rewritten (:meth:`MemoryStore.compact`) so that the erased text is
    not left in freed blocks of the file. Returns the compaction's ``seconds``, ``bytes_before``,
    ``bytes_after``.
    """
    nodes = [store.node(n) for n in node_ids]
    users: set[str] = set()
    old_ancestors = {a.id: a for n in nodes for a in ancestors(store, n.id)}
    old_ancestors |= {a.id: a for a in _versions_above(store, node_ids)}
    erased = set(node_ids)  # items read only from erased segments go; the profiles listing them are rewritten
    lost = [i for i in store.items_from_sources(list(node_ids)) if set(i.source_ids) <= erased]
    turns = [t for n in nodes if n.source_turn_ids for t in store.turns(n.user_id, ids=n.source_turn_ids)]
    texts = [n.content for n in nodes] + [t.text for t in turns] + [t.image_caption for t in turns if t.image_caption]
    with store.transaction():
        for n in nodes:
            users |= _mark_stale(store, [n.id]) | {n.user_id}
        store.purge_cache_mentioning(texts)
        store.delete_nodes([n.id for n in nodes])
        for n in nodes:
            store.audit("erase", n.user_id, n.id, {"actor": actor, "level": int(n.level)})
        refresh_profiles(store, cons, lost, actor=actor)
    reconsolidate(store, cons, users)
    # the versions of the ancestors that summarised the erased memories go too
    gone = [a for a in store.nodes(ids=list(old_ancestors), status=None)  # erased ones are absent
            if a.status != NodeStatus.ACTIVE]
    with store.transaction():
        if gone:
            store.purge_cache_mentioning([a.content for a in gone])
            store.delete_nodes([a.id for a in gone])
        forgotten = store.forget_text([n.id for n in nodes] + list(old_ancestors), texts + [a.content for a in gone],
                                      within={n.user_id for n in nodes})  # another user's trace is not about them
        store.audit("erase-traces", None, None, {"actor": actor, **forgotten})
    store.refresh_fts(force=True)
    return _compact(store, actor)


def _versions_above(store: MemoryStore, node_ids: Sequence[str]) -> list[MemoryNode]:
    """Every node, of any status, that lists one of ``node_ids`` as a child, then their parents the same way:
    the versions that summarised them, including those superseded or soft-deleted by an earlier edit or
    forget (whose parent links no longer lead to them)."""
    seen: dict[str, MemoryNode] = {}
    frontier = list(node_ids)
    while frontier:
        found = [p for p in store.nodes_listing(frontier) if p.id not in seen]
        seen.update((p.id, p) for p in found)
        frontier = [p.id for p in found]
    return list(seen.values())


def erase_user(store: MemoryStore, user_id: str, *, actor: str = "user") -> dict[str, float]:
    """Erase everything of one user: turns, sessions, nodes, traces, LLM cache and call log entries; audit
    rows of the user keep their action and time, but their detail is redacted and the user id becomes a pseudonym
    (:func:`erased_pseudonym`; their node and item ids, hashes of the user id, go); the ``erase-user`` row that
    records the erase and its counts names that pseudonym too. Then the file is rewritten
    (:meth:`MemoryStore.compact`).

    Returns counts of removed rows (and ``audit_redacted``). Raises NotFoundError for an unknown user.
    """
    if user_id not in store.users():
        raise NotFoundError(f"no user {user_id!r}; known users: {', '.join(store.users()) or 'none'}")
    pseudonym = erased_pseudonym()
    with store.transaction():
        texts = store.user_texts(user_id)
        counts = store.erase_user(user_id)
        counts["audit_redacted"] = store.forget_text([], texts, user_id=user_id, within={user_id})["audit_redacted"]
        store.pseudonymise_audit(user_id, pseudonym)
        store.audit("erase-user", pseudonym, None, {"actor": actor, "counts": counts})
    store.refresh_fts(force=True)
    cost = _compact(store, actor)
    return {**counts, **{f"file_{k}": v for k, v in cost.items()}}


def erased_pseudonym() -> str:
    """What the audit log names an erased user by: ``"erased-"`` and 12 random hex digits, new for each erase. It links
    the user's rows to the erase that ended them, and nothing in the file leads back to the id: a keyed hash would
    keep its key in the same file, and anyone with the file could then check a guessed id."""
    return f"erased-{secrets.token_hex(6)}"


def _compact(store: MemoryStore, actor: str) -> dict[str, float]:
    cost = store.compact()
    store.audit("compact", None, None, {"actor": actor, **{k: round(v, 3) for k, v in cost.items()}})
    return cost
