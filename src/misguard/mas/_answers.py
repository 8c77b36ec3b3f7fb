"""What the planner and the workers answer with: lenient JSON schemas (small models drop
fields, invent casings and nest strings), read with `generate_json`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class WorkerAction(BaseModel):
    """The JSON a worker answers with each step (field names as in ARGUS)."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["use_tool", "send_message"]
    tool_name: str | None = None
    reply_prompt: str = ""
    sending_target: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _infer_type(cls, data: Any) -> Any:
        # Small models often drop "type" but fill the rest; infer it rather than re-ask.
        if isinstance(data, dict) and "type" not in data and data.get("reply_prompt"):
            return {**data, "type": "use_tool" if data.get("tool_name") else "send_message"}
        return data

    @field_validator("type", mode="before")
    @classmethod
    def _normalise_type(cls, value: Any) -> Any:
        text = str(value).strip().lower().replace("-", "_").replace(" ", "_")
        if "tool" in text:
            return "use_tool"
        if "send" in text or "message" in text:
            return "send_message"
        return value

    @field_validator("reply_prompt", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        return "" if value is None else value if isinstance(value, str) else str(value)

    @field_validator("tool_name", "sending_target", mode="before")
    @classmethod
    def _optional_str(cls, value: Any) -> Any:
        return None if value in (None, "", "null", "None") else str(value)


class PlanAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    subtasks: list[str] = Field(min_length=1)
    graph: dict[str, list[str]] | None = None

    @field_validator("subtasks", mode="before")
    @classmethod
    def _strings(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [v if isinstance(v, str) else str(v) for v in value]
        return value

    @field_validator("graph", mode="before")
    @classmethod
    def _adjacency(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return None
        return {str(k): [str(x) for x in (v if isinstance(v, list) else [v])] for k, v in value.items()}
