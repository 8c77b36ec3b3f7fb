"""Calibrate ARGUS's cosine thresholds for the configured embedder on MisInfoTask tasks
that the reported sweep does not use (e5 cosines are compressed: unrelated sentences sit
near 0.75, so the paper's OpenAI-embedder values 0.4 / 0.7 would count everything).

Within one run every message is about the same task, so the pairs are on-topic:
    relevance     positives: each misinformation argument vs its task's goal;
                  negatives: the same task's ground truths and reference-solution
                  sentences vs that goal. Threshold: best Youden J (TPR - FPR).
    goal de-dup   positives (same intent): the goal vs each of its arguments restated as
                  an intent ("The sender wants the team to believe that ...");
                  negatives: the goal vs other tasks' goals. Threshold: best Youden J.
    pre-screen    a message is skipped when its best sentence is below the threshold:
                  the 5th percentile of the positives' cosines (keeps ~95% of them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._text import split_sentences
from ...embed import Embedder
from ...mas import MisinfoTask

INTENT = "The sender wants the team to believe that {}"


def youden_threshold(positives: Sequence[float], negatives: Sequence[float]) -> dict[str, float]:
    """The cut maximising TPR - FPR (midpoint between neighbouring scores), with its rates
    and the AUC."""
    pos, neg = np.asarray(positives, float), np.asarray(negatives, float)
    cuts = np.unique(np.concatenate([pos, neg]))
    mids = (cuts[:-1] + cuts[1:]) / 2 if cuts.size > 1 else cuts
    best = max(mids, key=lambda c: ((pos > c).mean() - (neg > c).mean(), -c))
    auc = float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())
    return {"threshold": float(best), "tpr": float((pos > best).mean()), "fpr": float((neg > best).mean()), "auc": auc,
            "positives": int(pos.size), "negatives": int(neg.size),
            "pos_median": float(np.median(pos)), "neg_median": float(np.median(neg))}


def calibrate_thresholds(tasks: Sequence[MisinfoTask], embedder: Embedder) -> dict[str, Any]:
    rel_pos, rel_neg, dup_pos, dup_neg = [], [], [], []
    goals = embedder.embed([t.misinfo_goal for t in tasks], "query")
    for i, task in enumerate(tasks):
        goal = goals[i]
        args = [s for a in task.misinfo_argument for s in split_sentences(a)]
        truths = [s for t in (*task.ground_truth, task.reference_solution) for s in split_sentences(t)]
        if args:
            rel_pos += (embedder.embed(args, "query") @ goal).tolist()
        if truths:
            rel_neg += (embedder.embed(truths, "query") @ goal).tolist()
        intents = [INTENT.format(a.rstrip(".")) for a in task.misinfo_argument]
        dup_pos += (embedder.embed(intents, "query") @ goal).tolist()
        dup_neg += [float(goals[j] @ goal) for j in range(len(tasks)) if j != i]
    relevance = youden_threshold(rel_pos, rel_neg)
    dedup = youden_threshold(dup_pos, dup_neg)
    prescreen = float(np.quantile(np.asarray(rel_pos), 0.05))
    return {
        "embedder": embedder.describe(),
        "tasks": [t.id for t in tasks],
        "relevance_threshold": relevance,
        "goal_dedup_threshold": dedup,
        "prescreen_threshold": {"threshold": prescreen, "kept_positives": 0.95,
                                "negatives_skipped": float((np.asarray(rel_neg) < prescreen).mean())},
    }
