"""Bootstrap confidence intervals."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def bootstrap_ci(
    values: Sequence[float], *, n_resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float | None, float | None, float | None]:
    """Mean and percentile bootstrap interval; (None, None, None) for no values."""
    data = np.asarray([v for v in values if v is not None], dtype=float)
    if data.size == 0:
        return None, None, None
    mean = float(data.mean())
    if data.size == 1:
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(n_resamples, data.size))].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    return mean, float(np.quantile(means, alpha)), float(np.quantile(means, 1.0 - alpha))
