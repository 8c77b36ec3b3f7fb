"""Core data types shared across misguard (pydantic v2)."""

from __future__ import annotations

import time
import uuid
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ChatMessage(Frozen):
    """One turn of a chat with an LLM."""

    role: Role
    content: str

    @classmethod
    def system(cls, content: str) -> ChatMessage:
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> ChatMessage:
        return cls(role="user", content=content)

    @classmethod
    def assistant(cls, content: str) -> ChatMessage:
        return cls(role="assistant", content=content)


class EdgeMessage(BaseModel):
    """A message from one agent to another along an edge of a multi-agent graph."""

    model_config = ConfigDict(extra="forbid")

    sender: str
    receiver: str
    round: int = Field(ge=0)
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    id: str = Field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def edge(self) -> tuple[str, str]:
        return (self.sender, self.receiver)


class VerdictLabel(str, Enum):
    """Publisher verdicts normalised to a small fixed set (the original is kept beside)."""

    FALSE = "false"
    MOSTLY_FALSE = "mostly-false"
    MIXED = "mixed"
    MOSTLY_TRUE = "mostly-true"
    TRUE = "true"
    UNPROVEN = "unproven"
    OTHER = "other"


class Claim(BaseModel):
    """A fact-checked claim."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    verdict: VerdictLabel
    verdict_original: str | None = None
    language: str = "en"  # ISO 639-1
    topic: str | None = None
    url: str | None = None
    publisher: str | None = None
    date: str | None = None  # ISO 8601 date when known


class Evidence(Frozen):
    """A span of the checked text and what it matched."""

    text: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    claim: Claim | None = None
    score: float | None = None


class Candidate(Frozen):
    """A stored claim a checked text may repeat, with its ranking score (higher = better;
    comparable within one verdict only)."""

    claim_id: str
    score: float


class Verdict(BaseModel):
    """The outcome of checking one text."""

    model_config = ConfigDict(extra="forbid")

    flagged: bool
    score: float
    label: VerdictLabel | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    language: str | None = None
    topics: list[str] = Field(default_factory=list)
    stages: list[str] = Field(default_factory=list)
    latency_s: float = 0.0
    decided_by: str = ""  # which decision path produced `flagged`, e.g. "offline", "llm-judge"
    candidates: list[Candidate] = Field(default_factory=list)  # top-k stored claims, best first


class Provenance(Frozen):
    agent: str
    time: float = Field(default_factory=time.time)
    channel: str = "direct"


class MemoryRecord(BaseModel):
    """An entry of shared agent memory, as in the memory-poisoning paper."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    state: str  # observed state
    context: str = ""  # triggering context
    action: str  # action or decision taken
    tags: list[str] = Field(default_factory=list)  # knowledge tags
    provenance: Provenance
    success: float | None = None
    reward: float | None = None
    confidence: float | None = None
    embedding: list[float] | None = None
    version: int = 1


class Usage(BaseModel):
    """Cost of one or many model calls."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached_calls: int = 0
    failed_calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage) -> None:
        for name in type(self).model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))
