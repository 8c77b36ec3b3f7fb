"""ARGUS (ICLR 2026): goal-aware localization of the channels most likely to carry
misinformation, and correction on them.

    argus        the recommended configuration: the shipped message risk model scores every
                 sentence on every channel, risky sentences are removed, a sender caught
                 once is quarantined; no LLM
    argus-paper  the paper's: an LLM rectification agent on the localized channels

The pieces: `Localizer` (where to look), `MessageRiskModel` (evidence without an LLM,
fitted with `fit_risk_model`), `Redactor`, `Quarantine`, `Rectifier` (the paper's agent),
`GoalSet` (inferred goals), and `calibrate_thresholds` for another embedder.
"""

from ._calibrate import calibrate_thresholds, youden_threshold
from ._defense import (
    PAPER_PRESET,
    RETIRED_PARAMS,
    ArgusDefense,
    build_argus,
    load_risk_model,
    shipped_risk_model_path,
    upgrade_params,
)
from ._goals import GoalSet
from ._localize import (
    Edge,
    Localization,
    LocalizationWeights,
    Localizer,
    SenderRiskHistory,
    Traffic,
    edge_betweenness,
    localization_quality,
)
from ._quarantine import Quarantine
from ._rectifier import DirectRectification, InferredGoal, Rectification, Rectifier, SentenceCheck
from ._redact import Redactor
from ._risk import MessageRiskModel, evaluate_risk_model, fit_message_risk, fit_risk_model, risk_sentences

__all__ = [
    "PAPER_PRESET",
    "RETIRED_PARAMS",
    "ArgusDefense",
    "DirectRectification",
    "Edge",
    "GoalSet",
    "InferredGoal",
    "Localization",
    "LocalizationWeights",
    "Localizer",
    "MessageRiskModel",
    "Quarantine",
    "Rectification",
    "Rectifier",
    "Redactor",
    "SenderRiskHistory",
    "SentenceCheck",
    "Traffic",
    "build_argus",
    "calibrate_thresholds",
    "edge_betweenness",
    "evaluate_risk_model",
    "fit_message_risk",
    "fit_risk_model",
    "load_risk_model",
    "localization_quality",
    "risk_sentences",
    "shipped_risk_model_path",
    "upgrade_params",
    "youden_threshold",
]
