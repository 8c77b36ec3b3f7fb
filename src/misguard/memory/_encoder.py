"""Contrastive memory encoder (NT-Xent, eq. 2-3) and the posterior fusion of eq. 4.

    h = normalise(W2 relu(W1 x))                         (eq. 3)
    P(poison) = alpha * (1 - C) + (1 - alpha) * sigmoid(w . h)   (eq. 4, alpha = 0.6)

The paper writes `alpha * C`; C is a *credibility*, so its poison evidence is `1 - C`.
Input `x` is the record embedding (field blocks) followed by the evidence features of
`relational_features`. Views for NT-Xent (temperature 0.1):
  positives: an augmented view of the same record (context paraphrase = noise on the
  context block, tag dropout, field masking), or, for credible records, an augmented
  credible neighbour that implies the same action (consistent provenance and outcome);
  hard negatives (added to every denominator): the least credible records of the batch's
  pool and cross-agent neighbours that imply a conflicting action.
The recognition layer `w` is a logistic head on frozen `h`, trained on labelled training
records (the benchmark's training split), class-balanced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import MissingExtraError


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise MissingExtraError("torch", "memory", "the contrastive memory encoder") from exc
    return torch


@dataclass
class EncoderConfig:
    hidden: int = 256
    out: int = 128
    temperature: float = 0.1
    alpha: float = 0.6
    steps: int = 300
    batch: int = 256
    hard_negatives: int = 64
    lr: float = 1e-3
    head_steps: int = 300
    seed: int = 0
    threads: int = 1  # small matrices: more threads only contend on a shared machine
    head_rows: int = 30_000


@dataclass
class ContrastiveDetector:
    """Train with `fit`, score with `predict_proba` (eq. 4) or `head_proba` (encoder only)."""

    config: EncoderConfig = field(default_factory=EncoderConfig)
    blocks: dict[str, slice] | None = None  # embedding field blocks, for exact augmentations
    history: list[float] = field(default_factory=list)
    mu: np.ndarray | None = None
    sd: np.ndarray | None = None

    def describe(self) -> dict[str, Any]:
        return {"kind": "contrastive-ntxent", **self.config.__dict__}

    def _build(self, d_in: int) -> None:
        torch = _torch()
        torch.manual_seed(self.config.seed)
        nn = torch.nn
        self.net = nn.Sequential(nn.Linear(d_in, self.config.hidden), nn.ReLU(), nn.Linear(self.config.hidden, self.config.out))
        self.head = nn.Linear(self.config.out, 1)

    def _encode(self, x: Any) -> Any:
        torch = _torch()
        return torch.nn.functional.normalize(self.net(x), dim=1)

    def _augment(self, x: Any, gen: Any, n_emb: int) -> Any:
        torch = _torch()
        x = x.clone()
        b = x.shape[0]
        if self.blocks:
            for name, sl in self.blocks.items():
                drop = torch.rand(b, generator=gen) < (0.3 if name == "tags" else 0.1)
                x[drop, sl] = 0.0
            ctx = self.blocks.get("context")
            if ctx is not None:  # paraphrase: perturb the context block
                x[:, ctx] += 0.05 * torch.randn(x[:, ctx].shape, generator=gen)
        else:
            mask = torch.rand(x[:, :n_emb].shape, generator=gen) < 0.1
            x[:, :n_emb] = x[:, :n_emb].masked_fill(mask, 0.0)
        x[:, n_emb:] += 0.03 * torch.randn(x[:, n_emb:].shape, generator=gen)
        return x

    def _standardise(self, feats: np.ndarray) -> np.ndarray:
        return (feats - self.mu) / self.sd

    def _inputs(self, emb: np.ndarray, feats: np.ndarray) -> Any:
        torch = _torch()
        return torch.from_numpy(np.concatenate([emb, self._standardise(feats)], axis=1).astype(np.float32))

    def fit(
        self,
        emb: np.ndarray,
        feats: np.ndarray,
        labels: np.ndarray,
        credibility: np.ndarray,
        neighbors: np.ndarray,
        agrees: np.ndarray,
        index: np.ndarray | None = None,
    ) -> ContrastiveDetector:
        """Contrastive pre-training, then the logistic head on `labels`.

        `index` restricts training to those rows (e.g. the training split); neighbours may
        point anywhere in the arrays. Rows with a label other than 0/1 are not used by the head.
        """
        torch = _torch()
        cfg = self.config
        threads = torch.get_num_threads()
        torch.set_num_threads(cfg.threads)
        try:
            return self._fit(torch, emb, feats, labels, credibility, neighbors, agrees, index)
        finally:
            torch.set_num_threads(threads)

    def _fit(self, torch: Any, emb: np.ndarray, feats: np.ndarray, labels: np.ndarray, credibility: np.ndarray,
             neighbors: np.ndarray, agrees: np.ndarray, index: np.ndarray | None) -> ContrastiveDetector:
        cfg = self.config
        index = np.arange(len(emb)) if index is None else np.asarray(index)
        self.mu, self.sd = feats[index].mean(axis=0), feats[index].std(axis=0) + 1e-6
        n, n_emb = emb.shape
        self._build(n_emb + feats.shape[1])
        x_all = self._inputs(emb, feats)
        gen = torch.Generator().manual_seed(cfg.seed)
        rng = np.random.default_rng(cfg.seed)
        credible = credibility >= np.quantile(credibility[index], 0.5)
        low = index[credibility[index] <= np.quantile(credibility[index], 0.1)]
        opt = torch.optim.Adam(self.net.parameters(), lr=cfg.lr)
        tau = cfg.temperature
        for _ in range(cfg.steps):
            idx = rng.choice(index, size=min(cfg.batch, len(index)), replace=False)
            partner = idx.copy()
            # Consistent-provenance positives: a credible neighbour implying the same action.
            nb = neighbors[idx, 0]
            use = credible[idx] & (nb >= 0) & agrees[idx, 0] & (rng.random(len(idx)) < 0.5)
            partner[use] = nb[use]
            z1 = self._encode(self._augment(x_all[idx], gen, n_emb))
            z2 = self._encode(self._augment(x_all[partner], gen, n_emb))
            # Hard negatives: low-credibility records and conflicting cross-agent neighbours.
            conf_nb = neighbors[idx][~agrees[idx] & (neighbors[idx] >= 0)]
            pool = np.concatenate([low, conf_nb]) if len(low) + len(conf_nb) else np.arange(n)
            hard = rng.choice(pool, size=min(cfg.hard_negatives, len(pool)), replace=False)
            zh = self._encode(x_all[hard])
            z = torch.cat([z1, z2], 0)
            sim = z @ torch.cat([z, zh], 0).T / tau
            m = len(idx)
            sim[torch.arange(2 * m), torch.arange(2 * m)] = float("-inf")
            target = torch.cat([torch.arange(m, 2 * m), torch.arange(0, m)])
            loss = torch.nn.functional.cross_entropy(sim, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            self.history.append(float(loss.detach()))
        # Recognition layer w on frozen h.
        use = index[(labels[index] == 0) | (labels[index] == 1)]
        if len(use) > cfg.head_rows:
            use = np.sort(rng.choice(use, size=cfg.head_rows, replace=False))
        with torch.no_grad():
            h = self._encode(x_all[use])
        y = torch.from_numpy(labels[use].astype(np.float32))
        pos = float(y.sum())
        pos_weight = torch.tensor((len(y) - pos) / max(pos, 1.0))
        hopt = torch.optim.Adam(self.head.parameters(), lr=0.05)
        for _ in range(cfg.head_steps):
            logit = self.head(h).squeeze(1)
            hloss = torch.nn.functional.binary_cross_entropy_with_logits(logit, y, pos_weight=pos_weight)
            hopt.zero_grad()
            hloss.backward()
            hopt.step()
        return self

    def head_proba(self, emb: np.ndarray, feats: np.ndarray) -> np.ndarray:
        """sigmoid(w . h): the encoder's own poison probability."""
        torch = _torch()
        if self.mu is None:
            raise RuntimeError("ContrastiveDetector.fit must run before scoring")
        out = np.empty(len(emb), dtype=np.float32)
        threads = torch.get_num_threads()
        torch.set_num_threads(self.config.threads)
        with torch.no_grad():
            for start in range(0, len(emb), 65536):
                x = self._inputs(emb[start:start + 65536], feats[start:start + 65536])
                out[start:start + 65536] = torch.sigmoid(self.head(self._encode(x)).squeeze(1)).numpy()
        torch.set_num_threads(threads)
        return out

    def predict_proba(self, emb: np.ndarray, feats: np.ndarray, credibility: np.ndarray) -> np.ndarray:
        """Eq. 4: alpha * (1 - C) + (1 - alpha) * sigmoid(w . h)."""
        a = self.config.alpha
        return (a * (1.0 - credibility) + (1.0 - a) * self.head_proba(emb, feats)).astype(np.float32)
