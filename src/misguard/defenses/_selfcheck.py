"""Self-Check baseline: every receiver verifies each incoming message with its own model
(the workers' backend) before using it. A message it judges unreliable is delivered with the
receiver's own note of the problems appended; reliable messages pass unchanged."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from ..config import SelfCheckSettings
from ..errors import LLMOutputError
from ..llm import LLM, MeteredLLM
from ..mas import DefenseContext, Interception, InterceptorAction, SystemView
from ..prompts import load_prompts
from ..types import EdgeMessage


class SelfCheckAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reliable: bool = True
    problems: str = ""

    @field_validator("reliable", mode="before")
    @classmethod
    def _bool(cls, value: Any) -> Any:
        if isinstance(value, str):
            return value.strip().lower() not in {"false", "no", "0", "n", "unreliable"}
        return bool(value)

    @field_validator("problems", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        if isinstance(value, list):
            return "; ".join(str(v) for v in value)
        return "" if value is None else str(value)


class SelfCheck:
    """The Self-Check interceptor (on every edge).

    Args:
        llm: the workers' backend (the receiving agent checks with its own model).
        params: `settings.defense.self_check`.
    """

    name = "self-check"

    def __init__(self, llm: LLM, params: SelfCheckSettings | None = None) -> None:
        self.llm = llm
        self.params = params or SelfCheckSettings()
        self.prompts = load_prompts("misguard.defenses", "self_check")

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "params": self.params.model_dump(mode="json"),
                "llm": self.llm.describe(), "prompts": self.prompts.ref}

    async def start_round(self, view: SystemView) -> None:
        return None

    async def intercept(self, message: EdgeMessage, view: SystemView) -> Interception:
        metered = MeteredLLM(self.llm)
        prompt = self.prompts.render("check", sender=message.sender, receiver=message.receiver, message=message.text)
        try:
            answer: SelfCheckAnswer = await metered.generate_json(
                prompt, schema=SelfCheckAnswer, reasks=1, max_tokens=self.params.max_tokens
            )
        except LLMOutputError as exc:
            return Interception(InterceptorAction.PASS, reason="self-check answer unusable; message left unchanged",
                                usage=metered.usage, details={"self_check_unusable": str(exc)[:200]})
        details = {"reliable": answer.reliable, "problems": answer.problems[:500]}
        if answer.reliable:
            return Interception(InterceptorAction.PASS, reason="receiver found it reliable", usage=metered.usage, details=details)
        text = self.prompts.render("note", message=message.text, problems=answer.problems.strip() or "")
        return Interception(InterceptorAction.REWRITE, text=text, reason="receiver doubts it", usage=metered.usage, details=details)


def build_self_check(context: DefenseContext, params: SelfCheckSettings) -> list[SelfCheck]:
    return [SelfCheck(context.llm("worker"), params)]
