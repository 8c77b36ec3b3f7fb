"""Misinformation attacks on the multi-agent runtime: prompt injection, tool injection and
RAG poisoning, with a configurable injection point. Registered by name in `ATTACKS`.

    attack = build_attack("inject", AttackSpec(goal, arguments, point="most_central"))
    await system.plan(); attack.apply(system); await system.run()
"""

from ._attacks import EmbeddingRetriever, PromptInjection, RAGPoisoning, ToolInjection, build_attack
from ._base import ATTACKS, Attack, AttackSpec, choose_targets, default_background

__all__ = [
    "ATTACKS",
    "Attack",
    "AttackSpec",
    "EmbeddingRetriever",
    "PromptInjection",
    "RAGPoisoning",
    "ToolInjection",
    "build_attack",
    "choose_targets",
    "default_background",
]
