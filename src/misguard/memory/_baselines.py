"""Shared helpers of the detectors: the best-F1 threshold rule, AUC, the kNN residual.

The detectors themselves live in `_detectors.py` (registry `DETECTORS`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import MissingExtraError


def _sklearn() -> Any:
    try:
        import sklearn.ensemble
        import sklearn.metrics
        import sklearn.svm
    except ImportError as exc:
        raise MissingExtraError("scikit-learn", "memory", "the baseline memory detectors") from exc
    return sklearn


def best_f1_threshold(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(threshold, F1) maximising F1 of `scores >= threshold` on labelled data."""
    sk = _sklearn()
    if labels.sum() == 0 or labels.sum() == len(labels):
        return float(np.max(scores)) + 1e-9, 0.0
    prec, rec, thr = sk.metrics.precision_recall_curve(labels, scores)
    f1 = 2 * prec * rec / np.maximum(prec + rec, 1e-12)
    best = int(np.argmax(f1[:-1]))
    return float(thr[best]), float(f1[best])


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    sk = _sklearn()
    if labels.min() == labels.max():
        return float("nan")
    return float(sk.metrics.roc_auc_score(labels, scores))


def residual_scores(emb: np.ndarray, neighbors: np.ndarray) -> np.ndarray:
    """Statistical residual: 1 - cosine between a record and the mean of its k neighbours."""
    valid = neighbors >= 0
    nb = emb[np.where(valid, neighbors, 0)] * valid[..., None]
    mean = nb.sum(axis=1) / np.maximum(valid.sum(axis=1, keepdims=True), 1)
    mean /= np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)
    return (1.0 - np.einsum("ij,ij->i", emb, mean)).astype(np.float32)
