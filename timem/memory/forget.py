"""Explicit forgetting: "forget that I work at Blue Harbor" -> a preview of what goes, then a soft delete.

* :func:`forget_request` recognises a forget command typed in chat ("forget that …", "please forget about …",
  "忘掉…", "忘记…", "别记得…") and returns what to forget.
* :func:`preview` finds the user's active items whose value the text names (or that the text states again,
  read by :mod:`timem.memory.rules`: "I work at Blue Harbor" names employer Blue Harbor) and the active L1
  segments that hold those values (their sources, and any segment quoting a value); with no item matched,
  the segments quoting the text itself, or holding every one of its content words (stemmed with NLTK's Porter
  stemmer, scikit-learn's English stopwords left out): "my sister lives in Porto" reaches "My sister Ana lives in
  Porto", and "my cat" (one content word) every segment that speaks of a cat or cats, and those naming the cat by
  the name a matched segment gave it ("a grey cat called Pixel" -> "Pixel chewed my shoes"). When no segment holds
  them all, the segments holding the request's key words, its content words less its verbs
  (:mod:`timem.memory.forget_words`: "I lived in Berlin" reaches "Berlin was home for five years", "我以前住在柏林"
  reaches "我在柏林待了五年"; "I like jazz" keeps "jazz", so it never reaches every "I like …"), those holding the
  most of its verbs first. The preview lists them before anything goes; an empty one says why and what to try
  (:attr:`ForgetPreview.hint`). Other items read only from those segments are listed too, since they go with them.
  Accents fold for matching (:func:`timem.memory.forget_words.fold`: "zurich" reaches "Zürich"); the preview holds
  the segments as stored.
* Which lines a request reaches is :mod:`timem.memory.forget_match` (stems, names, key words, the user's lines) and
  :mod:`timem.memory.forget_scope`. How far it reaches: a request in the user's own voice leaves a line where
  its words belong to someone else ("I work as a nurse" leaves "My brother is a nurse"); a capitalised word that the
  memories also write in lower case is a name ("Will" leaves "I will call"); the assistant's reply to a line that
  goes goes with it (:attr:`ForgetPreview.replies`).
* :func:`apply` soft-deletes them: items ``status = deleted`` (audit ``forget-item``, ids only, for the items the
  request names; ``item-sources-deleted`` for the :attr:`ForgetPreview.collateral` ones, which went only because
  their segments went, so that restoring a segment brings them back while a fact forgotten by name stays
  forgotten: :func:`timem.editing.restore`; the L5 profiles listing them are rewritten), segments
  through :func:`timem.editing.soft_delete` (ancestors re-consolidated without them, segment tree rebuilt; the
  items read only from them go too, except the earlier value that a forgotten fact replaced in the same message,
  which holds again: :attr:`ForgetPreview.kept`),
  and the LLM-cache entries quoting the segments are purged. Undo: :func:`timem.editing.restore` for the
  segments; hard erase stays :func:`timem.editing.erase`.
* The turns of a forgotten segment stay in the store (a restore needs them), but every view of the conversation
  hides them: :func:`forgotten_turn_ids` names them (the studio's chat history shows a placeholder, the service's
  turn listing marks them ``forgotten``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from timem import editing
from timem.consolidation.consolidator import Consolidator
from timem.errors import InputError, NotFoundError
from timem.item_holding import as_held
from timem.item_values import mentions, normalise
from timem.memory.forget_hints import nothing_hint, scope_hint
from timem.memory.forget_match import (
    by_key_words,
    covers,
    first_person,
    in_scope,
    linked,
    request_stems,
    said_by_user,
    stems_of,
)
from timem.memory.forget_scope import about_someone_else, name_words, replies
from timem.memory.forget_words import RequestWords, fold, request_words, written_as_name
from timem.memory.rules import extract_statements
from timem.models import Level, MemoryItem, MemoryNode, NodeStatus
from timem.store.ports import MemoryStore
from timem.tokens import content_stems, one_line

_EN = re.compile(r"^\s*(?:please\s+|can\s+you\s+|could\s+you\s+)?forget\s+(?:that\s+|about\s+|the\s+fact\s+that\s+)?"
                 r"(?P<what>.+?)\s*[.!?]*\s*$", re.IGNORECASE | re.DOTALL)
_ZH = re.compile(r"^\s*(?:请|请你|麻烦)?(?:忘掉|忘记|忘了|别记得|不要记得)(?:我说过的?|那个|这件事[：:，,]?)?"
                 r"(?P<what>.+?)[。！!？?]*\s*$", re.DOTALL)


def forget_request(text: str) -> str | None:
    """What a chat message asks to forget ("forget that I live in Porto" -> "I live in Porto"), or ``None``."""
    m = _EN.match(text) or _ZH.match(text)
    if not m or not m["what"].strip():
        return None
    return m["what"].strip()


@dataclass
class ForgetPreview:
    """What :func:`apply` would soft-delete for ``text``: items and L1 segments (active ones)."""

    user_id: str
    text: str
    items: list[MemoryItem] = field(default_factory=list)
    segments: list[MemoryNode] = field(default_factory=list)
    #: ids of the items in ``items`` that ``text`` does not name: read only from a segment that goes, they go with it
    collateral: set[str] = field(default_factory=set)
    #: active items (not in ``items``) that an item in ``items`` superseded: with it gone they hold again, as recall
    #: treats them ("forget that I drink green tea" brings back the espresso that green tea replaced), until the next
    #: value of a single-valued attribute that stays begins (their ``valid_to``; open when none follows:
    #: :func:`timem.item_holding.as_held`)
    reopened: list[MemoryItem] = field(default_factory=list)
    #: for an empty preview: why nothing matched and what to try ("no memory holds 'Hamburg'. Check the spelling …")
    hint: str = ""
    #: ids of the segments in ``segments`` that hold only the assistant's reply to a user's line that goes
    #: (:func:`timem.memory.forget_scope.replies`): they go with it
    replies: set[str] = field(default_factory=set)
    #: ids of the items (not in ``items``) that stay though every segment they were read from goes: the earlier value
    #: that an item in ``items`` replaced in the same message ("I switched from espresso to green tea"); they are
    #: in ``reopened``
    kept: set[str] = field(default_factory=set)
    #: how many active items and L1 segments of the user were searched (:meth:`why`; ``None``: not known, e.g.
    #: a preview read back from the memory service, whose ``hint`` says it)
    searched_items: int | None = None
    searched_segments: int | None = None

    @property
    def empty(self) -> bool:
        return not self.items and not self.segments

    def why(self) -> str:
        """For an empty preview: :attr:`hint`, then what was searched ("Searched 3 fact(s) and 12 conversation
        segment(s) (accents ignored).", when known); each front end adds how to list them."""
        if self.searched_items is None or self.searched_segments is None:
            return self.hint
        return (f"{self.hint} Searched {self.searched_items} fact(s) and {self.searched_segments} conversation "
                "segment(s) (accents ignored).").strip()

    def describe(self) -> str:
        """One line per item and segment (for the chat reply and the CLI); for an empty preview, why nothing matched,
        what to try and what was searched (:meth:`why`)."""
        if self.empty:
            return f"Nothing matched {self.text!r}, so nothing was forgotten: {self.why()}"
        also = " (also goes: it was said in the same message as what you asked to forget)"
        lines = [f"item {i.id}: {i.label()}" + (also if i.id in self.collateral else "") for i in self.items]
        reply = " (the assistant's reply to a line that goes)"
        lines += [f"segment {n.id}{reply if n.id in self.replies else ''}: {one_line(n.content, 120)}"
                  for n in self.segments]
        lines += [f"holds again{f' until {i.valid_to:%Y-%m-%d}' if i.valid_to else ''}: {i.label()} (item {i.id}: "
                  "the fact that replaced it goes)" for i in self.reopened]
        return "\n".join(lines)


def preview(store: MemoryStore, user_id: str, text: str) -> ForgetPreview:
    """The items and segments matching ``text`` (see the module doc); nothing is changed.

    A request that states a polarity (read by :mod:`timem.memory.rules`: "I love jazz" is ``likes jazz``) does not
    name the item of the opposite polarity for the same value ("dislikes jazz", which the word "jazz" alone would
    match): that item is not chosen, and the segments it was read from stay unless an item the request names was
    read from them too (then it goes with them, and the preview lists it as collateral). A trial: over the service
    "Forget that I love jazz" removed "dislikes jazz" unmarked. A request without a polarity ("forget jazz") still
    names both.

    A request whose content words are all verbs ("loved", "I painted", "I lived in":
    :attr:`timem.memory.forget_words.RequestWords.only_verbs`) names no thing: the preview is empty and its hint says
    so (a trial: "loved" took every segment saying "love", and the facts read from them). A capitalised past form
    alone ("Loved", "Painted", "Ahmed") is such a verb unless the user's memories write it as a name
    (:func:`timem.memory.forget_words.written_as_name`: "I met Ahmed", and never "ahmed"): the request's capital is
    no evidence, since every request starts with one.

    Raises:
        InputError: empty ``text``.
    """
    if not text.strip():
        raise InputError("say what to forget, e.g. 'forget that I live in Porto'", field="text")
    folded = fold(text)  # accents dropped for matching: "zurich" names "Zürich"
    words = request_words(folded)
    if words.maybe_name is not None and written_as_name(
            words.maybe_name, (fold(n.content) for n in store.nodes(user_id, Level.SEGMENT))):
        words = words.as_name()  # "Ahmed", which the memories write as a name ("Loved" stays a verb)
    if words.only_verbs:  # "loved", "I painted", "I lived in": every line using those verbs would go
        return ForgetPreview(user_id=user_id, text=text, hint=nothing_hint(folded, words, []),
                             searched_items=len(store.items(user_id)),
                             searched_segments=len(store.nodes(user_id, Level.SEGMENT)))
    stated = extract_statements(folded)
    other_side = {(_OPPOSITE[s.attribute], normalise(fold(s.value))) for s in stated if s.attribute in _OPPOSITE}
    items, spared = [], []
    for it in [] if about_someone_else(folded) else store.items(user_id):  # the user's own facts: not about others
        value = normalise(fold(it.value))
        if (it.attribute, value) in other_side:  # "I love jazz" does not name "dislikes jazz"
            spared.append(it)
        elif len(value) >= 2 and mentions(folded, fold(it.value)) or any(
                s.attribute == it.attribute and normalise(fold(s.value)) == value for s in stated):
            items.append(it)
    named_sources = {x for i in items for x in i.source_ids}
    return _plan(store, user_id, text, items, keep={x for i in spared for x in i.source_ids} - named_sources,
                 words=words)


#: a stated polarity and its opposite: a forget request stating one ("I love jazz") spares an item of the other
_OPPOSITE = {"likes": "dislikes", "dislikes": "likes"}


def _plan(store: MemoryStore, user_id: str, text: str, items: list[MemoryItem],
          keep: frozenset[str] | set[str] = frozenset(), *, by_text: bool = True,
          words: RequestWords | None = None) -> ForgetPreview:
    """The preview for ``items`` (possibly none) matched by ``text``: the segments they were read from or that quote
    one of their values (with no item, the segments quoting ``text`` or holding all its content words, else those
    holding its key words: :func:`by_key_words`; and those naming it by the name a matched segment gave it:
    :func:`linked`), and the other items read only from those segments. A segment in ``keep`` (the sources of an
    item the request spares, :func:`preview`) is chosen only as the source of an item in ``items``.

    Of those other items, the ones whose value the request names by its content words (``by_text``: "I love to swim"
    names "hobby: swimming", read from the segment it matched), or whose value holds every key word of the request
    ("techno" names "likes: techno music"; "techno music" does not name "likes: classical music"), are matched too;
    the rest are ``collateral``. Trials saw the only fact a request was about labelled "also goes", and "likes: techno
    music" so labelled when forgetting "techno". ``words``: the request's words as :func:`preview` read
    them (default :func:`timem.memory.forget_words.request_words` of ``text``).

    Matching folds accents on both sides (:func:`timem.memory.forget_words.fold`: "zurich" reaches "Zürich", "Zurich"
    "zürich"); the preview holds the segments and the request as stored and typed."""
    shown, text = text, fold(text)
    probes = [normalise(fold(i.value)) for i in items] or [normalise(text)]
    stems = set() if items else request_stems(text)
    source_ids = {s for i in items for s in i.source_ids}
    stored = {n.id: n for n in store.nodes(user_id, Level.SEGMENT)}
    every = [n.model_copy(update={"content": fold(n.content)}) for n in stored.values()]  # matched folded
    first = by_text and first_person(text)

    def mine(found: list[MemoryNode]) -> list[MemoryNode]:
        return said_by_user(store, user_id, found, source_ids) if first else found

    segments = mine([n for n in every if n.id in source_ids or n.id not in keep and (
        any(p and mentions(n.content, p) for p in probes) or covers(n.content, stems))])
    hint = ""
    if not items and not segments and text.strip():
        words = words or request_words(text)
        segments = mine(by_key_words([n for n in every if n.id not in keep], words, stems))
        hint = "" if segments else nothing_hint(text, words, every)
    if not items:
        segments += mine([n for n in linked(text, segments, every) if n.id not in keep])
    if by_text:
        matched = segments
        segments = in_scope(text, segments, items, source_ids, words, typed=shown, stored=stored)
        if matched and not segments and not items:  # lines hold its words, but it does not reach them: say why
            hint = scope_hint(text, words or request_words(text), [stored[n.id] for n in matched],
                              name_words(shown, (n.content for n in stored.values())))
    answers = replies(store, user_id, segments, every)  # the reply of each exchange goes with it
    segments = [stored[n.id] for n in segments + answers]  # as stored (not folded)
    # items read only from those segments go with them (editing.soft_delete): the preview names them too
    seg_ids, chosen = {n.id for n in segments}, {i.id for i in items}
    active = store.items(user_id)
    extra = [i for i in active if i.id not in chosen and i.source_ids and set(i.source_ids) <= seg_ids]
    going = chosen | {i.id for i in extra}
    # the earlier value that a fact going replaced in the same message ("I switched from espresso to green tea"):
    # not asked about, it stays, though its line goes, and holds again below
    kept = {i.id for i in extra if i.superseded_by in going}
    extra = [i for i in extra if i.id not in kept]
    going -= kept
    # as held now (a value reopened by an earlier forget ends at the next one), then with what goes gone: each ends
    # where the next value that stays begins (:func:`timem.item_holding.as_held`)
    before = as_held(active)
    after = {i.id: i for i in as_held([i.model_copy(update={"status": "deleted"}) if i.id in going else i
                                       for i in before])}
    reopened = [after[i.id] for i in before if i.id not in going and i.superseded_by in going]
    asked = request_stems(text) if by_text else set()
    key = content_stems(" ".join((words or request_words(text)).key), ascii_only=True) & asked if asked else set()
    named = [i for i in extra
             if asked and (value := stems_of(fold(i.value))) and (value <= asked or key and key <= value)]
    return ForgetPreview(user_id=user_id, text=shown, items=items + named + [i for i in extra if i not in named],
                         segments=segments, collateral={i.id for i in extra} - {i.id for i in named},
                         reopened=reopened, hint=hint, replies={n.id for n in answers}, kept=kept,
                         searched_items=len(active), searched_segments=len(every))


def preview_items(store: MemoryStore, user_id: str, item_ids: list[str]) -> ForgetPreview:
    """What forgetting the items ``item_ids`` takes (the studio's Facts view), as "Forget by text" of their values:
    the active ones among them, the active L1 segments they were read from or that quote a value (else recall would
    still find the fact in the conversation, e.g. in the assistant's "Noted: a double espresso"), and the other
    items read only from those segments; nothing is changed.

    Raises:
        InputError: no ids. NotFoundError: an id that is not an item of ``user_id``.
    """
    if not item_ids:
        raise InputError("pick the memory items to forget", field="item_ids")
    mine = {i.id: i for i in store.items(user_id, status=None)}
    unknown = [i for i in item_ids if i not in mine]
    if unknown:
        raise NotFoundError(f"no memory item {unknown[0]!r} for user {user_id!r}")
    items = [mine[i] for i in item_ids if mine[i].status == "active"]
    return _plan(store, user_id, "; ".join(i.label() for i in items), items, by_text=False)


def apply(store: MemoryStore, cons: Consolidator, plan: ForgetPreview, *, actor: str = "user") -> ForgetPreview:
    """Soft-delete what ``plan`` lists (see the module doc); returns ``plan``."""
    turns = [t for n in plan.segments for t in store.turns(plan.user_id, ids=n.source_turn_ids)]
    with store.transaction():
        for it in plan.items:  # a collateral item goes only with its segments: restoring them brings it back
            store.update_item(it.id, status="deleted")
            store.audit("item-sources-deleted" if it.id in plan.collateral else "forget-item", plan.user_id, it.id,
                        {"actor": actor, "segments": [n.id for n in plan.segments]})
        store.purge_cache_mentioning([n.content for n in plan.segments] + [t.text for t in turns])
        editing.refresh_profiles(store, cons, plan.items, actor=actor)  # the L5 profiles listing them
    if plan.segments:
        editing.soft_delete(store, cons, [n.id for n in plan.segments], actor=actor, keep_items=plan.kept)
    return plan


def forgotten_turn_ids(segments: list[MemoryNode]) -> set[str]:
    """The ids of the turns that were forgotten: held by a soft-deleted L1 segment of ``segments`` (the user's L1
    nodes in any status, e.g. one session's) and by no active one. A turn not yet in any segment (a queued write)
    is not forgotten; a segment superseded by an edit leaves its turns as they are."""
    gone = {t for n in segments if n.status == NodeStatus.DELETED for t in n.source_turn_ids}
    return gone - {t for n in segments if n.status == NodeStatus.ACTIVE for t in n.source_turn_ids}
