"""The three attacks of the ARGUS setting."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..embed import Embedder
from ..errors import ConfigError
from ..mas import MultiAgentSystem
from ._base import ATTACKS, Attack, AttackSpec, _prompts, bullet, default_background


@ATTACKS.register("inject", paper_name="Prompt Injection")
class PromptInjection(Attack):
    """The hijacked worker gets the goal and the arguments in every think step, with an
    order to persuade the others."""

    name = "inject"

    def _apply(self, system: MultiAgentSystem, targets: list[str]) -> dict[str, Any]:
        block = _prompts().render("prompt_injection", goal=self.spec.goal, arguments=bullet(self.spec.arguments))
        for agent_id in targets:
            system.agents[agent_id].injection = block
        return {}


@ATTACKS.register("tool", paper_name="Tool Injection")
class ToolInjection(Attack):
    """The hijacked worker's simulated tool outputs support the arguments, as references."""

    name = "tool"

    def _apply(self, system: MultiAgentSystem, targets: list[str]) -> dict[str, Any]:
        bias = _prompts().render("tool_injection", goal=self.spec.goal, arguments=bullet(self.spec.arguments))
        for agent_id in targets:
            system.agents[agent_id].tool_bias = bias
        return {}


class EmbeddingRetriever:
    """Top-k passages by cosine similarity (embeddings are L2-normalised)."""

    def __init__(self, documents: list[str], embedder: Embedder) -> None:
        if not documents:
            raise ConfigError("a retrieval store needs at least one document")
        self.documents = documents
        self.embedder = embedder
        self._matrix = embedder.embed(documents, "passage")

    def retrieve(self, query: str, k: int) -> list[str]:
        q = self.embedder.embed([query], "query")[0]
        scores = self._matrix @ q
        order = np.argsort(-scores, kind="stable")[:k]
        return [self.documents[i] for i in order]


@ATTACKS.register("rag", paper_name="RAG Poisoning")
class RAGPoisoning(Attack):
    """Every targeted worker's retrieval store holds each argument prefixed with the
    task's user input (so it ranks high for task queries); other workers get the clean
    store. The default point is `all`, as in the paper."""

    name = "rag"
    default_point = "all"

    def __init__(self, spec: AttackSpec) -> None:
        super().__init__(spec)
        if spec.embedder is None:
            raise ConfigError("RAG poisoning needs an embedder for the retrieval stores")

    @property
    def point(self) -> str:
        # `random` is the generic default of AttackSpec; RAG poisoning targets everyone
        # unless a point other than the default was asked for.
        return "all" if self.spec.point == "random" else self.spec.point

    def _apply(self, system: MultiAgentSystem, targets: list[str]) -> dict[str, Any]:
        assert self.spec.embedder is not None
        background = list(self.spec.background or default_background())
        poison = [f"{system.task.user_input} {argument}" for argument in self.spec.arguments]
        poisoned = EmbeddingRetriever(background + poison, self.spec.embedder)
        clean = EmbeddingRetriever(background, self.spec.embedder)
        for agent_id, agent in system.agents.items():
            agent.retriever = poisoned if agent_id in targets else clean
        return {"background_docs": len(background), "poisoned_docs": len(poison)}

    def describe(self) -> dict[str, Any]:
        embedder = self.spec.embedder.describe() if self.spec.embedder else None
        return {**super().describe(), "background_docs": len(self.spec.background) or "shipped", "embedder": embedder}


def build_attack(name: str, spec: AttackSpec) -> Attack | None:
    """`none` -> None; otherwise the registered attack built from `spec`."""
    if name == "none":
        return None
    return ATTACKS.build(name, spec)
