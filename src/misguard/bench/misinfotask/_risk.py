"""Train and evaluate ARGUS's message risk model (`misguard bench argus-risk`).

Sentences come from MisInfoTask records, never from runs:
    misinformation (1)  the goal and the sentences of every misinformation argument;
    other (0)           the sentences of the ground truths, of the reference solution and
                        of the task statement (what honest agents talk about).
The model is fitted on the training tasks (C and thresholds by cross-validation grouped
by task, `fit_message_risk`) and evaluated on other tasks: overall AUC, AUC against each
kind of negative, and the rates at its two thresholds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...defenses import split_sentences
from ...defenses._risk import MessageRiskModel, fit_message_risk
from ...embed import Embedder
from ._calibrate import youden_threshold
from ._data import MisinfoTask

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


def train_message_risk(tasks: Sequence[MisinfoTask], embedder: Embedder, **fit: Any) -> MessageRiskModel:
    """Fit the risk model on `tasks` (grouped by task) for `embedder`."""
    rows = risk_sentences(tasks)
    vectors = embedder.embed([r.text for r in rows], "query")
    counts = {k: sum(r.kind == k for r in rows) for k in KINDS}
    return fit_message_risk(
        vectors, [r.label for r in rows], [r.task for r in rows], embedder=embedder.spec,
        report={"tasks": sorted({r.task for r in rows}), "sentences_by_kind": counts}, **fit,
    )


def evaluate_message_risk(model: MessageRiskModel, tasks: Sequence[MisinfoTask], embedder: Embedder) -> dict[str, Any]:
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
