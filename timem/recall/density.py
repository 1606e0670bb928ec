"""Denser context: photo captions shown shorter or left out, speakers by initial (issue 23).

A LoCoMo turn that shares a photo carries its caption in the stored L1 text (:func:`timem.consolidation.segments.
turn_line`): ``Melanie: … [shares a photo: a photo of a painting of a sunset over a lake]`` (19 cl100k tokens on
average; 188 of the 788 dev turns have one, and they took 37 of a 500-token context). Two rewrites of what the
context *shows* (the stored memory is unchanged, and no memory is dropped):

* ``Config.recall.caption_form = "short"`` (the default): every caption as ``[photo: a painting of a sunset over a
  lake]`` (the caption's own "a photo of" left out; 5 tokens fewer, no word of what the photo shows lost);
* ``Config.recall.caption_cut``: a caption that shares no content stem with the question
  (:func:`timem.tokens.content_stems`, the question's person names left out) is left out, in the condensed memories
  only (``"condensed"``: those after the first ``condense_after`` leaves and their neighbours,
  :func:`timem.recall.condense.condense`) or in every memory (``"all"``).

* ``Config.recall.speaker_labels = "initials"``: each L1 line's speaker label as an initial (``M: …`` for
  ``Melanie: …``), with one legend line at the head of the context (``Speakers: C = Caroline, M = Melanie``); two
  speakers with one initial keep their names. A label is 3 cl100k tokens, an initial 2.

Measured on LoCoMo dev (``bench/results/scattered-evidence.md``, "Denser context"): short captions with a header per
session and day (``context_layout = "grouped-date"``) are the default; leaving captions out lost answers that only a
caption holds ("a cup with a dog face"), and initials cost more in their legend than they saved at 250 tokens.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Literal

from timem.models import MemoryNode
from timem.tokens import content_stems

SpeakerLabels = Literal["names", "initials"]
CaptionForm = Literal["whole", "short"]
CaptionCut = Literal["off", "condensed", "all"]

#: a photo caption as :func:`timem.consolidation.segments.turn_line` writes it, or as ``"short"`` shows it, with the
#: space before it
CAPTION = re.compile(r" ?\[(?:shares a photo|photo): ([^\]\n]*)\]")
#: the caption's own opening ("a photo of", BLIP's "a photography of"), which says again that it is a photo
_PHOTO_OF = re.compile(r"^(?:a|an)\s+(?:photo|photograph|photography|picture|image)\s+of\s+", re.IGNORECASE)


def shown_captions(text: str, form: CaptionForm, stems: set[str] | None = None) -> str:
    """``text`` with its photo captions as the context shows them: in ``form`` (``"whole"``: as written, ``"short"``:
    ``[photo: …]`` without the caption's "a photo of"), and, when ``stems`` is given (the question's content stems),
    a caption sharing none of them left out. Unchanged when it has no caption."""
    if "photo: " not in text:
        return text

    def one(m: re.Match[str]) -> str:
        caption = m.group(1).strip()
        if stems is not None and not stems & content_stems(caption):
            return ""
        return f" [photo: {_PHOTO_OF.sub('', caption)}]" if form == "short" else m.group(0)

    return CAPTION.sub(one, text)


def with_captions(node: MemoryNode, form: CaptionForm, stems: set[str] | None = None) -> MemoryNode:
    """``node``, or a copy whose content is :func:`shown_captions` of it when that differs."""
    content = shown_captions(node.content, form, stems)
    return node if content == node.content else node.model_copy(update={"content": content})


def caption_rewrite(nodes: dict[str, MemoryNode], form: CaptionForm, cut: CaptionCut, stems: set[str]
                    ) -> dict[str, MemoryNode]:
    """``nodes`` (by id) as every memory of the context shows its captions: in ``form``, and with ``cut == "all"``
    those sharing no stem of ``stems`` left out (``"condensed"`` is :func:`timem.recall.condense.condense`'s part).
    ``nodes`` itself when there is nothing to rewrite; the input is not modified. A caption already short stays as
    it is."""
    if form == "whole" and cut != "all":
        return nodes
    drop = stems if cut == "all" else None
    return {nid: with_captions(node, form, drop) for nid, node in nodes.items()}


#: the speaker label that opens a line of L1 content (``Melanie: …``); a label is at most 60 characters
_LABEL = re.compile(r"^([^\n:]{1,60}): ", re.MULTILINE)
LEGEND = "Speakers:"


def speaker_initials(nodes: Iterable[MemoryNode]) -> dict[str, str]:
    """``{speaker: initial}`` for the speakers whose labels open the lines of the L1 ``nodes``: the first letter of the
    name, upper case; speakers sharing one initial (or whose name starts with no letter) are left out and keep their
    names. Sorted by initial."""
    speakers = sorted({m.group(1) for n in nodes if int(n.level) == 1 for m in _LABEL.finditer(n.content)})
    by_initial: dict[str, list[str]] = {}
    for sp in speakers:
        if sp[:1].isalpha():
            by_initial.setdefault(sp[:1].upper(), []).append(sp)
    return {names[0]: i for i, names in sorted(by_initial.items()) if len(names) == 1 and names[0] != i}


def legend(initials: Mapping[str, str]) -> str:
    """The legend line of ``initials``: ``Speakers: C = Caroline, M = Melanie`` ("" when there is none)."""
    return f"{LEGEND} " + ", ".join(f"{i} = {sp}" for sp, i in initials.items()) if initials else ""


def with_initials(node: MemoryNode, initials: Mapping[str, str]) -> MemoryNode:
    """``node``, or a copy whose L1 lines' speaker labels in ``initials`` are shown as the initial."""
    if int(node.level) != 1 or not initials:
        return node
    content = _LABEL.sub(lambda m: f"{initials.get(m.group(1), m.group(1))}: ", node.content)
    return node if content == node.content else node.model_copy(update={"content": content})
