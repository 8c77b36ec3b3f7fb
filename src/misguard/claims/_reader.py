"""Pair readers: a second opinion on whether a text repeats its matched claim, read by the
decision as the feature `reader_en` (a reader of English texts) or `reader_any` (a reader of
every language) (higher: more likely).

`EmbeddingReader` (loaded by `load_reader(spec)` from an embedder spec such as `st/minilm`):
the cosine of the text and the claim under another embedder, untrained. The bundled English
all-MiniLM-L6-v2 separates CheckThat-2020 tweets from tweets whose claim is not stored better
than e5's own cosine (ROC AUC 0.908 vs 0.794, docs/BENCHMARKS.md), and the decision fitted
with it flags more tweets (74.4% -> 75.4% of the CheckThat-2020 test tweets). A user's own
multilingual encoder is read for texts in every language (`languages="all"`, feature
`reader_any`). A cross-encoder fine-tuned on the CheckThat train tweets separated them no
better than the untrained MiniLM cosine (docs/BENCHMARKS.md) and was removed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from ..config import EmbedSettings
from ..embed import EMBEDDERS, Embedder, get_embedder
from ..errors import ConfigError

#: The language whose texts the decision reads an English reader's value for (`reader_en`):
#: the bundled readers are English models; the guard does not read other texts with them.
READ_LANGUAGE = "en"
#: The languages a reader reads: English (the default), or every language (a multilingual
#: embedder given with `--reader-languages all`; its value is the feature `reader_any`).
READER_LANGUAGES = ("en", "all")


class EmbeddingReader:
    """The cosine of a text and its matched claim under a second embedder (no training).

    Texts are embedded as queries and claims as passages, like the store's own embedder;
    both go through the embedder's caches, so a claim matched again costs nothing.
    `languages`: "en" (the default; the bundled all-MiniLM is English) or "all" for a
    multilingual embedder, whose value the decision reads for every text."""

    kind = "embedding"

    def __init__(self, embedder: Embedder, languages: str = READ_LANGUAGE) -> None:
        if languages not in READER_LANGUAGES:
            raise ConfigError(f"reader languages {languages!r}: use one of {', '.join(READER_LANGUAGES)}")
        self.embedder = embedder
        self.languages = languages

    def read_many(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        texts = self.embedder.embed([t for t, _ in pairs], "query")
        claims = self.embedder.embed([c for _, c in pairs], "passage")
        return [float(v) for v in np.einsum("ij,ij->i", texts, claims)]

    def identity(self) -> dict[str, object]:
        # English readers keep the identity decisions recorded before `languages` existed
        extra = {} if self.languages == READ_LANGUAGE else {"languages": self.languages}
        return {"kind": self.kind, "embedder": self.embedder.spec, **extra}

    def describe(self) -> dict[str, object]:
        return {**self.identity(), "embedder_build": self.embedder.describe()}


class Reader(Protocol):
    """What the guard needs of a reader (`EmbeddingReader`, or your own)."""

    #: "en": the guard reads it for English texts only (feature `reader_en`); "all": for
    #: every text (feature `reader_any`)
    languages: str

    def read_many(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The decision's `reader_en` value for each (text, claim) pair."""
        ...

    def identity(self) -> dict[str, object]:
        """What a decision fitted with this reader records of it (no paths)."""
        ...

    def describe(self) -> dict[str, object]:
        """How it was built, for run logs."""
        ...


def load_reader(spec: str, settings: EmbedSettings | None = None, languages: str = READ_LANGUAGE) -> Reader:
    """An `EmbeddingReader` from an embedder spec (`st/minilm`, `st//path/to/model`) that reads
    `languages`."""
    text = str(spec)
    if is_embedder_spec(text):
        return EmbeddingReader(get_embedder(text, settings), languages)
    raise ConfigError(f"--reader {text}: not an embedder spec (use e.g. st/minilm, or st//path/to/model "
                      "for a sentence-transformers model directory)")


def reads(reader: Reader, language: str) -> bool:
    """Whether the decision reads `reader`'s value for a text in `language`."""
    return reader.languages == "all" or language == READ_LANGUAGE


def reader_of(identity: dict, settings: EmbedSettings | None = None) -> Reader:
    """The embedding reader a decision recorded (`identity()`), rebuilt."""
    return load_reader(str(identity["embedder"]), settings, str(identity.get("languages", READ_LANGUAGE)))


def is_embedder_spec(spec: str) -> bool:
    """`spec` names an embedder (`backend/model`) and not an existing path."""
    backend, sep, model = spec.partition("/")
    return bool(sep and model) and backend in EMBEDDERS and not Path(spec).exists()


def probability(logit: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit))))


__all__ = ["EmbeddingReader", "Reader", "is_embedder_spec", "load_reader", "probability"]
