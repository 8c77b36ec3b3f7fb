"""Language shift: move a query's embedding from its language's centroid to the store's.

Multilingual e5 keeps a strong language component in every vector: an Arabic passage
about a myth can sit closer to generic English claims than to the English headline of
the same myth. Subtracting the mean vector of the query's language and adding the mean
of fact-checked claims (the `target`) removes that component (and the gap between
query-like and headline-like text) before retrieval ("language-neutral" centring, as in Libovický et
al. 2020). On the dev set, with 11k distractors and centroids fitted on other claims'
queries only, the right myth at top-1 rose from 90.9% to 97.5% and Chinese from 67.5% to
97.5% (docs/BENCHMARKS.md).

The centroids are a property of the embedder and of each language, not of one store, so
they are fitted once (query centroids on calibration queries, the target on the ~11k
LIAR/Snopes headlines) and shipped with the decision model: a small store of a few
dozen claims would give a topic-biased mean.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError

#: Used for a language without a fitted centroid: the mean of the fitted ones.
FALLBACK = "*"


@dataclass
class LanguageShift:
    """Per-language query centroids and the claim centroid queries are moved to
    (unnormalised means of unit vectors)."""

    centroids: dict[str, np.ndarray]
    target: np.ndarray

    def __post_init__(self) -> None:
        if not self.centroids:
            raise ConfigError("A language shift needs at least one language centroid")
        dims = {v.shape for v in self.centroids.values()} | {self.target.shape}
        if len(dims) != 1:
            raise ConfigError(f"Language centroids of different shapes: {sorted(dims)}")
        if FALLBACK not in self.centroids:
            # A copy: the caller's mapping is not theirs to find changed.
            self.centroids = {**self.centroids, FALLBACK: np.mean(list(self.centroids.values()), axis=0)}

    @property
    def direction(self) -> np.ndarray:
        """The unit vector of the target: how "generic" a claim or a shifted query is, as
        its cosine to the average fact-checked headline, whatever the store holds."""
        return self.target / max(float(np.linalg.norm(self.target)), 1e-12)

    @property
    def dim(self) -> int:
        return int(next(iter(self.centroids.values())).shape[0])

    @classmethod
    def fit(cls, samples: Iterable[tuple[str, np.ndarray]], claim_vectors: np.ndarray) -> LanguageShift:
        """Centroids from (language, query vectors) pairs, e.g. calibration segments, and
        the target from the stored claims' vectors."""
        sums: dict[str, np.ndarray] = {}
        counts: dict[str, int] = {}
        for language, vectors in samples:
            vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
            sums[language] = sums.get(language, 0) + vectors.sum(axis=0)
            counts[language] = counts.get(language, 0) + len(vectors)
        target = np.asarray(claim_vectors, dtype=np.float64).mean(axis=0).astype(np.float32)
        return cls({lang: (sums[lang] / counts[lang]).astype(np.float32) for lang in sums}, target)

    def apply(self, vectors: np.ndarray, language: str) -> np.ndarray:
        """Unit vectors of `vectors - centroid(language) + target`."""
        centroid = self.centroids.get(language, self.centroids[FALLBACK])
        if centroid.shape[0] != vectors.shape[-1]:
            raise ConfigError(
                f"The language shift was fitted for {centroid.shape[0]}-dim vectors, the embedder gives "
                f"{vectors.shape[-1]}; refit the decision with misguard claims fit-decision"
            )
        moved = vectors - centroid + self.target
        norms = np.linalg.norm(moved, axis=-1, keepdims=True)
        return (moved / np.maximum(norms, 1e-12)).astype(np.float32)

    def to_dict(self) -> dict[str, object]:
        def rounded(v: np.ndarray) -> list[float]:
            return [round(float(x), 7) for x in v]

        return {
            "target": rounded(self.target),
            "centroids": {lang: rounded(v) for lang, v in self.centroids.items() if lang != FALLBACK},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> LanguageShift:
        try:
            centroids = data["centroids"]
            assert isinstance(centroids, Mapping)
            return cls(
                {str(k): np.asarray(list(v), dtype=np.float32) for k, v in centroids.items()},
                np.asarray(list(data["target"]), dtype=np.float32),  # type: ignore[call-overload]
            )
        except (AssertionError, KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"Malformed language centroids: {exc}") from None
