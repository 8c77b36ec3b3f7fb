"""Memory poisoning detectors behind one interface, registered by name (`DETECTORS`).

Every detector sees the same `DetectorInputs`: the record embeddings, the record metadata
(claimed confidence, observed outcome, reward, channel) and the evidence graph that
credibility (eq. 1) builds. A new detector registered here appears in `misguard bench
memory` (its `--methods`) and in `MemoryGuard` without editing either.

Protocol (the same for every detector): `fit` on the training rows (labels are used only
by detectors registered with `supervised=True`; the rest use the validation labels only to
pick one configuration of their grid by best F1), then the decision threshold is chosen on
the validation rows by best F1 (`MemoryGuard.fit`), then both are frozen for the test rows.
Scores are "higher = more suspicious".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..registry import Registry
from ._baselines import _sklearn, best_f1_threshold, residual_scores
from ._credibility import CredibilityResult, relational_features
from ._encoder import ContrastiveDetector, EncoderConfig, _torch

#: Channels one-hot encoded in the metadata; anything else counts as "other".
CHANNELS = ("demo", "direct", "broadcast", "tool-output")


@dataclass
class DetectorInputs:
    """What every detector may look at (rows = records)."""

    emb: np.ndarray
    meta: np.ndarray  # see `metadata_matrix`
    cred: CredibilityResult
    relational: np.ndarray  # `relational_features` of the evidence graph
    actions: np.ndarray

    @property
    def features(self) -> np.ndarray:
        """Embedding and metadata side by side: the baselines' input."""
        return np.concatenate([self.emb, self.meta], axis=1)

    def rows(self, index: np.ndarray) -> DetectorInputs:
        """A row subset for detectors that do not need the graph (the graph keeps global indices)."""
        return DetectorInputs(self.emb[index], self.meta[index], self.cred, self.relational[index], self.actions[index])


def metadata_matrix(confidence: np.ndarray, success: np.ndarray, reward: np.ndarray, channels: Sequence[str]) -> np.ndarray:
    """Per-record metadata: confidence, outcome (unknown = 0.5), outcome observed?, reward, channel one-hot."""
    conf = np.nan_to_num(confidence.astype(np.float32), nan=0.5)
    seen = ~np.isnan(success)
    succ = np.where(seen, success, 0.5).astype(np.float32)
    rew = np.nan_to_num(reward.astype(np.float32), nan=0.0)
    onehot = np.array([[c == name for name in CHANNELS] + [c not in CHANNELS] for c in channels], dtype=np.float32).reshape(len(channels), len(CHANNELS) + 1)
    return np.concatenate([np.stack([conf, succ, seen.astype(np.float32), rew], axis=1), onehot], axis=1)


class MemoryDetector(Protocol):
    """What `MemoryGuard` and the benchmark call."""

    name: str
    supervised: bool

    def fit(self, data: DetectorInputs, labels: np.ndarray, train: np.ndarray, val: np.ndarray) -> MemoryDetector: ...

    def score(self, data: DetectorInputs) -> np.ndarray: ...

    def describe(self) -> dict[str, Any]: ...


DETECTORS: Registry[MemoryDetector] = Registry("memory poisoning detector")


def _labelled(index: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return index[(labels[index] == 0) | (labels[index] == 1)]


@dataclass
class CredibilityDetector:
    """1 - C (eq. 1) alone: no training, no labels."""

    name: str = "credibility"
    supervised: bool = False

    def fit(self, data: DetectorInputs, labels: np.ndarray, train: np.ndarray, val: np.ndarray) -> CredibilityDetector:
        return self

    def score(self, data: DetectorInputs) -> np.ndarray:
        return (1.0 - data.cred.credibility).astype(np.float32)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


@dataclass
class ContrastiveGuardDetector:
    """The paper's detector as specified: eq. 4 fuses 1 - C with the NT-Xent encoder's head,
    a logistic layer trained on the *labelled* training records (so: supervised)."""

    config: EncoderConfig = field(default_factory=EncoderConfig)
    blocks: dict[str, slice] | None = None
    name: str = "proposed"
    supervised: bool = True
    model: ContrastiveDetector | None = None

    def fit(self, data: DetectorInputs, labels: np.ndarray, train: np.ndarray, val: np.ndarray) -> ContrastiveGuardDetector:
        self.model = ContrastiveDetector(self.config, blocks=self.blocks)
        g = data.cred.graph
        self.model.fit(data.emb, data.relational, labels, data.cred.credibility, g.neighbors, g.agrees, index=train)
        return self

    def score(self, data: DetectorInputs) -> np.ndarray:
        if self.model is None:
            raise RuntimeError("fit the detector before scoring")
        return self.model.predict_proba(data.emb, data.relational, data.cred.credibility)

    def head(self, data: DetectorInputs) -> np.ndarray:
        """The encoder's own (supervised) probability, without credibility."""
        assert self.model is not None
        return self.model.head_proba(data.emb, data.relational)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, **(self.model.describe() if self.model else self.config.__dict__)}


@dataclass
class GridDetector:
    """A scikit-learn detector on `DetectorInputs.features` (or `.meta`), one grid point chosen on validation by best F1."""

    name: str
    grid: list[dict[str, Any]]
    seed: int = 0
    supervised: bool = False
    inputs: str = "features"  # or "meta"
    max_fit: int = 6000
    chosen: dict[str, Any] = field(default_factory=dict)
    val_f1: float = 0.0
    _model: Any = None

    def _x(self, data: DetectorInputs) -> np.ndarray:
        return data.meta if self.inputs == "meta" else data.features

    def _make(self, params: dict[str, Any], d: int, n: int) -> Any:
        sk = _sklearn()
        import sklearn.linear_model
        import sklearn.neighbors

        if self.name == "isolation_forest":
            return sk.ensemble.IsolationForest(random_state=self.seed, **{**params, "max_samples": min(params["max_samples"], n)})
        if self.name == "ocsvm":
            return sk.svm.OneClassSVM(kernel="rbf", nu=params["nu"], gamma=params["gamma_scale"] / d)
        if self.name == "lof":
            # Small stores (the natural-language scenario) have fewer records than the grid's k.
            return sklearn.neighbors.LocalOutlierFactor(novelty=True, **{**params, "n_neighbors": min(params["n_neighbors"], n - 1)})
        if self.name == "metadata_lr":
            return sklearn.linear_model.LogisticRegression(class_weight="balanced", max_iter=500, **params)
        raise ValueError(self.name)

    def _score(self, model: Any, x: np.ndarray) -> np.ndarray:
        if self.supervised:
            return model.decision_function(x)
        return -model.score_samples(x)

    def fit(self, data: DetectorInputs, labels: np.ndarray, train: np.ndarray, val: np.ndarray) -> GridDetector:
        rng = np.random.default_rng(self.seed)
        x = self._x(data)
        rows = _labelled(train, labels) if self.supervised else train
        fit_rows = rng.choice(rows, size=min(self.max_fit, len(rows)), replace=False)
        val = _labelled(val, labels)
        best: tuple[float, Any, Any] = (-1.0, None, None)
        for params in self.grid:
            model = self._make(params, x.shape[1], len(fit_rows))
            model.fit(x[fit_rows], labels[fit_rows]) if self.supervised else model.fit(x[fit_rows])
            _, f1 = best_f1_threshold(self._score(model, x[val]), labels[val])
            if f1 > best[0]:
                best = (f1, params, model)
        self.val_f1, self.chosen, self._model = best
        return self

    def score(self, data: DetectorInputs) -> np.ndarray:
        return self._score(self._model, self._x(data)).astype(np.float32)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "inputs": self.inputs, "grid": self.grid, "chosen": self.chosen, "val_f1": self.val_f1}


@dataclass
class ResidualDetector:
    """Statistical residual: 1 - cosine between a record's features and the mean of its first
    k evidence neighbours (the same causal, same-situation neighbours credibility uses)."""

    grid: Sequence[int] = (4, 8, 16)
    name: str = "residual"
    supervised: bool = False
    k: int = 16

    def _scores(self, data: DetectorInputs, k: int) -> np.ndarray:
        x = data.features
        x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        return residual_scores(x, data.cred.graph.neighbors[:, :k])

    def fit(self, data: DetectorInputs, labels: np.ndarray, train: np.ndarray, val: np.ndarray) -> ResidualDetector:
        val = _labelled(val, labels)
        f1s = {k: best_f1_threshold(self._scores(data, k)[val], labels[val])[1] for k in self.grid}
        self.k = max(f1s, key=f1s.__getitem__)
        return self

    def score(self, data: DetectorInputs) -> np.ndarray:
        return self._scores(data, self.k)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "grid_k": list(self.grid), "chosen_k": self.k}


@dataclass
class GraphAttentionDetector:
    """A one-layer graph attention network (Velickovic et al. 2018, the paper's GAT baseline)
    over the evidence graph: each record attends over its evidence neighbours' projected
    features plus an edge bit (same action?), then a logistic output. Trained on the
    labelled training records (supervised); hidden size chosen on validation by best F1."""

    seed: int = 0
    grid: Sequence[int] = (32, 64)
    steps: int = 300
    batch: int = 1024
    name: str = "gat"
    supervised: bool = True
    hidden: int = 0
    _net: Any = None
    _mu: np.ndarray | None = None
    _sd: np.ndarray | None = None

    def _build(self, torch: Any, d_in: int, hidden: int) -> Any:
        nn = torch.nn

        class GAT(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.proj = nn.Linear(d_in, hidden)
                self.edge = nn.Linear(1, hidden, bias=False)
                self.att = nn.Linear(2 * hidden, 1)
                self.out = nn.Linear(2 * hidden, 1)

            def forward(self, x: Any, nbr: Any, agrees: Any) -> Any:
                h_self = self.proj(x[:, 0])  # (b, hidden)
                h_nb = self.proj(x[:, 1:]) + self.edge(agrees.unsqueeze(-1))  # (b, k, hidden)
                e = torch.nn.functional.leaky_relu(self.att(torch.cat([h_self.unsqueeze(1).expand_as(h_nb), h_nb], -1)).squeeze(-1), 0.2)
                e = e.masked_fill(nbr < 0, float("-inf"))
                a = torch.nan_to_num(torch.softmax(e, dim=1), nan=0.0)
                msg = (a.unsqueeze(-1) * h_nb).sum(1)
                return self.out(torch.nn.functional.elu(torch.cat([h_self, msg], -1))).squeeze(-1)

        return GAT()

    def _batch(self, torch: Any, x: np.ndarray, data: DetectorInputs, rows: np.ndarray) -> tuple[Any, Any, Any]:
        nbr = data.cred.graph.neighbors[rows]
        idx = np.concatenate([rows[:, None], np.where(nbr >= 0, nbr, rows[:, None])], axis=1)
        return (torch.from_numpy(x[idx]), torch.from_numpy(nbr), torch.from_numpy(data.cred.graph.agrees[rows].astype(np.float32)))

    def _x(self, data: DetectorInputs) -> np.ndarray:
        """Features standardised with the statistics of the data the network was fitted on."""
        x = data.features
        if self._mu is None:
            self._mu, self._sd = x.mean(0), x.std(0) + 1e-6
        return ((x - self._mu) / self._sd).astype(np.float32)

    def fit(self, data: DetectorInputs, labels: np.ndarray, train: np.ndarray, val: np.ndarray) -> GraphAttentionDetector:
        torch = _torch()
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            self._mu = None
            x = self._x(data)
            rows = _labelled(train, labels)
            val = _labelled(val, labels)
            y_all = torch.from_numpy(labels.astype(np.float32))
            pos = float((labels[rows] == 1).sum())
            pos_weight = torch.tensor((len(rows) - pos) / max(pos, 1.0))
            best = (-1.0, 0, None)
            for hidden in self.grid:
                torch.manual_seed(self.seed)
                rng = np.random.default_rng(self.seed)
                net = self._build(torch, x.shape[1], hidden)
                opt = torch.optim.Adam(net.parameters(), lr=3e-3, weight_decay=1e-4)
                for _ in range(self.steps):
                    b = rng.choice(rows, size=min(self.batch, len(rows)), replace=False)
                    logit = net(*self._batch(torch, x, data, b))
                    loss = torch.nn.functional.binary_cross_entropy_with_logits(logit, y_all[b], pos_weight=pos_weight)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                self._net = net
                _, f1 = best_f1_threshold(self._predict(torch, x, data, val), labels[val])
                if f1 > best[0]:
                    best = (f1, hidden, net)
            _, self.hidden, self._net = best
        finally:
            torch.set_num_threads(threads)
        return self

    def _predict(self, torch: Any, x: np.ndarray, data: DetectorInputs, rows: np.ndarray) -> np.ndarray:
        out = np.empty(len(rows), dtype=np.float32)
        with torch.no_grad():
            for s in range(0, len(rows), 8192):
                out[s:s + 8192] = self._net(*self._batch(torch, x, data, rows[s:s + 8192])).numpy()
        return out

    def score(self, data: DetectorInputs) -> np.ndarray:
        torch = _torch()
        return self._predict(torch, self._x(data), data, np.arange(len(data.emb)))

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "grid_hidden": list(self.grid), "chosen_hidden": self.hidden, "steps": self.steps}


@DETECTORS.register("proposed", supervised=True, label="This method: credibility + NT-Xent + supervised head (eq. 4)")
def _proposed(seed: int = 0, *, encoder_steps: int = 300, blocks: dict[str, slice] | None = None, **_: Any) -> MemoryDetector:
    return ContrastiveGuardDetector(EncoderConfig(steps=encoder_steps, seed=seed), blocks=blocks)


@DETECTORS.register("credibility", supervised=False, label="This method, unsupervised part: 1 - credibility (eq. 1)")
def _credibility(seed: int = 0, **_: Any) -> MemoryDetector:
    return CredibilityDetector()


@DETECTORS.register("gat", supervised=True, label="Graph attention network on the evidence graph")
def _gat(seed: int = 0, *, gat_steps: int = 300, **_: Any) -> MemoryDetector:
    return GraphAttentionDetector(seed=seed, steps=gat_steps)


@DETECTORS.register("metadata_lr", supervised=True, label="Metadata only (logistic regression)")
def _metadata(seed: int = 0, **_: Any) -> MemoryDetector:
    return GridDetector("metadata_lr", [{"C": c} for c in (0.01, 0.1, 1.0, 10.0)], seed, supervised=True, inputs="meta")


@DETECTORS.register("isolation_forest", supervised=False, label="Isolation Forest (embedding + metadata)")
def _iforest(seed: int = 0, **_: Any) -> MemoryDetector:
    grid = [{"n_estimators": n, "max_samples": s, "max_features": f} for n in (100, 300) for s in (256, 2048) for f in (0.5, 1.0)]
    return GridDetector("isolation_forest", grid, seed)


@DETECTORS.register("ocsvm", supervised=False, label="One-Class SVM, RBF (embedding + metadata)")
def _ocsvm(seed: int = 0, **_: Any) -> MemoryDetector:
    grid = [{"nu": nu, "gamma_scale": g} for nu in (0.01, 0.05, 0.1) for g in (0.1, 1.0, 10.0)]
    return GridDetector("ocsvm", grid, seed, max_fit=3000)


@DETECTORS.register("lof", supervised=False, label="Local Outlier Factor (embedding + metadata)")
def _lof(seed: int = 0, **_: Any) -> MemoryDetector:
    return GridDetector("lof", [{"n_neighbors": k} for k in (10, 30, 90)], seed)


@DETECTORS.register("residual", supervised=False, label="Statistical residual (evidence kNN)")
def _residual(seed: int = 0, **_: Any) -> MemoryDetector:
    return ResidualDetector()


def build_inputs(cred: CredibilityResult, emb: np.ndarray, meta: np.ndarray, actions: np.ndarray,
                 confidence: np.ndarray, success: np.ndarray) -> DetectorInputs:
    return DetectorInputs(emb, meta, cred, relational_features(cred, confidence, success), actions)
