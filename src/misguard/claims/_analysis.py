"""What the guard knows about one text before its decision: the prepared text (cleaned,
segmented, with offsets into the original) and its analysis (candidates, features)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..types import Claim
from ._detect import MatchContext
from ._store import ClaimStore
from ._text import Segment


@dataclass
class _Prepared:
    original: str
    clean: str
    offsets: list[int]
    segments: list[Segment]
    truncated: bool
    instructions: list[str]
    social: bool = False  # the social-media normalisation changed the text
    unmasked: bool = False  # undoing character-level disguises changed the text
    #: spans of the original text addressed to the checker, set aside (`_screen`)
    injections: list[tuple[int, int]] = field(default_factory=list)


@dataclass(frozen=True)
class Nearest:
    """The claim a text matches best when it is not rated false, and where in the text."""

    claim: Claim
    segment: Segment
    cosine: float


@dataclass
class Analysis:
    """One text's path up to the decision: segments, topics, the best candidate and its features."""

    prepared: _Prepared
    language: str
    topics: list[str]
    stages: list[str]
    claim: Claim | None = None
    segment: Segment | None = None
    context: MatchContext | None = None
    #: top candidates (slot, ranking score), best first, as many as the guard outputs
    ranked: list[tuple[int, float]] = field(default_factory=list)
    #: every candidate in ranked order: slots, pair features, segment cosines
    slots: list[int] = field(default_factory=list)
    pairs: np.ndarray | None = None
    sims: np.ndarray | None = None
    seg_vecs: np.ndarray | None = None
    store: ClaimStore | None = None
    body_language: str = "und"
    #: set when the claim the text matches best is rated other than false (the guard
    #: then does not flag it, and shows that claim)
    nearest: Nearest | None = None
    _claims: dict[int, Claim] = field(default_factory=dict)

    def claim_at(self, j: int) -> Claim:
        """The claim of candidate `j` (records are read from the store when first asked for)."""
        slot = self.slots[j]
        if slot not in self._claims:
            assert self.store is not None
            self._claims.update(self.store.get_slots(self.slots[j : j + 8]))
        return self._claims[slot]

    def claims_of(self, slots: list[int]) -> list[Claim]:
        """The claims of these slots (read from the store when first asked for)."""
        missing = [s for s in slots if s not in self._claims]
        if missing:
            assert self.store is not None
            self._claims.update(self.store.get_slots(missing))
        return [self._claims[s] for s in slots]

    @property
    def candidates(self) -> list[Claim]:
        """Every candidate claim in ranked order (reads all their records)."""
        missing = [s for s in self.slots if s not in self._claims]
        if missing and self.store is not None:
            self._claims.update(self.store.get_slots(missing))
        return [self._claims[s] for s in self.slots]

    def candidate_ids(self, top: int | None = None) -> list[str]:
        return [self.claim_at(j).id for j in range(len(self.slots[:top]))]
