"""Multiple-choice layouts the segmenter does not see on its own: a question stem that says
nothing about any claim ("Which statement is correct?"), and options written on one line
("A. ... B. ... C. ...").

A content-free stem is an instruction: kept in the text, it lowers the whole text's cosine to
the claim an option repeats and counts as a segment voting for no claim. Options on one line
are not checked one by one at all: the segmenter finds options only at line starts. Both are
fixed on the cleaned text before segmentation, keeping the map to the original's offsets.
The rules below were written from the layouts themselves, not fitted on any data set.
"""

from __future__ import annotations

import re

#: Question stems that name no claim, at the start of the text (after any instruction).
_STEM = re.compile(
    r"""\s*(?:
        (?:which|what)\s+(?:one\s+)?(?:of\s+(?:the|these|those)\s+(?:following\s+)?)?
            (?:statements?|claims?|options?|answers?|sentences?|facts?|ones?)?\s*
            (?:is|are)\s+(?:the\s+)?(?:most\s+)?
            (?:correct|true|false|right|wrong|accurate|inaccurate|incorrect|a\s+myth|a\s+fact)
        |true\s+or\s+false
        |(?:choose|pick|select)\s+the\s+(?:correct|true|right|false|wrong)\s+(?:answer|statement|option|one)
    )\s*[?:.]""",
    re.IGNORECASE | re.VERBOSE,
)
#: An option marker after white space: "A." "b)" "3.".
_MARKER = re.compile(r"(?<=\s)([A-Ha-h]|[1-8])[.)] ")
#: Options already at line starts (what the segmenter reads).
_LINE_OPTION = re.compile(r"^\s*(?:[A-Ha-h]|[1-8])[.)\]:]\s+", re.MULTILINE)
_WORD = re.compile(r"[^\W_]+")
#: An inline option must say this much: "A. Smith and B. Jones wrote ..." is no MCQ.
OPTION_WORDS = 3


def strip_stem(clean: str, offsets: list[int], body_start: int) -> tuple[str, list[int], str | None]:
    """Remove a content-free question stem at `body_start` (where the text's instructions
    end); returns the text, its offsets into the original and the stem removed (or None)."""
    match = _STEM.match(clean, body_start)
    if match is None or not clean[match.end() :].strip():
        return clean, offsets, None
    return clean[: match.start()] + clean[match.end() :], offsets[: match.start()] + offsets[match.end() :], \
        clean[match.start() : match.end()].strip()


def break_inline_options(clean: str, body_start: int, *, after_question: bool = False) -> str:
    """Put options written on one line ("Which is true? A. x y z. B. u v w.") on lines of
    their own, by turning the space before each marker into a line break (the length, and
    so every offset, stays). Only a run of markers in order from A (a, 1), the first after a
    question mark (or lettered, at the body's start: a numbered run after a colon or at the
    start is a list; `after_question`: a question stem was removed just before the body),
    each option at least `OPTION_WORDS` words long."""
    body = clean[body_start:]
    if len(_LINE_OPTION.findall(body)) >= 2:
        return clean  # the segmenter sees these already
    markers = [m for m in _MARKER.finditer(" " + body)]  # a space first: a marker at the body's start
    for first_index, first in enumerate(markers):
        if first.group(1) not in "Aa1":
            continue
        before = body[: first.start() - 1].rstrip()  # (match offsets count the added space)
        # After a question; or at the start, lettered ("1. ... 2. ..." there is a list).
        if (before and before[-1] != "?") or (not before and first.group(1) == "1" and not after_question):
            continue
        run = [first]
        for m in markers[first_index + 1 :]:
            if m.group(1) == chr(ord(run[-1].group(1)) + 1):
                run.append(m)
        if len(run) < 2:
            continue
        ends = [m.start() for m in run[1:]] + [len(body) + 1]
        if any(len(_WORD.findall(body[m.end() - 1 : end - 1])) < OPTION_WORDS for m, end in zip(run, ends)):
            continue
        chars = list(clean)
        for m in run:
            at = body_start + m.start() - 2  # the white space before the marker
            if at >= body_start and chars[at].isspace():
                chars[at] = "\n"
        return "".join(chars)
    return clean
