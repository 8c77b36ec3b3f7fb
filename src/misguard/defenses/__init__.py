"""Defenses of the multi-agent runtime, registered by name in `misguard.mas.DEFENSES`:

    argus        ARGUS, the recommended configuration (no LLM; see `misguard.defenses.argus`)
    argus-paper  ARGUS as in the paper: an LLM rectification agent on the localized channels
    self-check   every receiver verifies incoming messages with its own model
    g-safeguard  a graph attention network flags attacked agents; their messages are dropped
    claim-guard  known false claims (a fact-check store) flagged, corrected or blocked

    interceptors = build_defense("argus", DefenseContext(settings, {"worker": llm}, embedder))
    system = MultiAgentSystem(task, RoleLLMs(worker=llm), interceptors=interceptors)

Parameters come from `settings.defense.<section>` with overrides (`--defense-param`); a
preset (`argus-paper`) changes the section's defaults, and what the user set still wins.
`misguard defenses show NAME` lists every parameter.
"""

from ..mas import DEFENSES
from ._claimguard import ClaimGuardInterceptor, build_claim_guard, fact_check_note
from ._gsafeguard import GSafeguard, build_gsafeguard, samples_from_log, train_gsafeguard
from ._selfcheck import SelfCheck, build_self_check
from ._text import split_sentences
from .argus import PAPER_PRESET, ArgusDefense, build_argus, fit_risk_model

DEFENSES.register(
    "argus", settings_key="argus", needs_llm=False,
    description="ARGUS, recommended: a risk model removes misinformation on every channel and quarantines its sender (no LLM)",
)(build_argus)
DEFENSES.register(
    "argus-paper", settings_key="argus", preset=PAPER_PRESET, needs_llm=True,
    description="ARGUS as in the paper: an LLM rectifies the channels most likely to carry misinformation",
)(build_argus)
DEFENSES.register(
    "self-check", settings_key="self_check", needs_llm=True,
    description="Self-Check: each receiver verifies incoming messages with its own model",
)(build_self_check)
DEFENSES.register(
    "g-safeguard", settings_key="g_safeguard", extra="torch", needs_llm=False,
    description="G-Safeguard: a graph attention network flags attacked agents; their messages are dropped",
)(build_gsafeguard)
DEFENSES.register(
    "claim-guard", settings_key="claim_guard", extra="claims", needs_llm=False,
    description="Claim guard: messages repeating a known false claim (needs a claim store) are flagged, corrected or blocked",
)(build_claim_guard)

__all__ = [
    "ArgusDefense",
    "ClaimGuardInterceptor",
    "GSafeguard",
    "SelfCheck",
    "build_argus",
    "build_claim_guard",
    "build_gsafeguard",
    "build_self_check",
    "fact_check_note",
    "fit_risk_model",
    "samples_from_log",
    "split_sentences",
    "train_gsafeguard",
]
