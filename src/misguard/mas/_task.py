"""What the multi-agent system works on: a task with simulated tools."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ToolSpec(BaseModel):
    """A tool the agents may call; an LLM simulates it from this description."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool_name: str = Field(min_length=1)
    tool_description: str = ""
    tool_input: str = ""
    tool_output: str = ""


class Task(BaseModel):
    """The user's task as the runtime sees it (no attack or ground-truth fields)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    user_input: str = Field(min_length=1)
    agent_num: int = Field(ge=1, le=10_000)
    tools: tuple[ToolSpec, ...] = ()
    name: str = ""
