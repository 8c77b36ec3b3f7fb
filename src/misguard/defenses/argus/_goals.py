"""The attacker's goals ARGUS has inferred so far, de-duplicated by embedding cosine."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...embed import Embedder


@dataclass
class GoalSet:
    """Inferred adversary goals; a goal closer than `threshold` to a known one is a duplicate."""

    embedder: Embedder
    threshold: float
    texts: list[str] = field(default_factory=list)
    vectors: list[np.ndarray] = field(default_factory=list)

    def add(self, goal: str) -> bool:
        """Add `goal` unless it duplicates a known one; True when added."""
        vector = self.embedder.embed([goal], "query")[0]
        if self.vectors and float(np.max(np.stack(self.vectors) @ vector)) > self.threshold:
            return False
        self.texts.append(goal)
        self.vectors.append(vector)
        return True

    def matrix(self) -> np.ndarray | None:
        return np.stack(self.vectors) if self.vectors else None
