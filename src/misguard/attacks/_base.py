"""Attacks on a multi-agent system. An attack modifies the planned system's agents
(through the fields the runtime exposes: `injection`, `tool_bias`, `retriever`) before
the rounds start, and reports what it did. Attacks are registered by name in `ATTACKS`.

The injection point is `random` (one worker, seeded), `most_central` (the worker with the
highest betweenness centrality; ties go to the earlier agent), `all`, or an agent id.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ..embed import Embedder
from ..errors import ConfigError
from ..mas import MultiAgentSystem
from ..prompts import PromptSet, load_prompts
from ..registry import Registry


@dataclass(frozen=True)
class AttackSpec:
    """What an attack pushes and where.

    Attributes:
        goal: the false belief the attacker wants adopted (`misinfo_goal`).
        arguments: plausible but false arguments for it (`misinfo_argument`).
        point: `random`, `most_central`, `all` or an agent id like `agent_2`.
        background: clean passages for retrieval stores (RAG poisoning only).
        embedder: embeds retrieval stores (RAG poisoning only).
        seed: for the random injection point.
    """

    goal: str
    arguments: tuple[str, ...]
    point: str = "random"
    background: tuple[str, ...] = ()
    embedder: Embedder | None = None
    seed: int = 0


def choose_targets(system: MultiAgentSystem, point: str, seed: int) -> list[str]:
    """Resolve an injection point to worker ids on a planned system."""
    agents = system.agent_ids
    if point == "all":
        return list(agents)
    if point == "random":
        return [random.Random(f"attack:{seed}").choice(agents)]
    if point == "most_central":
        import networkx as nx

        centrality = nx.betweenness_centrality(system.graph, normalized=True)
        return [max(agents, key=lambda a: (centrality.get(a, 0.0), -agents.index(a)))]
    if point in agents:
        return [point]
    raise ConfigError(
        f"Unknown injection point {point!r}; use random, most_central, all or one of {agents}"
    )


def default_background() -> tuple[str, ...]:
    """The shipped clean corpus (passages written for misguard)."""
    text = resources.files("misguard.attacks").joinpath("data", "background.txt").read_text("utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


class Attack(ABC):
    """Base class: `apply` modifies a planned system and returns a JSON-able report."""

    name: str = ""
    default_point: str = "random"

    def __init__(self, spec: AttackSpec) -> None:
        if not spec.goal.strip() or not spec.arguments:
            raise ConfigError(f"attack {self.name!r} needs a goal and at least one argument")
        self.spec = spec

    @property
    def point(self) -> str:
        return self.spec.point or self.default_point

    def apply(self, system: MultiAgentSystem) -> dict[str, Any]:
        if not system.agents:
            raise ConfigError("apply an attack after system.plan(): there are no agents yet")
        targets = choose_targets(system, self.point, self.spec.seed)
        report = {"attack": self.name, "point": self.point, "targets": targets, **self._apply(system, targets)}
        system.log.add("attack", **report)
        return report

    @abstractmethod
    def _apply(self, system: MultiAgentSystem, targets: list[str]) -> dict[str, Any]: ...

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "point": self.point,
            "n_arguments": len(self.spec.arguments),
            "seed": self.spec.seed,
            "prompts": _prompts().ref,
        }


def _prompts() -> PromptSet:
    return load_prompts("misguard.attacks", "attacks")


def bullet(items: tuple[str, ...]) -> str:
    return "\n".join(f"- {item}" for item in items)


ATTACKS: Registry[Attack] = Registry("attack")
