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


def paired_reduction_ci(
    baseline: dict[str, float], treated: dict[str, float], *, n_resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> dict[str, float | int | None]:
    """Relative change of the mean (treated vs baseline) over the keys both have, with a
    paired bootstrap over those keys: resample keys, recompute both means, take the ratio."""
    keys = sorted(set(baseline) & set(treated))
    if not keys:
        return {"n": 0, "change": None, "lo": None, "hi": None, "diff": None, "diff_lo": None, "diff_hi": None}
    a = np.asarray([baseline[k] for k in keys], dtype=float)
    b = np.asarray([treated[k] for k in keys], dtype=float)
    change = float(b.mean() / a.mean() - 1.0) if a.mean() else None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(keys), size=(n_resamples, len(keys)))
    am, bm = a[idx].mean(axis=1), b[idx].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    ratios = np.where(am > 0, bm / np.where(am > 0, am, 1.0) - 1.0, np.nan)
    ratios = ratios[~np.isnan(ratios)]
    diffs = bm - am
    return {
        "n": len(keys),
        "change": change,
        "lo": float(np.quantile(ratios, alpha)) if ratios.size else None,
        "hi": float(np.quantile(ratios, 1.0 - alpha)) if ratios.size else None,
        "diff": float(b.mean() - a.mean()),
        "diff_lo": float(np.quantile(diffs, alpha)),
        "diff_hi": float(np.quantile(diffs, 1.0 - alpha)),
    }
