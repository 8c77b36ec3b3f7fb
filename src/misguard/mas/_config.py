"""How a multi-agent run is set up: the configuration and the backend of each role."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..llm import LLM

Role = Literal["planner", "worker", "concluder", "tool"]


class MASConfig(BaseModel):
    """How a multi-agent run is set up. Defaults follow the paper (5 rounds, memory 5)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    topology: str = "chain"
    """A name in `TOPOLOGIES` (`self` lets the planner decide) or `custom` with `edges`."""
    edges: tuple[tuple[str, str], ...] | None = None
    rounds: int = Field(5, ge=1, le=1000)
    memory_size: int = Field(5, ge=1)
    max_tool_calls: int = Field(2, ge=0, le=20)
    """Tool calls per worker turn before the worker must send its message."""
    retrieval_k: int = Field(5, ge=1)
    worker_max_tokens: int = Field(256, ge=16)
    tool_max_tokens: int = Field(160, ge=16)
    planner_max_tokens: int = Field(384, ge=16)
    concluder_max_tokens: int = Field(320, ge=16)
    concluder_log_chars: int = Field(6000, ge=200)
    """Budget of message text shown to the concluder; the NEWEST messages are kept."""
    message_chars: int = Field(1200, ge=50)
    """Longest message text a worker sends (longer text is cut, which is logged)."""
    seed: int = 0


@dataclass
class RoleLLMs:
    """One backend per role; any may be the same object."""

    worker: LLM
    planner: LLM | None = None
    concluder: LLM | None = None
    tool: LLM | None = None

    def for_role(self, role: Role) -> LLM:
        chosen = {"planner": self.planner, "concluder": self.concluder, "tool": self.tool}.get(role)
        return chosen or self.worker

    def describe(self) -> dict[str, Any]:
        roles: tuple[Role, ...] = ("planner", "worker", "concluder", "tool")
        return {
            role: {
                **self.for_role(role).describe(),
                # temperature, seed and token limit in force for this role's calls
                "options": self.for_role(role).default_options().model_dump(mode="json"),
            }
            for role in roles
        }
