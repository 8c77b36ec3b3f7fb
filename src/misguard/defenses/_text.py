"""Sentence splitting shared by the defenses and the judges."""

from __future__ import annotations

import re

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def split_sentences(text: str, min_words: int = 3) -> list[str]:
    """Sentences of `text` with at least `min_words` words (shorter fragments carry no claim)."""
    return [s.strip() for s in _SENTENCE.split(text) if len(s.split()) >= min_words]
