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

Features (`features`, recorded in the file):
    embedding   the sentence vector (the only feature of version-1 files);
    cues        the topic-free rhetorical cue counts of `_cues` (`cue_features`), which carry
                over to tasks written by another hand better than the vector alone
                (docs/experiments/2026-11-26-argus-transfer-evidence.md).
With cues, every column is standardised (mean and scale saved with the weights) and C is
chosen on `SCALED_C_GRID`.

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
from ._cues import CUE_NAMES, CUES_VERSION, cue_features

FORMAT = "misguard.message-risk"
FORMAT_VERSION = 2
#: Versions this misguard reads (1: embedding only, no scaling).
READABLE_VERSIONS = (1, 2)
#: Regularisation strengths tried (inverse; chosen by grouped cross-validation).
C_GRID = (0.1, 1.0, 10.0, 100.0)
#: The same for standardised columns (models with cues).
SCALED_C_GRID = (0.001, 0.01, 0.1, 1.0)
#: Feature groups a model can use.
FEATURES = ("embedding", "cues")


@dataclass
class MessageRiskModel:
    """P(misinformation | sentence vector) = sigmoid(w . v + b), with its thresholds.

    Attributes:
        embedder: spec of the embedder the weights were fitted for (checked on load).
        weights, bias: the logistic regression over the (standardised) feature columns.
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
    #: feature groups, in column order ("embedding", then "cues" if used)
    features: tuple[str, ...] = ("embedding",)
    #: column means and scales (None: the columns are used as they are)
    mean: np.ndarray | None = None
    scale: np.ndarray | None = None

    @property
    def dim(self) -> int:
        """Dimension of the sentence vectors the model takes."""
        return int(self.weights.shape[0]) - (len(CUE_NAMES) if self.uses_cues else 0)

    @property
    def uses_cues(self) -> bool:
        return "cues" in self.features

    def columns(self, vectors: np.ndarray, texts: Sequence[str] | None = None) -> np.ndarray:
        """The model's input columns for sentence `vectors` and their `texts` (needed with cues)."""
        vectors = np.asarray(vectors, dtype=np.float64)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ConfigError(f"the risk model takes {self.dim}-dim vectors, got shape {vectors.shape}")
        if self.uses_cues:
            if texts is None or len(texts) != len(vectors):
                raise ConfigError("this risk model also reads the sentences' rhetorical cues: pass the sentences "
                                  "with their vectors")
            vectors = np.hstack([vectors, cue_features(texts)])
        if self.mean is not None and self.scale is not None:
            vectors = (vectors - self.mean) / self.scale
        return vectors

    def probabilities(self, vectors: np.ndarray, texts: Sequence[str] | None = None) -> np.ndarray:
        """Risk of each row of `vectors` (unit sentence vectors of `embedder`); `texts`, the
        sentences themselves, are needed by a model with cues."""
        if np.asarray(vectors).size == 0:
            return np.zeros(0)
        return 1.0 / (1.0 + np.exp(-(self.columns(vectors, texts) @ self.weights + self.bias)))

    def describe(self) -> dict[str, Any]:
        summary = {k: self.report[k] for k in ("data", "tasks", "positives", "negatives", "C", "oof_auc") if k in self.report}
        return {"path": str(self.path) if self.path else None, "embedder": self.embedder, "features": list(self.features),
                "act_threshold": round(self.act_threshold, 6), "screen_threshold": round(self.screen_threshold, 6),
                "sha256": self.digest(), "training": summary}

    def digest(self) -> str:
        """Content hash of the weights and thresholds (run logs record it)."""
        h = hashlib.sha256(np.ascontiguousarray(self.weights, dtype=np.float64).tobytes())
        h.update(json.dumps([self.bias, self.act_threshold, self.screen_threshold, self.embedder]).encode())
        if self.features != ("embedding",) or self.mean is not None:  # version-1 digests stay as they were
            h.update(json.dumps([list(self.features), CUES_VERSION if self.uses_cues else None]).encode())
            for part in (self.mean, self.scale):
                if part is not None:
                    h.update(np.ascontiguousarray(part, dtype=np.float64).tobytes())
        return h.hexdigest()

    def save(self, path: str | Path) -> Path:
        """Write the model as JSON, atomically (temp file + rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "format": FORMAT, "version": FORMAT_VERSION, "embedder": self.embedder, "dim": self.dim,
            "weights": [float(w) for w in self.weights], "bias": float(self.bias),
            "act_threshold": float(self.act_threshold), "screen_threshold": float(self.screen_threshold),
            "features": list(self.features), "cues_version": CUES_VERSION if self.uses_cues else None,
            "mean": None if self.mean is None else [float(m) for m in self.mean],
            "scale": None if self.scale is None else [float(m) for m in self.scale],
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
        if raw.get("version") not in READABLE_VERSIONS:
            raise DataError(f"risk model format version {raw.get('version')}; this misguard reads "
                            f"{', '.join(map(str, READABLE_VERSIONS))}", source=str(path))
        features = tuple(raw.get("features") or ["embedding"])
        if "cues" in features and raw.get("cues_version") != CUES_VERSION:
            raise ConfigError(f"{path} was fitted with rhetorical cues version {raw.get('cues_version')}, this misguard "
                              f"computes version {CUES_VERSION}; refit it with `misguard defenses fit-risk`")
        if embedder is not None and (raw["embedder"] != embedder.spec or raw["dim"] != embedder.dim):
            raise ConfigError(
                f"{path} was fitted for {raw['embedder']} ({raw['dim']} dims) but the embedder is {embedder.spec} "
                f"({embedder.dim} dims); fit one for it with `misguard defenses fit-risk`"
            )
        column = lambda key: None if raw.get(key) is None else np.asarray(raw[key], dtype=np.float64)  # noqa: E731
        return cls(raw["embedder"], np.asarray(raw["weights"], dtype=np.float64), float(raw["bias"]),
                   float(raw["act_threshold"]), float(raw["screen_threshold"]), raw.get("report", {}), path,
                   features, column("mean"), column("scale"))


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
    c_grid: Sequence[float] | None = None, folds: int = 5, act_fpr: float = 0.05, screen_tpr: float = 0.95,
    report: dict[str, Any] | None = None, texts: Sequence[str] | None = None, cues: bool = False,
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
        texts: the sentences of the rows (needed with `cues`).
        cues: add the rhetorical cue columns (`cue_features`) and standardise every column
            (means and scales from the fitting rows of each fold, then of all rows).
        c_grid: C values tried (default `C_GRID`, `SCALED_C_GRID` with cues).
    """
    LogisticRegression, roc_auc_score, GroupKFold = _sklearn()
    x = np.asarray(vectors, dtype=np.float64)
    y = np.asarray(labels, dtype=int)
    g = np.asarray(groups)
    if x.ndim != 2 or len(x) != len(y) or len(y) != len(g):
        raise DataError(f"vectors {x.shape}, labels {len(y)} and groups {len(g)} do not line up")
    if cues:
        if texts is None or len(texts) != len(x):
            raise DataError("a risk model with cues needs the text of every row")
        x = np.hstack([x, cue_features(texts)])
    c_grid = tuple(c_grid) if c_grid is not None else (SCALED_C_GRID if cues else C_GRID)
    if y.min(initial=1) == y.max(initial=0):
        raise DataError("the risk model needs both misinformation (1) and other (0) sentences")
    folds = min(folds, len(set(g.tolist())))
    if folds < 2:
        raise DataError("the risk model needs sentences from at least two tasks (cross-validation is grouped by task)")

    def model(c: float) -> Any:
        return LogisticRegression(C=c, max_iter=5000, class_weight="balanced")

    def standardiser(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
        if not cues:
            return None, None
        scale = rows.std(axis=0)
        return rows.mean(axis=0), np.where(scale > 0, scale, 1.0)

    def apply(rows: np.ndarray, mean: np.ndarray | None, scale: np.ndarray | None) -> np.ndarray:
        return rows if mean is None or scale is None else (rows - mean) / scale

    oof: dict[float, np.ndarray] = {}
    for c in c_grid:
        scores = np.zeros(len(y))
        for train, test in GroupKFold(n_splits=folds).split(x, y, g):
            mean, scale = standardiser(x[train])
            fitted = model(c).fit(apply(x[train], mean, scale), y[train])
            scores[test] = fitted.predict_proba(apply(x[test], mean, scale))[:, 1]
        oof[c] = scores
    aucs = {c: float(roc_auc_score(y, s)) for c, s in oof.items()}
    best = max(c_grid, key=lambda c: (aucs[c], -c))  # ties: the stronger regularisation
    scores = oof[best]
    act = float(np.quantile(scores[y == 0], 1.0 - act_fpr))
    screen = float(np.quantile(scores[y == 1], 1.0 - screen_tpr))
    mean, scale = standardiser(x)
    final = model(best).fit(apply(x, mean, scale), y)
    info = {
        **(report or {}),
        "positives": int(y.sum()), "negatives": int((y == 0).sum()), "groups": len(set(g.tolist())),
        "folds": folds, "c_grid": list(c_grid), "oof_auc_by_c": {str(c): round(a, 4) for c, a in aucs.items()},
        "C": best, "oof_auc": round(aucs[best], 4),
        "act_fpr": act_fpr, "act_tpr_oof": round(float((scores[y == 1] >= act).mean()), 4),
        "screen_tpr": screen_tpr, "screen_negatives_skipped_oof": round(float((scores[y == 0] < screen).mean()), 4),
    }
    features = FEATURES if cues else ("embedding",)
    info["features"] = list(features)
    return MessageRiskModel(embedder, final.coef_[0].astype(np.float64), float(final.intercept_[0]), act, screen, info,
                            features=features, mean=mean, scale=scale)


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


def fit_risk_model(tasks: Sequence[MisinfoTask], embedder: Embedder, *, cues: bool = True, **fit: Any) -> MessageRiskModel:
    """Fit the risk model on `tasks` for `embedder` (C and thresholds by cross-validation
    grouped by task; with the rhetorical cues unless `cues=False`; `fit` goes to
    `fit_message_risk`)."""
    rows = risk_sentences(tasks)
    texts = [r.text for r in rows]
    vectors = embedder.embed(texts, "query")
    counts = {k: sum(r.kind == k for r in rows) for k in KINDS}
    return fit_message_risk(
        vectors, [r.label for r in rows], [r.task for r in rows], embedder=embedder.spec,
        report={"tasks": sorted({r.task for r in rows}), "sentences_by_kind": counts}, texts=texts, cues=cues, **fit,
    )


def evaluate_risk_model(model: MessageRiskModel, tasks: Sequence[MisinfoTask], embedder: Embedder) -> dict[str, Any]:
    """AUC and threshold rates of `model` on `tasks` (keep them apart from its training tasks)."""
    trained = set(model.report.get("tasks", []))
    overlap = sorted(trained & {t.id for t in tasks})
    rows = risk_sentences(tasks)
    texts = [r.text for r in rows]
    scores = model.probabilities(embedder.embed(texts, "query"), texts)
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
