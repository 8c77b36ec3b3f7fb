"""The paper's rectification agent: an LLM that checks a message sentence by sentence,
rewrites it persuasively, says whether it looks deliberate and, if so, infers the goal.

Answers are read leniently (small models write "Contradiction", "contradicts", "HIGH"); an
answer that stays unparseable after a re-ask is an `LLMOutputError` the caller logs as
`rectifier_unusable`, never a "clean" verdict. Backend failures propagate.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from ...errors import LLMOutputError
from ...llm import LLM, MeteredLLM
from ...prompts import PromptSet
from ...types import ChatMessage, EdgeMessage

#: Sentence checks the rectifier may return per message (the suspicious ones).
MAX_CHECKS = 3


def _boolish(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().lower() in {"true", "yes", "1", "y"}
    return bool(value) if value is not None else False


class SentenceCheck(BaseModel):
    """One suspicious sentence compared with the rectifier's knowledge and the evidence."""

    model_config = ConfigDict(extra="ignore")

    sentence: str = Field("", max_length=400)
    verdict: Literal["agreement", "contradiction", "uncertainty"] = "uncertainty"
    confidence: Literal["high", "medium", "low"] = "low"
    correction: str = Field("", max_length=400)

    @field_validator("verdict", "confidence", mode="before")
    @classmethod
    def _label(cls, value: Any, info: Any) -> Any:
        text = str(value or "").strip().lower()
        labels = ("agreement", "contradiction", "uncertainty") if info.field_name == "verdict" else ("high", "medium", "low")
        return next((label for label in labels if text.startswith(label[:5])), labels[-1])

    @field_validator("sentence", "correction", mode="before")
    @classmethod
    def _clip(cls, value: Any) -> Any:
        return "" if value is None else str(value)[:400]


class _Answer(BaseModel):
    """Lenient reading of the fields every rectifier answer has."""

    model_config = ConfigDict(extra="ignore")

    @field_validator("need_review", mode="before", check_fields=False)
    @classmethod
    def _bool(cls, value: Any) -> Any:
        return _boolish(value)

    @field_validator("revised_message", mode="before", check_fields=False)
    @classmethod
    def _text(cls, value: Any) -> Any:
        return "" if value is None else value if isinstance(value, str) else str(value)

    @field_validator("checks", mode="before", check_fields=False)
    @classmethod
    def _checks(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return []
        return [c if isinstance(c, dict) else {"sentence": str(c)} for c in value][:MAX_CHECKS]


class Rectification(_Answer):
    """The rectifier's answer. Field order is the decoding order under a JSON schema: the
    sentence checks (the chain of thought) come before the rewrite they justify, at most
    `MAX_CHECKS` of them, so that a small model's answer fits its token budget. The rewrite
    is required: a fragment of a cut-off answer must not read as "nothing to correct"."""

    checks: list[SentenceCheck] = Field(default_factory=list, max_length=MAX_CHECKS)
    revised_message: str
    need_review: bool = False


class DirectRectification(_Answer):
    """The rectifier's answer without the sentence-by-sentence analysis (ablation). Checks
    are not asked for (left out of the decoding schema), but read if a model adds some."""

    revised_message: str
    need_review: bool = False
    checks: SkipJsonSchema[list[SentenceCheck]] = Field(default_factory=list)


class InferredGoal(BaseModel):
    model_config = ConfigDict(extra="ignore")

    goal: str | None = None

    @field_validator("goal", mode="before")
    @classmethod
    def _goal(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and value.strip().lower() in {"", "null", "none", "unknown"}):
            return None
        return str(value).strip()


class Rectifier:
    """One conversation per message: the rewrite, then (if deliberate) the goal.

    Args:
        llm: the rectifier's backend; each message is metered on its own.
        prompts: ARGUS's prompt set (`prompts/argus.toml`).
        chain_of_thought: ask for the sentence checks before the rewrite.
        max_tokens: token limit of one answer.
    """

    def __init__(self, llm: LLM, prompts: PromptSet, *, chain_of_thought: bool = True, max_tokens: int = 400) -> None:
        self.llm = llm
        self.prompts = prompts
        self.chain_of_thought = chain_of_thought
        self.max_tokens = max_tokens

    def chat(self, message: EdgeMessage, goals: Sequence[str], evidence: Sequence[str]) -> list[ChatMessage]:
        render = self.prompts.render
        # The message is data between markers: the boundary depends on it, and markers inside
        # it are neutralised, so it cannot close its own block.
        boundary = hashlib.sha256(message.text.encode("utf-8")).hexdigest()[:12]
        data = message.text.replace("<<", "\u2039\u2039").replace(">>", "\u203a\u203a")
        return [
            ChatMessage.system(render("system")),
            ChatMessage.user(render(
                "rectify_cot" if self.chain_of_thought else "rectify_direct",
                sender=message.sender, receiver=message.receiver, message=data, boundary=boundary,
                goals=render("goals", goals="\n".join(f"- {g}" for g in goals)) if goals else "",
                evidence=render("evidence", evidence="\n".join(f"- {e}" for e in evidence)) if evidence else "",
            )),
        ]

    async def rectify(self, metered: MeteredLLM, chat: list[ChatMessage]) -> Rectification | DirectRectification:
        """The rewrite (raises `LLMOutputError` when the answer stays unusable)."""
        schema = Rectification if self.chain_of_thought else DirectRectification
        return await metered.generate_json(chat, schema=schema, reasks=1, max_tokens=self.max_tokens)

    async def infer_goal(
        self, metered: MeteredLLM, chat: list[ChatMessage], answer: Rectification | DirectRectification
    ) -> str | None:
        """The false belief the sender pushes, asked as a follow-up turn; None if unsure."""
        follow_up = [
            *chat,
            ChatMessage.assistant(answer.model_dump_json(include={"revised_message", "need_review"})),
            ChatMessage.user(self.prompts.render("infer_goal")),
        ]
        try:
            inferred: InferredGoal = await metered.generate_json(follow_up, schema=InferredGoal, reasks=1, max_tokens=80)
        except LLMOutputError:
            return None
        return inferred.goal
