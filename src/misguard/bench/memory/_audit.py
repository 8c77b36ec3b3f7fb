"""Label-leak audit: how well does any single record field separate poison from benign?

For every metadata field (claimed confidence, observed outcome, outcome observed at all,
reward, time, channel, agent, each tag) the AUC of that field alone on injected vs benign
records, folded to max(AUC, 1 - AUC). Numeric fields are used as scores; categorical ones
per value (indicator of one channel / agent / tag). The record's content (state, context,
action) is not audited: that is where the attacks live by definition (e.g. Type I's
injected instruction).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...memory import auc
from ...types import MemoryRecord


def _folded(score: np.ndarray, y: np.ndarray) -> float:
    a = auc(score.astype(np.float64), y)
    return float(max(a, 1.0 - a)) if np.isfinite(a) else 0.5


def field_separability(records: Sequence[MemoryRecord], labels: np.ndarray) -> dict[str, float]:
    """{field: folded AUC} over records labelled 0 or 1 (other labels are ignored)."""
    keep = np.flatnonzero((labels == 0) | (labels == 1))
    recs = [records[i] for i in keep]
    y = labels[keep].astype(int)
    if len(recs) == 0 or y.min() == y.max():
        return {}
    out = {
        "confidence": _folded(np.array([0.5 if r.confidence is None else r.confidence for r in recs]), y),
        "success": _folded(np.array([0.5 if r.success is None else r.success for r in recs]), y),
        "success_observed": _folded(np.array([r.success is not None for r in recs], dtype=float), y),
        "reward": _folded(np.array([0.0 if r.reward is None else r.reward for r in recs]), y),
        "time": _folded(np.array([r.provenance.time for r in recs]), y),
    }
    for name, values in (("channel", [r.provenance.channel for r in recs]), ("agent", [r.provenance.agent for r in recs])):
        arr = np.array(values)
        out[name] = max(_folded((arr == v).astype(float), y) for v in set(values))
    tags = {t for r in recs for t in r.tags}
    out["tag"] = max((_folded(np.array([t in r.tags for r in recs], dtype=float), y) for t in tags), default=0.5)
    return out
