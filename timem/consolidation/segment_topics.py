"""LLM topic lines for the closed nodes of a user's segment tree (optional; the tree itself needs no LLM).

Which nodes: internal nodes of height ``>= min_height`` (default 2: topics of several segments) that are
*closed*, i.e. not on the right frontier (their last leaf is not the user's last L1 memory), so their
leaves will not change; nodes that already have a topic for their current leaf range are skipped, so the
job is resumable and each node costs one call once. Each node's utterances (its L1 memories in order,
cut to :data:`MAX_SPAN_CHARS`) go to :mod:`timem.prompts.segment_topic`; the answer is stored only if the
grounding filter keeps it (:func:`timem.consolidation.grounding.ground_content`), else the node is left
without a topic and the failure is audited (``segtree-summary-failed``). Topics are shown on the
Timeline's segment-tree view and by ``timem segtree summarise``; recall scores nodes by their centroids and
does not read them. A rebuild of the tree (after an edit or erase) drops them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from timem.consolidation.grounding import ground_content
from timem.errors import UnusableAnswerError
from timem.llm.protocol import LLMClient
from timem.models import Level
from timem.prompts import segment_topic
from timem.store.ports import MemoryStore

MAX_SPAN_CHARS = 4000  #: utterances of one node shown to the model, at most (whole lines, from the start)


@dataclass
class TopicReport:
    """What :func:`summarise` did: topics ``written``, nodes ``failed`` (id, reason), nodes ``pending``."""

    written: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    pending: int = 0


def _span_text(texts: list[str]) -> str:
    out: list[str] = []
    size = 0
    for t in texts:
        line = " ".join(t.split())
        if out and size + len(line) > MAX_SPAN_CHARS:
            break
        out.append(line[:MAX_SPAN_CHARS])
        size += len(line) + 1
    return "\n".join(out)


def summarise(store: MemoryStore, llm: LLMClient, user_id: str, *, min_height: int = 2, limit: int | None = None
              ) -> TopicReport:
    """Write the missing topics of the user's closed nodes of height ``>= min_height`` (module doc).

    Args:
        limit: at most this many nodes in this call (the rest stay pending; call again).

    Raises:
        LLMError: the model could not be reached (topics written before stay).
    """
    nodes = store.segment_tree.load(user_id)
    leaves = [x for x in nodes if x.is_leaf]
    have = store.segment_tree.summaries(user_id)
    last = len(leaves) - 1
    todo = [x for x in nodes if x.height >= min_height and x.last_seq < last and x.id not in have]
    report = TopicReport(pending=len(todo))
    if limit is not None:
        todo = todo[:limit]
    content = {n.id: n.content for n in store.nodes(user_id, int(Level.SEGMENT))}
    for x in todo:
        text = _span_text([content.get(leaf.id, "") for leaf in leaves[x.first_seq:x.last_seq + 1]])
        try:
            answer = llm.complete_json(segment_topic.build_messages(text), segment_topic.NodeTitle,
                                       purpose="segtree-topic", user_id=user_id, max_tokens=segment_topic.MAX_TOKENS)
            line = segment_topic.render(answer)
        except (UnusableAnswerError, ValueError) as exc:
            report.failed.append((x.id, f"unusable answer: {exc}"))
            store.audit("segtree-summary-failed", user_id, None, {"node": x.id, "reason": "unusable"})
            continue
        kept, _dropped = ground_content(line, [text], [])
        if not kept:
            report.failed.append((x.id, "not supported by the node's utterances"))
            store.audit("segtree-summary-failed", user_id, None, {"node": x.id, "reason": "unsupported"})
            continue
        with store.transaction():
            store.segment_tree.save_summary(user_id, x, kept, llm.model_id, segment_topic.PROMPT_VERSION)
        report.written += 1
        report.pending -= 1
    return report
