"""Rates with bootstrap intervals over groups (claims, tasks, scenarios): texts of one
group are not independent (eight disguises of one claim fail together), so the interval
resamples groups, not texts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np


def grouped_rate(values: Sequence[float], groups: Sequence[str], *, n_resamples: int = 2000, seed: int = 0,
                 level: float = 0.95) -> dict[str, float | int | None]:
    """Mean of `values` (percent when they are 0/1 x 100) with a bootstrap interval that
    resamples `groups`."""
    if not values:
        return {"n": 0, "groups": 0, "mean": None, "lo": None, "hi": None}
    by: dict[str, list[float]] = defaultdict(list)
    for v, g in zip(values, groups):
        by[g].append(float(v))
    keys = sorted(by)
    sums = np.array([sum(by[k]) for k in keys])
    counts = np.array([len(by[k]) for k in keys])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(keys), size=(n_resamples, len(keys)))
    means = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    alpha = (1 - level) / 2
    return {"n": len(values), "groups": len(keys), "mean": float(sums.sum() / counts.sum()),
            "lo": float(np.quantile(means, alpha)), "hi": float(np.quantile(means, 1 - alpha))}
