"""Request and response bodies of the HTTP API (they make its OpenAPI schema)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CheckRequest(_Body):
    """One text (`text`) or a batch (`texts`); exactly one of them."""

    text: str | None = None
    texts: list[str] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> CheckRequest:
        if (self.text is None) == (self.texts is None):
            raise ValueError("send exactly one of 'text' (a string) or 'texts' (a list of strings)")
        return self

    def items(self) -> list[str]:
        return [self.text] if self.text is not None else list(self.texts or [])


class EvidenceOut(BaseModel):
    text: str
    start: int = Field(description="Character offset of the evidence in the checked text.")
    end: int
    similarity: float


class CheckResult(BaseModel):
    """The claim guard's verdict on one text (`misguard check --output` rows, minus timing)."""

    index: int = Field(description="Position of the text in the request.")
    flagged: bool
    score: float = Field(description="Probability that the text repeats a known false claim.")
    matched_claim_id: str | None = None
    matched_claim_text: str | None = None
    matched_claim_verdict: str | None = None
    matched_claim_verdict_original: str | None = None
    matched_claim_url: str | None = None
    evidence: EvidenceOut | None = None
    language: str | None = None
    decided_by: str | None = None
    cached: bool = Field(False, description="Answered from the verdict cache (a repeated text).")


class CheckResponse(BaseModel):
    results: list[CheckResult]


class PageRequest(_Body):
    """A page to check: its HTML (or plain text), or a URL the service fetches when allowed."""

    html: str | None = None
    url: str | None = Field(None, description="Fetched only when the service allows it, public addresses only.")

    @model_validator(mode="after")
    def _one_of(self) -> PageRequest:
        if (self.html is None) == (self.url is None):
            raise ValueError("send exactly one of 'html' or 'url'")
        return self


class BlockResult(BaseModel):
    id: str
    text: str
    start: int = Field(description="Character offset of the block in the page's extracted text.")
    end: int
    result: CheckResult


class PageResponse(BaseModel):
    url: str | None = None
    blocks: list[BlockResult]
    flagged: int
    skipped_blocks: int = Field(0, description="Blocks beyond the service's per-page limit, not checked.")
    notifications: list[dict[str, Any]]
    discrepancies: list[str] = Field(description="The judge agent's audit of the detection (empty when consistent).")


class ClaimsPage(BaseModel):
    total: int
    offset: int
    claims: list[dict[str, Any]] = Field(description="schema.org ClaimReview JSON-LD objects.")


class IngestResult(BaseModel):
    added: int
    updated: int
    unchanged: int
    total: int


class DeleteResult(BaseModel):
    deleted: int
    total: int
