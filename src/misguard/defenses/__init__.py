"""Defenses of the multi-agent runtime, registered by name in `misguard.mas.DEFENSES`:

    argus        goal-aware localization + persuasive rectification (ARGUS, ICLR 2026)
    self-check   every receiver verifies incoming messages with its own model
    g-safeguard  a graph attention network flags attacked agents; their messages are dropped
    claim-guard  known false claims (a fact-check store) flagged, corrected or blocked

    interceptors = build_defense("argus", DefenseContext(settings, {"worker": llm, "rectifier": small}, embedder))
    system = MultiAgentSystem(task, RoleLLMs(worker=llm), interceptors=interceptors)

Parameters come from `settings.defense.<section>` with overrides (`--defense-param`).
"""

from ..mas import DEFENSES
from ._argus import ArgusDefense, GoalSet, InferredGoal, Rectification, build_argus
from ._claimguard import ClaimGuardInterceptor, build_claim_guard, fact_check_note
from ._gsafeguard import GSafeguard, samples_from_log, train_gsafeguard
from ._gsafeguard import build_gsafeguard as _build_gsafeguard
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
from ._selfcheck import SelfCheck, build_self_check
from ._text import split_sentences

DEFENSES.register(
    "argus", settings_key="argus",
    description="ARGUS: monitor the channels most likely to carry misinformation, rewrite it persuasively, infer goals",
)(build_argus)
DEFENSES.register(
    "self-check", settings_key="self_check",
    description="Self-Check: each receiver verifies incoming messages with its own model",
)(build_self_check)
DEFENSES.register(
    "g-safeguard", settings_key="g_safeguard", extra="torch",
    description="G-Safeguard: a graph attention network flags attacked agents; their messages are dropped",
)(_build_gsafeguard)

DEFENSES.register(
    "claim-guard", settings_key="claim_guard", extra="claims",
    description="Claim guard: messages repeating a known false claim (needs a claim store) are flagged, corrected or blocked",
)(build_claim_guard)

__all__ = [
    "ArgusDefense",
    "ClaimGuardInterceptor",
    "Edge",
    "GSafeguard",
    "GoalSet",
    "InferredGoal",
    "Localization",
    "LocalizationWeights",
    "Localizer",
    "SenderRiskHistory",
    "Rectification",
    "SelfCheck",
    "Traffic",
    "build_argus",
    "build_claim_guard",
    "build_self_check",
    "edge_betweenness",
    "fact_check_note",
    "localization_quality",
    "samples_from_log",
    "split_sentences",
    "train_gsafeguard",
]
