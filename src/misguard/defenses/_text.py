"""Sentence splitting shared by the defenses and the judges."""

from __future__ import annotations

import re

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def split_sentences(text: str, min_words: int = 3) -> list[str]:
    """Sentences of `text` with at least `min_words` words (shorter fragments carry no claim)."""
    return [text[a:b] for a, b in sentence_spans(text, min_words)]


def sentence_spans(text: str, min_words: int = 3) -> list[tuple[int, int]]:
    """(start, end) of each sentence `split_sentences` returns, whitespace trimmed, so a
    caller can cut or replace sentences in place."""
    spans, start = [], 0
    for gap in [*_SENTENCE.finditer(text), None]:
        end = gap.start() if gap is not None else len(text)
        piece = text[start:end]
        if len(piece.split()) >= min_words:
            lead = len(piece) - len(piece.lstrip())
            spans.append((start + lead, start + len(piece.rstrip())))
        if gap is not None:
            start = gap.end()
    return spans


def replace_spans(text: str, replacements: dict[tuple[int, int], str]) -> str:
    """`text` with each (start, end) span replaced; an empty replacement also takes the
    whitespace after the span, so no blank is left. Text outside the spans is kept as is."""
    out, last = [], 0
    for (a, b), new in sorted(replacements.items()):
        out.append(text[last:a])
        out.append(new)
        last = b if new else len(text) - len(text[b:].lstrip())
    out.append(text[last:])
    return "".join(out).strip()
