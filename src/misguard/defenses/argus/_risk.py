"""Misinformation risk of sentences: a linear model over the embedder's vectors, ARGUS's
evidence path that needs no LLM.

Small local rectifiers cannot tell a task's misinformation from its truths (docs/argus.md),
so the paper's goal loop never starts with them. A logistic regression on sentence vectors,
fitted on task files (`fit_risk_model`, `misguard defenses fit-risk`):
    misinformation (1)  each task's goal and the sentences of its misinformation arguments;
    other (0)           the sentences of its ground truths, reference solution and task
                        statement (what honest agents talk about).
It learns much of *how* misinformation is argued (invented sources, universal claims,
appeals to authority) besides *what* it says, so it is evidence to weigh, not a fact-checker.

Two thresholds travel with the weights, both chosen on out-of-fold scores of the training
tasks (grouped by task), never on evaluated ones:
    act     sentence probability at which a sentence counts as misinformation (goal
            seeding, redaction): the negatives' (1 - `act_fpr`) quantile;
    screen  a message whose best sentence is below it skips the rectifier LLM: the
            positives' (1 - `screen_tpr`) quantile.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...embed import Embedder
from ...errors import ConfigError, DataError, MissingExtraError
from ...mas import MisinfoTask
from .._text import split_sentences
from ._calibrate import youden_threshold

FORMAT = "misguard.message-risk"
FORMAT_VERSION = 1
#: Regularisation strengths tried (inverse; chosen by grouped cross-validation).
C_GRID = (0.1, 1.0, 10.0, 100.0)


@dataclass
class MessageRiskModel:
    """P(misinformation | sentence vector) = sigmoid(w . v + b), with its thresholds.

    Attributes:
        embedder: spec of the embedder the weights were fitted for (checked on load).
        weights, bias: the logistic regression.
        act_threshold: probability from which a sentence counts as misinformation.
        screen_threshold: a message whose best sentence is below it is left to pass.
        report: how it was trained (data, grid, out-of-fold figures).
    """

    embedder: str
    weights: np.ndarray
    bias: float
    act_threshold: float
    screen_threshold: float
    report: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    @property
    def dim(self) -> int:
        return int(self.weights.shape[0])

    def probabilities(self, vectors: np.ndarray) -> np.ndarray:
        """Risk of each row of `vectors` (unit sentence vectors of `embedder`)."""
        vectors = np.asarray(vectors, dtype=np.float64)
        if vectors.size == 0:
            return np.zeros(0)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ConfigError(f"the risk model takes {self.dim}-dim vectors, got shape {vectors.shape}")
        return 1.0 / (1.0 + np.exp(-(vectors @ self.weights + self.bias)))

    def describe(self) -> dict[str, Any]:
        summary = {k: self.report[k] for k in ("data", "tasks", "positives", "negatives", "C", "oof_auc") if k in self.report}
        return {"path": str(self.path) if self.path else None, "embedder": self.embedder,
                "act_threshold": round(self.act_threshold, 6), "screen_threshold": round(self.screen_threshold, 6),
                "sha256": self.digest(), "training": summary}

    def digest(self) -> str:
        """Content hash of the weights and thresholds (run logs record it)."""
        h = hashlib.sha256(np.ascontiguousarray(self.weights, dtype=np.float64).tobytes())
        h.update(json.dumps([self.bias, self.act_threshold, self.screen_threshold, self.embedder]).encode())
        return h.hexdigest()

    def save(self, path: str | Path) -> Path:
        """Write the model as JSON, atomically (temp file + rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "format": FORMAT, "version": FORMAT_VERSION, "embedder": self.embedder, "dim": self.dim,
            "weights": [float(w) for w in self.weights], "bias": float(self.bias),
            "act_threshold": float(self.act_threshold), "screen_threshold": float(self.screen_threshold),
            "report": self.report,
        }
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w") as fh:
            json.dump(payload, fh, indent=1)
        os.replace(tmp, path)
        self.path = path
        return path

    @classmethod
    def load(cls, path: str | Path, embedder: Embedder | None = None) -> MessageRiskModel:
        """Read a saved model; refuses one fitted for another embedder than `embedder`."""
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"risk model {path} not found; fit one with `misguard defenses fit-risk`")
        try:
            raw = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise DataError(f"cannot read the risk model: {exc}", source=str(path)) from None
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise DataError("not a misguard message-risk model (fit one with `misguard defenses fit-risk`)", source=str(path))
        if raw.get("version") != FORMAT_VERSION:
            raise DataError(f"risk model format version {raw.get('version')}; this misguard reads {FORMAT_VERSION}", source=str(path))
        if embedder is not None and (raw["embedder"] != embedder.spec or raw["dim"] != embedder.dim):
            raise ConfigError(
                f"{path} was fitted for {raw['embedder']} ({raw['dim']} dims) but the embedder is {embedder.spec} "
                f"({embedder.dim} dims); fit one for it with `misguard defenses fit-risk`"
            )
        return cls(raw["embedder"], np.asarray(raw["weights"], dtype=np.float64), float(raw["bias"]),
                   float(raw["act_threshold"]), float(raw["screen_threshold"]), raw.get("report", {}), path)


def _sklearn() -> Any:
    try:
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import GroupKFold
    except ImportError:
        raise MissingExtraError("scikit-learn", "mas", "training the ARGUS risk model") from None
    return LogisticRegression, roc_auc_score, GroupKFold


def fit_message_risk(
    vectors: np.ndarray, labels: Sequence[int], groups: Sequence[Any], *, embedder: str,
    c_grid: Sequence[float] = C_GRID, folds: int = 5, act_fpr: float = 0.05, screen_tpr: float = 0.95,
    report: dict[str, Any] | None = None,
) -> MessageRiskModel:
    """Fit the risk model: C by out-of-fold AUC over folds grouped by `groups` (tasks), then
    the thresholds from that C's out-of-fold probabilities, then the final fit on all rows.

    Args:
        vectors: (n, d) unit sentence vectors.
        labels: 1 misinformation, 0 not.
        groups: one group id per row (a task): no group is split across folds.
        embedder: the embedder's spec, saved with the weights.
        act_fpr: share of negatives allowed at or above the act threshold.
        screen_tpr: share of positives kept at or above the screen threshold.
    """
    LogisticRegression, roc_auc_score, GroupKFold = _sklearn()
    x = np.asarray(vectors, dtype=np.float64)
    y = np.asarray(labels, dtype=int)
    g = np.asarray(groups)
    if x.ndim != 2 or len(x) != len(y) or len(y) != len(g):
        raise DataError(f"vectors {x.shape}, labels {len(y)} and groups {len(g)} do not line up")
    if y.min(initial=1) == y.max(initial=0):
        raise DataError("the risk model needs both misinformation (1) and other (0) sentences")
    folds = min(folds, len(set(g.tolist())))
    if folds < 2:
        raise DataError("the risk model needs sentences from at least two tasks (cross-validation is grouped by task)")

    def model(c: float) -> Any:
        return LogisticRegression(C=c, max_iter=5000, class_weight="balanced")

    oof: dict[float, np.ndarray] = {}
    for c in c_grid:
        scores = np.zeros(len(y))
        for train, test in GroupKFold(n_splits=folds).split(x, y, g):
            scores[test] = model(c).fit(x[train], y[train]).predict_proba(x[test])[:, 1]
        oof[c] = scores
    aucs = {c: float(roc_auc_score(y, s)) for c, s in oof.items()}
    best = max(c_grid, key=lambda c: (aucs[c], -c))  # ties: the stronger regularisation
    scores = oof[best]
    act = float(np.quantile(scores[y == 0], 1.0 - act_fpr))
    screen = float(np.quantile(scores[y == 1], 1.0 - screen_tpr))
    final = model(best).fit(x, y)
    info = {
        **(report or {}),
        "positives": int(y.sum()), "negatives": int((y == 0).sum()), "groups": len(set(g.tolist())),
        "folds": folds, "c_grid": list(c_grid), "oof_auc_by_c": {str(c): round(a, 4) for c, a in aucs.items()},
        "C": best, "oof_auc": round(aucs[best], 4),
        "act_fpr": act_fpr, "act_tpr_oof": round(float((scores[y == 1] >= act).mean()), 4),
        "screen_tpr": screen_tpr, "screen_negatives_skipped_oof": round(float((scores[y == 0] < screen).mean()), 4),
    }
    return MessageRiskModel(embedder, final.coef_[0].astype(np.float64), float(final.intercept_[0]), act, screen, info)


KINDS = ("goal", "argument", "ground_truth", "reference", "task")


@dataclass(frozen=True)
class RiskSentence:
    task: int
    label: int
    kind: str
    text: str


def risk_sentences(tasks: Sequence[MisinfoTask]) -> list[RiskSentence]:
    """The labelled sentences of `tasks` (see the module docstring)."""
    out = []
    for t in tasks:
        out.append(RiskSentence(t.id, 1, "goal", t.misinfo_goal))
        for kind, label, texts in (
            ("argument", 1, t.misinfo_argument), ("ground_truth", 0, t.ground_truth),
            ("reference", 0, (t.reference_solution,)), ("task", 0, (t.user_input,)),
        ):
            for text in texts:
                out += [RiskSentence(t.id, label, kind, s) for s in (split_sentences(text) or [text])]
    return out


def fit_risk_model(tasks: Sequence[MisinfoTask], embedder: Embedder, **fit: Any) -> MessageRiskModel:
    """Fit the risk model on `tasks` for `embedder` (C and thresholds by cross-validation
    grouped by task; `fit` goes to `fit_message_risk`)."""
    rows = risk_sentences(tasks)
    vectors = embedder.embed([r.text for r in rows], "query")
    counts = {k: sum(r.kind == k for r in rows) for k in KINDS}
    return fit_message_risk(
        vectors, [r.label for r in rows], [r.task for r in rows], embedder=embedder.spec,
        report={"tasks": sorted({r.task for r in rows}), "sentences_by_kind": counts}, **fit,
    )


def evaluate_risk_model(model: MessageRiskModel, tasks: Sequence[MisinfoTask], embedder: Embedder) -> dict[str, Any]:
    """AUC and threshold rates of `model` on `tasks` (keep them apart from its training tasks)."""
    trained = set(model.report.get("tasks", []))
    overlap = sorted(trained & {t.id for t in tasks})
    rows = risk_sentences(tasks)
    scores = model.probabilities(embedder.embed([r.text for r in rows], "query"))
    kind = np.array([r.kind for r in rows])
    label = np.array([r.label for r in rows])
    pos = scores[label == 1]
    out: dict[str, Any] = {
        "tasks": sorted({r.task for r in rows}), "overlap_with_training": overlap,
        "auc": youden_threshold(pos, scores[label == 0])["auc"],
        "auc_vs": {k: youden_threshold(pos, scores[kind == k])["auc"] for k in ("ground_truth", "reference", "task")},
        "act_threshold": model.act_threshold, "screen_threshold": model.screen_threshold,
        "at_act": {k: float((scores[kind == k] >= model.act_threshold).mean()) for k in KINDS},
        "below_screen": {k: float((scores[kind == k] < model.screen_threshold).mean()) for k in KINDS},
        "sentences": {k: int((kind == k).sum()) for k in KINDS},
    }
    return out
