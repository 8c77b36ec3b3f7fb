"""Baseline detectors on the same embeddings, and the shared thresholding protocol.

Protocol (the same for every method): fit without labels on the training split, pick
hyper-parameters and the decision threshold on the validation split by best F1, then
freeze both for the test split. Scores are "higher = more suspicious".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import MissingExtraError
from ..registry import Registry


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


@dataclass
class BaselineDetector:
    """An unsupervised embedding detector with a validation-chosen configuration and threshold."""

    name: str
    grid: list[dict[str, Any]]
    seed: int = 0
    max_fit: int = 4000
    max_val: int = 8000
    chosen: dict[str, Any] = field(default_factory=dict)
    threshold: float = 0.0
    _model: Any = None

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "grid": self.grid, "chosen": self.chosen, "threshold": self.threshold}

    def _make(self, params: dict[str, Any], d: int) -> Any:
        sk = _sklearn()
        if self.name == "isolation_forest":
            return sk.ensemble.IsolationForest(n_estimators=200, random_state=self.seed, **params)
        if self.name == "ocsvm":
            return sk.svm.OneClassSVM(kernel="rbf", nu=params["nu"], gamma=params["gamma_scale"] / d)
        raise ValueError(self.name)

    def _score(self, model: Any, x: np.ndarray) -> np.ndarray:
        return -model.score_samples(x)

    def fit(self, train: np.ndarray, val: np.ndarray, val_labels: np.ndarray) -> BaselineDetector:
        rng = np.random.default_rng(self.seed)
        fit_x = train[rng.choice(len(train), size=min(self.max_fit, len(train)), replace=False)]
        vi = rng.choice(len(val), size=min(self.max_val, len(val)), replace=False)
        best = (-1.0, None, None, 0.0)
        for params in self.grid:
            model = self._make(params, train.shape[1]).fit(fit_x)
            thr, f1 = best_f1_threshold(self._score(model, val[vi]), val_labels[vi])
            if f1 > best[0]:
                best = (f1, params, model, thr)
        _, self.chosen, self._model, self.threshold = best
        return self

    def score(self, x: np.ndarray) -> np.ndarray:
        return self._score(self._model, x).astype(np.float32)


def residual_scores(emb: np.ndarray, neighbors: np.ndarray) -> np.ndarray:
    """Statistical residual: 1 - cosine between a record and the mean of its k neighbours."""
    valid = neighbors >= 0
    nb = emb[np.where(valid, neighbors, 0)] * valid[..., None]
    mean = nb.sum(axis=1) / np.maximum(valid.sum(axis=1, keepdims=True), 1)
    mean /= np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)
    return (1.0 - np.einsum("ij,ij->i", emb, mean)).astype(np.float32)


BASELINES: Registry[BaselineDetector] = Registry("memory baseline detector")


@BASELINES.register("isolation_forest", needs_neighbors=False)
def _iforest(seed: int = 0) -> BaselineDetector:
    return BaselineDetector("isolation_forest", [{"contamination": c} for c in (0.01, 0.02, 0.05, 0.1)], seed)


@BASELINES.register("ocsvm", needs_neighbors=False)
def _ocsvm(seed: int = 0) -> BaselineDetector:
    grid = [{"nu": nu, "gamma_scale": g} for nu in (0.01, 0.05, 0.1) for g in (1.0, 0.1, 10.0)]
    return BaselineDetector("ocsvm", grid, seed)
